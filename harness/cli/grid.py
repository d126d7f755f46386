"""`lifebench grid [SPEC] [flags]`: every installed method on every available benchmark's
headline split, each cell with its method's declared protocol (trials, arguments).

What is not given defaults to everything: `--method` to every installed method (plugins
included), `--benchmark` to every benchmark whose package and data are here, `--split` to
each benchmark's headline split. A cell that cannot run is refused with one line and its
reason, and the manifest keeps it: the grid table shows it as `×`. Every flag of
`lifebench run` applies; a spec of several parts (`[[part]]` tables) runs each in turn into
one results directory, as `lifebench run` does.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from lifebench import registry
from lifebench.api.errors import UserError
from lifebench.cli.base import SubCommand
from lifebench.cli.listing import unavailable
from lifebench.cli.run import add_part_argument, add_plan_arguments, run_parts
from lifebench.config.options import add_arguments
from lifebench.config.run import ExecutionConfig, RunConfig


class Grid(SubCommand):
    name = "grid"
    help = "every method on every benchmark, each with its paper's protocol (resumes)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("spec", nargs="?", help="a TOML spec file (e.g. specs/grid.toml); "
                                                    "flags override its values")
        add_part_argument(parser)
        add_arguments(parser, RunConfig)
        add_arguments(parser, ExecutionConfig)
        add_plan_arguments(parser)

    def run(self, args: argparse.Namespace) -> int:
        return run_parts(args, grid=True, complete=grid_config)


def grid_config(config: RunConfig) -> RunConfig:
    """`config` with what it leaves open filled in: every loadable method, every available
    benchmark (the others named on stderr with what is missing), each one's headline split."""
    methods = config.methods or tuple(_loadable_methods())
    benchmarks = config.benchmarks or tuple(_available_benchmarks())
    if not benchmarks:
        raise UserError("no benchmark is available here; `lifebench list benchmarks "
                        "--available` says what each one is missing")
    splits = config.splits or {b: (registry.get_benchmark(b).headline,) for b in benchmarks
                               if registry.get_benchmark(b).headline}
    return dataclasses.replace(config, methods=methods, benchmarks=benchmarks,
                               splits=splits).with_plugin_flags_merged()


def _loadable_methods() -> list[str]:
    out = []
    for name in registry.method_names():
        try:
            registry.method_class(name)
        except UserError as exc:  # one broken plugin must not stop the grid
            print(f"lifebench: skipping method {name}: {exc}", file=sys.stderr)
            continue
        out.append(name)
    return out


def _available_benchmarks() -> list[str]:
    out = []
    for name in registry.benchmark_names():
        reason = unavailable(name)
        if reason:
            print(f"lifebench: skipping {name}: {reason}", file=sys.stderr)
            continue
        out.append(name)
    return out
