"""Two-way ANOVA over a factor grid (e.g. How²'s strategy × teacher), through statsmodels.

Factors are record fields (`method`, `model`, `budget_steps`, ...) or `extra.KEY`. Each
(benchmark, split, budget) group with at least two levels of each factor gets a table:
main effects and their interaction (type II sums of squares), on episode-level values.
"""

from __future__ import annotations

import math
from typing import Any

from lifebench.api.errors import UserError
from lifebench.api.records import EpisodeRecord
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
    import pandas as pd
    from statsmodels.formula.api import ols
    from statsmodels.stats.anova import anova_lm

    first, second = factors
    out = []
    for group, arms in grouped(records, trials).items():
        rows = []
        for arm_records in arms.values():
            for r in arm_records:
                value = metric_value(r, metric)
                a, b = factor_value(r, first), factor_value(r, second)
                if value is not None and a is not None and b is not None:
                    rows.append({"y": value, "a": str(a), "b": str(b)})
        frame = pd.DataFrame(rows)
        if frame.empty or frame["a"].nunique() < 2 or frame["b"].nunique() < 2:
            continue
        model = ols("y ~ C(a) * C(b)", data=frame).fit()
        table = anova_lm(model, typ=2)
        names = {"C(a)": first, "C(b)": second, "C(a):C(b)": f"{first} × {second}",
                 "Residual": "residual"}
        for term, row in table.iterrows():
            out.append({"benchmark": group.benchmark, "split": group.split, "budget": group.budget,
                        "metric": metric, "term": names.get(str(term), str(term)),
                        "df": float(row["df"]), "sum_sq": float(row["sum_sq"]),
                        "F": None if math.isnan(row["F"]) else float(row["F"]),
                        "p": None if math.isnan(row["PR(>F)"]) else float(row["PR(>F)"]),
                        "n": len(frame)})
    return out
