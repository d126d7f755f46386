"""`lifebench compare DIR...`: paired tests between arms, corrected; or a two-way ANOVA."""

from __future__ import annotations

import argparse
import json
from typing import Any

from lifebench.api.errors import UserError
from lifebench.cli.base import (SubCommand, add_correction_argument, add_trials_argument,
                                results_inputs, write_output)
from lifebench.leaderboard.render import FORMATS, render


class Compare(SubCommand):
    name = "compare"
    help = "paired tests between the arms of results, corrected for multiple comparisons"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("dirs", nargs="+", help="results directories or submissions (.tar.gz)")
        parser.add_argument("--metric", action="append",
                            help="success (default), score, steps, ... or extra.KEY; repeatable")
        add_correction_argument(parser)
        parser.add_argument("--anova", metavar="FACTOR,FACTOR",
                            help="a two-way ANOVA over two factors instead (record fields or "
                                 "extra.KEY, e.g. extra.how2_strategy,extra.how2_teacher)")
        parser.add_argument("--where", action="append", default=[], metavar="FIELD=V1,V2",
                            help="only the records whose FIELD (a record field or extra.KEY) is "
                                 "one of the values; repeatable (e.g. to choose an ANOVA's subset)")
        parser.add_argument("--format", default="markdown", choices=["json", *FORMATS])
        parser.add_argument("--output", help="also write the result to this file")
        add_trials_argument(parser, "how trials count (default: the benchmark's protocol)")

    def run(self, args: argparse.Namespace) -> int:
        from lifebench.leaderboard.loading import load_nonempty, where

        with results_inputs(args.dirs) as dirs:
            records = where(load_nonempty(dirs), args.where)
        metrics = args.metric or ["success"]
        if args.anova:
            rows = self._anova(records, metrics, args)
            if args.format == "json":
                text = json.dumps(rows, indent=2)
            else:
                headers = list(rows[0])
                text = render(headers, [[_cell(row[h]) for h in headers] for row in rows], args.format)
        else:
            from lifebench.leaderboard.compare import compared, comparison_rows

            comparisons, notes = compared(records, metrics, correction=args.correction,
                                          trials=args.trials)
            if not comparisons:
                raise UserError("nothing to compare: each benchmark split holds results of one arm "
                                "only (compare needs two methods, configs or models on it)")
            if args.format == "json":
                text = json.dumps([c.to_json() for c in comparisons], indent=2)
            else:
                headers, rows = comparison_rows(comparisons)
                text = render(headers, rows, args.format)
                if args.format != "csv":  # a CSV file holds the table alone
                    text += "".join(f"\nnote: {note}" for note in notes)
        write_output(args.output, text)
        print(text)
        return 0

    @staticmethod
    def _anova(records: list, metrics: list[str], args: argparse.Namespace) -> list[dict[str, Any]]:
        from lifebench.leaderboard.anova import two_way_anova

        factors = [f.strip() for f in args.anova.split(",") if f.strip()]
        if len(factors) != 2:
            raise UserError(f"--anova takes two factors, e.g. extra.how2_strategy,"
                            f"extra.how2_teacher; got {args.anova!r}")
        rows = [row for m in metrics
                for row in two_way_anova(records, m, (factors[0], factors[1]), args.trials)]
        if not rows:
            raise UserError(f"no group has at least two levels of both {factors[0]} and {factors[1]}")
        return rows


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "—" if value is None else str(value)
