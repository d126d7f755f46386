"""`lifebench run [SPEC] [flags]`: run a grid; resumes into an existing results directory.

Every flag comes from the options of `RunConfig` and `ExecutionConfig`; a spec file's
values come first, flags override them.
"""

from __future__ import annotations

import argparse
import sys

from lifebench.cli.base import EXIT_INCOMPLETE, SubCommand
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

    def run(self, args: argparse.Namespace) -> int:
        file_values = load_spec_file(args.spec) if args.spec else {}
        config = RunConfig.from_sources(file_values, args)
        execution = from_sources(ExecutionConfig, file_values, args)
        return execute_and_report(config, execution)


def execute_and_report(config: RunConfig, execution: ExecutionConfig, grid: bool = False) -> int:
    """Run, print the summary line (and what is left to retry): the exit code."""
    outcome = execute(config, execution, grid)
    print(summary_line(outcome, results_dir(config, execution)))
    hint = failure_hint(outcome)
    if hint:
        print(f"error: {hint}", file=sys.stderr)
        return EXIT_INCOMPLETE
    return 0
