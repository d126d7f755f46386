"""`lifebench check --baseline DIR --candidate DIR`: exit 1 when the candidate is worse."""

from __future__ import annotations

import argparse
from typing import Optional

from lifebench.api.errors import UserError
from lifebench.cli.base import EXIT_INCOMPLETE, SubCommand, add_correction_argument, results_inputs


class Check(SubCommand):
    name = "check"
    help = "exit 1 when a candidate run is significantly worse than a baseline"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--baseline", required=True, nargs="+", metavar="DIR",
                            help="results directory (or submission) of the baseline; several "
                                 "are read as one")
        parser.add_argument("--candidate", required=True, nargs="+", metavar="DIR",
                            help="results directory (or submission) of the candidate; several "
                                 "are read as one")
        parser.add_argument("--alpha", default="0.05", help="significance level (default 0.05)")
        parser.add_argument("--metric", action="append", help="metrics (default: success and score)")
        parser.add_argument("--spec", help="the spec file both runs ran: its [check] table sets "
                                           "`exact` and the `thresholds` (see docs/regression-check.md)")
        parser.add_argument("--exact", action="store_true",
                            help="both runs played one deterministic model (the scripted model): "
                                 "also compare calls and tokens exactly, per role and trial")
        add_correction_argument(parser)

    def run(self, args: argparse.Namespace) -> int:
        from lifebench.leaderboard.check import DEFAULT_METRICS, regression_check
        from lifebench.leaderboard.loading import load_nonempty

        given = len(args.baseline)
        with results_inputs([*args.baseline, *args.candidate]) as paths:
            baseline_records = load_nonempty(paths[:given])
            candidate_records = load_nonempty(paths[given:])
        report = regression_check(baseline_records, candidate_records,
                                  metrics=tuple(args.metric or DEFAULT_METRICS),
                                  alpha=_alpha(args.alpha), correction=args.correction,
                                  exact_thresholds=_exact_thresholds(args))
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


def _exact_thresholds(args: argparse.Namespace) -> Optional[dict[str, float]]:
    """The exact comparison's thresholds, or None when it is not asked for."""
    from lifebench.config.run import spec_check_table
    from lifebench.leaderboard.exact import check_thresholds

    table = spec_check_table(args.spec) if args.spec else {}
    unknown = sorted(set(table) - {"exact", "thresholds"})
    if unknown:
        raise UserError(f"{args.spec}: unknown key {unknown[0]!r} in [check]; it takes exact and "
                        f"thresholds")
    if not (args.exact or table.get("exact") is True):
        return None
    try:
        return check_thresholds(table.get("thresholds", {}), args.spec or "--exact")
    except ValueError as exc:
        raise UserError(str(exc)) from None
