"""Two-way ANOVA over a factor grid (e.g. How²'s strategy × teacher), through statsmodels.

Factors are record fields (`method`, `model`, `budget_steps`, ...) or `extra.KEY`. Each
(benchmark, split, budget) group with at least two levels of each factor gets a table:
main effects and their interaction (type II sums of squares), on episode-level values.
"""

from __future__ import annotations

from typing import Any

from lifebench.api.errors import UserError
from lifebench.api.records import EpisodeRecord
from lifebench.api.stats import two_way_anova as anova
from lifebench.leaderboard.compare import metric_value
from lifebench.leaderboard.grouping import grouped


def factor_value(record: EpisodeRecord, factor: str) -> Any:
    if factor.startswith("extra."):
        return record.value(factor)
    if not hasattr(record, factor):
        raise UserError(f"unknown factor {factor!r}: use a record field (method, model, "
                        f"budget_steps, ...) or extra.KEY")
    return getattr(record, factor)


def two_way_anova(records: list[EpisodeRecord], metric: str, factors: tuple[str, str],
                  trials: str | None = None) -> list[dict[str, Any]]:
    first, second = factors
    out = []
    for group, arms in grouped(records, trials).items():
        values, levels_a, levels_b = [], [], []
        for arm_records in arms.values():
            for r in arm_records:
                value = metric_value(r, metric)
                a, b = factor_value(r, first), factor_value(r, second)
                if value is not None and a is not None and b is not None:
                    values.append(value)
                    levels_a.append(str(a))
                    levels_b.append(str(b))
        if len(set(levels_a)) < 2 or len(set(levels_b)) < 2:
            continue
        names = {"a": first, "b": second, "a:b": f"{first} × {second}"}
        for row in anova(values, levels_a, levels_b):
            out.append({"benchmark": group.benchmark, "split": group.split, "budget": group.budget,
                        "metric": metric, **row, "term": names.get(row["term"], row["term"]),
                        "n": len(values)})
    return out
