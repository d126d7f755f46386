"""`lifebench run [SPEC] [flags]`: run a grid; resumes into an existing results directory.

Every flag comes from the options of `RunConfig` and `ExecutionConfig`; a spec file's
values come first, flags override them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lifebench.api.errors import UserError
from lifebench.cli.base import EXIT_INCOMPLETE, SubCommand
from lifebench.cli.doctor import DEFAULT_PROFILE
from lifebench.config.options import add_arguments, from_sources
from lifebench.config.run import ExecutionConfig, RunConfig, load_spec_file
from lifebench.runner.run import execute, failure_hint, results_dir, summary_line


class Run(SubCommand):
    name = "run"
    help = "run methods on benchmarks (resumes into an existing --out)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("spec", nargs="?", help="a TOML spec file; flags override its values")
        add_arguments(parser, RunConfig)
        add_arguments(parser, ExecutionConfig)
        add_plan_arguments(parser)

    def run(self, args: argparse.Namespace) -> int:
        file_values = load_spec_file(args.spec) if args.spec else {}
        config = RunConfig.from_sources(file_values, args)
        execution = from_sources(ExecutionConfig, file_values, args)
        return execute_and_report(config, execution, args)


def add_plan_arguments(parser: argparse.ArgumentParser) -> None:
    plan = parser.add_argument_group("planning (--plan: nothing is sent to the endpoint)")
    plan.add_argument("--plan", action="store_true", help="print what the run would cost "
                      "(episodes, LLM calls, tokens, hours, USD with --prices, the smallest "
                      "detectable difference) and write it to OUT/plan.json; run nothing")
    plan.add_argument("--tokens-per-s", type=_positive, metavar="N",
                      help="the server's throughput, for --plan's hours")
    plan.add_argument("--server-profile", metavar="FILE", help="the profile `lifebench doctor` "
                      f"wrote, for --plan's hours and tool calling (default: {DEFAULT_PROFILE} "
                      "when it is this model's at this endpoint)")
    plan.add_argument("--assumed-correlation", type=_fraction, default=0.5, metavar="R",
                      help="between two methods' outcomes on one instance, for --plan's "
                           "minimum detectable difference (default 0.5)")
    plan.add_argument("--plan-timeout", type=_positive, default=120.0, metavar="S",
                      help="seconds each probe episode may take (default 120)")
    plan.add_argument("--tokenizer", metavar="FILE", help="the model's tokenizer.json, for "
                      "--plan's token counts (default: 4 characters a token)")


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be positive")
    return value


def _fraction(text: str) -> float:
    value = _positive(text) if text.strip() not in ("0", "0.0") else 0.0
    if value >= 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be from 0 to below 1")
    return value


def execute_and_report(config: RunConfig, execution: ExecutionConfig, args: argparse.Namespace,
                       grid: bool = False) -> int:
    """Run (or plan, with --plan), print the summary line (and what is left to retry): the
    exit code."""
    if args.plan:
        return _plan(config, execution, args, grid)
    outcome = execute(config, execution, grid)
    print(summary_line(outcome, results_dir(config, execution)))
    hint = failure_hint(outcome)
    if hint:
        print(f"error: {hint}", file=sys.stderr)
        return EXIT_INCOMPLETE
    return 0


def _plan(config: RunConfig, execution: ExecutionConfig, args: argparse.Namespace,
          grid: bool) -> int:
    from lifebench.planning.plan import Throughput, plan_lines, plan_run, read_profile

    throughput, profile = Throughput(), None
    path = args.server_profile
    if path is None and Path(DEFAULT_PROFILE).is_file():
        found, data = read_profile(DEFAULT_PROFILE)
        if (data.get("model"), data.get("base_url")) == (config.model, config.llm.base_url):
            path, throughput, profile = DEFAULT_PROFILE, found, data
    elif path is not None:
        throughput, profile = read_profile(path)
    if args.tokens_per_s:
        throughput = Throughput(tokens_per_s=args.tokens_per_s,
                                source=f"{args.tokens_per_s:g} tokens/s (--tokens-per-s)")
    plan = plan_run(config, execution, grid, throughput, profile, args.assumed_correlation,
                    args.plan_timeout, args.tokenizer)
    print("\n".join(plan_lines(plan)))
    out = results_dir(config, execution) / "plan.json"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(plan.to_json() + "\n")
    except OSError as exc:
        raise UserError(f"cannot write {out}: {exc.strerror}; give another --out") from None
    print(f"plan written to {out} (nothing was sent to {config.llm.base_url or 'any endpoint'})")
    return 0
