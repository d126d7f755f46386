"""`lifebench check --baseline DIR --candidate DIR`: exit 1 when the candidate is worse."""

from __future__ import annotations

import argparse

from lifebench.api.errors import UserError
from lifebench.cli.base import EXIT_INCOMPLETE, SubCommand, add_correction_argument, results_inputs


class Check(SubCommand):
    name = "check"
    help = "exit 1 when a candidate run is significantly worse than a baseline"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--baseline", required=True, help="results directory (or submission) of the baseline")
        parser.add_argument("--candidate", required=True, help="results directory (or submission) of the candidate")
        parser.add_argument("--alpha", default="0.05", help="significance level (default 0.05)")
        parser.add_argument("--metric", action="append", help="metrics (default: success and score)")
        add_correction_argument(parser)

    def run(self, args: argparse.Namespace) -> int:
        from lifebench.leaderboard.check import DEFAULT_METRICS, regression_check
        from lifebench.leaderboard.loading import load_nonempty

        with results_inputs([args.baseline, args.candidate]) as (baseline, candidate):
            baseline_records, candidate_records = load_nonempty([baseline]), load_nonempty([candidate])
        report = regression_check(baseline_records, candidate_records,
                                  metrics=tuple(args.metric or DEFAULT_METRICS),
                                  alpha=_alpha(args.alpha), correction=args.correction)
        print("\n".join(report.lines()))
        return EXIT_INCOMPLETE if report.failed else 0


def _alpha(text: str) -> float:
    try:
        alpha = float(text)
    except ValueError:
        raise UserError(f"--alpha {text!r} is not a number") from None
    if not 0 < alpha < 1:
        raise UserError(f"--alpha must be between 0 and 1, got {alpha}")
    return alpha
