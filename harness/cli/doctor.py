"""`lifebench doctor --model M --base-url U`: check an endpoint before a run."""

from __future__ import annotations

import argparse
from pathlib import Path

from lifebench.api.errors import UserError
from lifebench.cli.base import EXIT_INCOMPLETE, SubCommand
from lifebench.config.options import add_arguments, from_sources
from lifebench.config.run import LLMConfig

DEFAULT_PROFILE = "results/endpoint-profile.json"


class Doctor(SubCommand):
    name = "doctor"
    help = "check an LLM endpoint in seconds: reachable, model served, context window, tools, seed, reasoning, speed"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--model", required=True, help="the model name to check")
        add_arguments(parser, LLMConfig)
        parser.add_argument("--profile", default=DEFAULT_PROFILE,
                            help=f"where to write what was measured, for `lifebench grid --plan` "
                                 f"(default {DEFAULT_PROFILE})")

    def run(self, args: argparse.Namespace) -> int:
        from lifebench.llm.doctor import advice, diagnose, report
        from lifebench.leaderboard.render import render

        config = from_sources(LLMConfig, None, args)
        if not config.base_url:
            raise UserError("give --base-url, e.g. http://localhost:8000/v1")
        profile = diagnose(args.model, config)
        print(render(["check", "result"], [list(row) for row in report(profile)], "markdown"))
        for line in profile.problems:
            print(f"problem: {line}")
        for line in advice(profile):
            print(f"advice: {line}")
        path = Path(args.profile)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(profile.to_json() + "\n")
        except OSError as exc:
            raise UserError(f"cannot write the profile {path}: {exc.strerror}; give another "
                            f"--profile") from None
        print(f"wrote {path}")
        usable = profile.reachable and profile.served is not False and profile.answers
        return 0 if usable else EXIT_INCOMPLETE
