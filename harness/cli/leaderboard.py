"""`lifebench leaderboard DIR...`: the tables (and figures) of one or more results directories."""

from __future__ import annotations

import argparse
from pathlib import Path

from lifebench.cli.base import (SubCommand, add_baseline_argument, add_trials_argument,
                                results_inputs, write_output)
from lifebench.leaderboard.render import FORMATS


class Leaderboard(SubCommand):
    name = "leaderboard"
    help = "tables from one or more results directories"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("dirs", nargs="+", help="results directories or submissions (.tar.gz)")
        parser.add_argument("--format", default="markdown", choices=list(FORMATS))
        parser.add_argument("--output", help="also write the table to this file")
        add_trials_argument(parser, "how an instance's trials count: every episode, or one per "
                                    "instance and seed (default: the benchmark's protocol; "
                                    "ScienceWorld: max)")
        add_baseline_argument(parser)
        parser.add_argument("--plots", help="write figures (PNG, SVG) into this directory "
                                            "(default: beside --output)")
        parser.add_argument("--no-plots", action="store_true", help="no figures")

    def run(self, args: argparse.Namespace) -> int:
        from lifebench.leaderboard.report import leaderboard_report

        plots = args.plots or (str(Path(args.output).parent) if args.output else None)
        with results_inputs(args.dirs) as dirs:
            text = leaderboard_report(dirs, fmt=args.format, trials=args.trials,
                                      plots=None if args.no_plots else plots,
                                      baseline=args.baseline)
        write_output(args.output, text)
        print(text)
        return 0
