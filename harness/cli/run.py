"""`lifebench run [SPEC] [flags]`: run a grid; resumes into an existing results directory.

Every flag comes from the options of `RunConfig` and `ExecutionConfig`; a spec file's
values come first, flags override them. A spec of several parts (`[[part]]` tables) runs
each part in turn into one results directory, the flags laid over every part; `--part`
names the ones to run.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any, Callable, Optional

from lifebench.api.errors import UserError
from lifebench.cli.base import EXIT_INCOMPLETE, SubCommand
from lifebench.cli.doctor import DEFAULT_PROFILE
from lifebench import registry
from lifebench.llm.doctor import probe_tools, profile_of
from lifebench.store.results import read_manifest_runs
from lifebench.config.options import add_arguments, from_sources
from lifebench.config.run import PARTS_TABLE, ExecutionConfig, RunConfig, spec_parts
from lifebench.runner.run import execute, failure_hint, results_dir, summary_line
from lifebench.runner.streams import validate


class Run(SubCommand):
    name = "run"
    help = "run methods on benchmarks (resumes into an existing --out)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("spec", nargs="?", help="a TOML spec file; flags override its values")
        add_part_argument(parser)
        add_arguments(parser, RunConfig)
        add_arguments(parser, ExecutionConfig)
        add_plan_arguments(parser)

    def run(self, args: argparse.Namespace) -> int:
        return run_parts(args)


def _served_name(config: RunConfig, args: argparse.Namespace) -> RunConfig:
    """`config` with its model named as the endpoint serves it (Ollama's `name:latest` for a
    bare `name`), said in one line; unchanged where nothing is sent (a plan without a pilot,
    a replay)."""
    from lifebench.llm.models import served_name

    sends = not args.plan or args.pilot is not None
    if not (config.model and config.llm.base_url and sends and config.llm.cache != "replay"):
        return config
    name, line = served_name(config.model, config.llm)
    if line:
        print(line, file=sys.stderr)
    return dataclasses.replace(config, model=name) if name != config.model else config


def add_part_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--part", metavar="NAME[,NAME]", help=f"of a spec with "
                        f"[[{PARTS_TABLE}]] tables, run only these parts (default: all, "
                        f"in file order)")


def run_parts(args: argparse.Namespace, grid: bool = False,
              complete: Callable[[RunConfig], RunConfig] = lambda config: config) -> int:
    """Run `args.spec` (each of its parts in turn, into one results directory) with the
    flags laid over it; `complete` fills in what a config leaves open (the grid's
    defaults); `grid`: cells that cannot run are refused, not errors. The worst exit code."""
    parts = chosen_parts(spec_parts(args.spec) if args.spec else [("", {})], args.part)
    runs = [(name, complete(RunConfig.from_sources(values, args)),
             from_sources(ExecutionConfig, values, args), values) for name, values in parts]
    if len(runs) > 1:  # every part checked before any runs
        for _, config, _, _ in runs:
            validate(config)
    out = runs[0][2].out or str(results_dir(runs[0][1], runs[0][2]))
    code = 0
    for name, config, execution, values in runs:
        if name:
            print(f"part {name}", file=sys.stderr)
            execution = dataclasses.replace(execution, out=execution.out or out)
        config = _served_name(config, args)
        config, decision = tool_protocol(config, values, args, execution)
        code = max(code, execute_and_report(config, execution, args, grid=grid,
                                            plan_name=f"plan.{name}.json" if name else "plan.json",
                                            tool_decision=decision))
    return code


TOOL_PROTOCOL_DEST = "llm__tool_protocol"  # the flag's namespace attribute (None: not given)


def tool_protocol(config: RunConfig, values: dict, args: argparse.Namespace,
                  execution: ExecutionConfig) -> tuple[RunConfig, Optional[dict[str, Any]]]:
    """The config with its tool protocol decided before the first episode, and the decision
    for the manifest (None where nothing was decided). When a method offers tools and no
    protocol was chosen (`--llm-tool-protocol`, a spec's `llm_tool_protocol`), in order: the
    doctor's profile of this model at this endpoint (`lifebench doctor`); the decision an
    earlier run into the same --out recorded (a resumed run keeps it); else one tiny probe
    offering a tool (not under --plan without --pilot, --cache replay or --no-probe). A
    server without tool calling makes those methods describe their tools in the prompt (the
    text protocol), said in one line; the protocol is part of their streams' identity, so
    their records never pool with native ones."""
    chosen = "llm_tool_protocol" in values or getattr(args, TOOL_PROTOCOL_DEST, None) is not None
    if chosen or config.llm.tool_protocol != "native" or not _offers_tools(config) \
            or not config.model or not config.llm.base_url:
        return config, None
    decision = _decided(config, execution)
    # a plan sends nothing to the endpoint, but its pilot plays there as the run will
    sends = not args.plan or args.pilot is not None
    if decision is None and sends and execution.probe and config.llm.cache != "replay":
        key = (config.model, config.llm.base_url)
        if key not in _PROBED:  # once per process: the parts of a spec share it
            _PROBED[key] = probe_tools(config.model, config.llm)
        probe = _PROBED[key]
        decision = {"protocol": "text" if probe.tools is False else "native",
                    "source": "probe", "probe": probe.manifest()}
        if probe.tools is None:
            print(f"note: {config.llm.base_url} did not say whether it does tool calling "
                  f"({probe.answer[:120] or probe.status}): methods that offer tools use it; "
                  f"give --llm-tool-protocol text if it has none", file=sys.stderr)
    if decision is None:
        return config, None
    if decision["protocol"] == "text":
        print(f"note: {config.model} at {config.llm.base_url} does no tool calling "
              f"({decision['source']}): methods that offer tools use --llm-tool-protocol text",
              file=sys.stderr)
        config = dataclasses.replace(config, llm=dataclasses.replace(config.llm, tool_protocol="text"))
    return config, decision


_PROBED: dict[tuple[str, str], Any] = {}


def _offers_tools(config: RunConfig) -> bool:
    return any(registry.method_class(m).needs.tools for m in config.methods)


def _decided(config: RunConfig, execution: ExecutionConfig) -> Optional[dict[str, Any]]:
    """A decision already made: the doctor's profile, or an earlier run into --out."""
    profile = profile_of(DEFAULT_PROFILE, config.model, config.llm.base_url)
    if profile and isinstance(profile.get("tools"), bool):
        return {"protocol": "native" if profile["tools"] else "text", "source": DEFAULT_PROFILE}
    try:
        runs = read_manifest_runs(results_dir(config, execution))
    except ValueError:
        return None
    for run in reversed(runs):
        spec = run.get("spec") if isinstance(run.get("spec"), dict) else {}
        llm = spec.get("llm") if isinstance(spec.get("llm"), dict) else {}
        endpoint = run.get("llm_endpoint") if isinstance(run.get("llm_endpoint"), dict) else {}
        earlier = endpoint.get("tool_calling")
        if (spec.get("model"), llm.get("base_url")) == (config.model, config.llm.base_url) \
                and isinstance(earlier, dict) and earlier.get("protocol") in ("native", "text"):
            return {**earlier, "source": f"an earlier run into this --out ({earlier.get('source')})"}
    return None


def chosen_parts(parts: list, wanted: "str | None") -> list:
    """The parts `--part` names (all when it names none), in file order."""
    if not wanted:
        return parts
    names = [n.strip() for n in wanted.split(",") if n.strip()]
    known = [name for name, _ in parts if name]
    for name in names:
        if name not in known:
            raise UserError(f"--part {name!r}: " + (f"the spec's parts are {', '.join(known)}"
                            if known else f"the spec has no [[{PARTS_TABLE}]] tables"))
    return [(name, values) for name, values in parts if name in names]


def add_plan_arguments(parser: argparse.ArgumentParser) -> None:
    plan = parser.add_argument_group("planning (--plan: nothing is sent to the endpoint "
                                     "unless a --pilot is asked for)")
    plan.add_argument("--plan", action="store_true", help="print what the run would cost "
                      "(episodes, LLM calls, tokens, hours, USD with --prices, the smallest "
                      "detectable difference) and write it to OUT/plan.json; run nothing")
    plan.add_argument("--pilot", type=int, metavar="N", help="with --plan: play the first N "
                      "instances of every cell on the endpoint (real results, kept in OUT: the "
                      "run resumes them) and extrapolate from them with a 90%% interval")
    plan.add_argument("--pilot-full-preparation", action="store_true", help="prepare at full "
                      "scale in the pilot (default: at smoke scale, priced up to full scale)")
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
                       grid: bool = False, plan_name: str = "plan.json",
                       tool_decision: Optional[dict[str, Any]] = None) -> int:
    """Run (or plan, with --plan, into OUT/`plan_name`), print the summary line (and what
    is left to retry): the exit code."""
    from lifebench.planning.pilot import check_pilot

    check_pilot(config, args.pilot, args.pilot_full_preparation, args.plan)
    if args.plan:
        return _plan(config, execution, args, grid, plan_name, tool_decision)
    outcome = execute(config, execution, grid, tool_decision)
    print(summary_line(outcome, results_dir(config, execution)))
    hint = failure_hint(outcome)
    if hint:
        print(f"error: {hint}", file=sys.stderr)
        return EXIT_INCOMPLETE
    return 0


def _plan(config: RunConfig, execution: ExecutionConfig, args: argparse.Namespace,
          grid: bool, plan_name: str, tool_decision: Optional[dict[str, Any]]) -> int:
    from lifebench.planning.cells import Throughput
    from lifebench.planning.pilot import PilotOptions
    from lifebench.planning.plan import plan_run, read_profile
    from lifebench.planning.report import plan_lines

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
    pilot = PilotOptions(args.pilot, args.pilot_full_preparation, tool_decision) \
        if args.pilot is not None else None
    plan = plan_run(config, execution, grid, throughput, profile, args.assumed_correlation,
                    args.plan_timeout, args.tokenizer, pilot)
    print("\n".join(plan_lines(plan)))
    out = results_dir(config, execution) / plan_name
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(plan.to_json() + "\n")
    except OSError as exc:
        raise UserError(f"cannot write {out}: {exc.strerror}; give another --out") from None
    sent = f"the pilot's episodes are in {out.parent}" if pilot is not None else \
        f"nothing was sent to {config.llm.base_url or 'any endpoint'}"
    print(f"plan written to {out} ({sent})")
    return 0
