"""Paired comparisons between the arms of a grid, with multiple-comparison correction.

An arm is a method (with its config) and model on a benchmark split and budget. lifebench
runs every arm on the same instances and seeds, so two arms are compared on matched
episodes: (instance, seed, trial), or (instance, seed) when the benchmark's protocol keeps
one trial per instance (ScienceWorld: the best). Matched: a paired t-test for numeric
metrics, McNemar's exact test for success; unmatched: Welch's t-test, Fisher's exact test.
The p-values of the whole grid are adjusted together (Holm by default, or
Benjamini-Hochberg).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass
from statistics import fmean
from typing import Any, Optional

from lifebench.api.errors import UserError
from lifebench.api.records import EpisodeRecord
from lifebench.api.stats import TestResult, adjust, fisher_exact, mcnemar_exact, paired_t, welch_t
from lifebench.leaderboard.grouping import arm_labels, grouped
from lifebench.leaderboard.plugins import grouped_trial_aggregation

BINARY_METRICS = ("success",)
NUMERIC_FIELDS = ("success", "score", "steps", "llm_calls", "tokens_in", "tokens_out", "wall_s",
                  "cost_usd", "success_step", "explore_steps")


def metric_value(record: EpisodeRecord, metric: str) -> Optional[float]:
    """A record's value of `metric`: a record field, or `extra.KEY` (numbers and booleans);
    None when the record has no such value."""
    if metric.startswith("extra.") or metric in NUMERIC_FIELDS:
        value = record.value(metric)
    else:
        raise UserError(f"unknown metric {metric!r}; use one of {', '.join(NUMERIC_FIELDS)} "
                        f"or extra.KEY (a numeric field of the records' extra)")
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and not math.isnan(value):
        return float(value)
    return None


def unit_key(record: EpisodeRecord, per_trial: bool) -> tuple:
    return (record.instance_id, record.seed, record.trial) if per_trial else (record.instance_id, record.seed)


def values_by_unit(records: list[EpisodeRecord], metric: str, per_trial: bool) -> dict[tuple, float]:
    out = {}
    for r in records:
        value = metric_value(r, metric)
        if value is not None:
            out[unit_key(r, per_trial)] = value
    return out


@dataclass
class Comparison:
    a: str
    b: str
    benchmark: str
    split: str
    budget: str
    metric: str
    test: str
    n: int
    mean_a: float
    mean_b: float
    diff: float
    statistic: float
    p: float
    p_adjusted: float = math.nan
    effect_size: float = math.nan
    paired: bool = True

    def to_json(self) -> dict[str, Any]:
        """JSON-safe: NaN and infinities become null."""
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                for k, v in asdict(self).items()}


def compare_values(a: dict[tuple, float], b: dict[tuple, float], binary: bool,
                   alternative: str = "two-sided") -> tuple[TestResult, float, float, bool]:
    """The test of arm a against arm b: (result, mean a, mean b, paired)."""
    matched = sorted(set(a) & set(b))
    if matched:
        xs, ys = [a[k] for k in matched], [b[k] for k in matched]
        result = mcnemar_exact([x > 0.5 for x in xs], [y > 0.5 for y in ys], alternative) if binary \
            else paired_t(xs, ys, alternative)
        return result, fmean(xs), fmean(ys), True
    xs, ys = list(a.values()), list(b.values())
    result = fisher_exact([x > 0.5 for x in xs], [y > 0.5 for y in ys], alternative) if binary \
        else welch_t(xs, ys, alternative)
    mean = lambda v: fmean(v) if v else math.nan  # noqa: E731
    return result, mean(xs), mean(ys), False


def compare(records: list[EpisodeRecord], metrics: list[str], correction: str = "holm",
            trials: Optional[str] = None) -> list[Comparison]:
    """Every pair of arms within every group, for every metric; p-values adjusted across
    the whole list."""
    out: list[Comparison] = []
    for group, arms in sorted(grouped(records, trials).items(), key=lambda kv: tuple(asdict(kv[0]).values())):
        per_trial = grouped_trial_aggregation(group.benchmark, [a.method for a in arms],
                                              trials) == "all"
        labels = arm_labels(arms)
        ordered = sorted(arms, key=lambda arm: labels[arm])
        for metric in metrics:
            values = {arm: values_by_unit(arms[arm], metric, per_trial) for arm in ordered}
            for first, second in itertools.combinations(ordered, 2):
                if not values[first] or not values[second]:
                    continue
                result, mean_a, mean_b, paired = compare_values(
                    values[first], values[second], metric in BINARY_METRICS)
                split = group.split + (f" [{group.benchmark_config_hash[:6]}]"
                                       if group.benchmark_config_hash else "")
                out.append(Comparison(
                    a=labels[first], b=labels[second], benchmark=group.benchmark, split=split,
                    budget=group.budget, metric=metric, test=result.test, n=result.n,
                    mean_a=mean_a, mean_b=mean_b, diff=mean_a - mean_b,
                    statistic=result.statistic, p=result.p, effect_size=result.effect_size,
                    paired=paired))
    for c, p in zip(out, adjust([c.p for c in out], correction)):
        c.p_adjusted = p
    return out


COLUMNS = ("benchmark", "split", "budget", "metric", "a", "b", "test", "n", "mean_a", "mean_b",
           "diff", "effect_size", "statistic", "p", "p_adjusted")


P_COLUMNS = ("p", "p_adjusted")


def format_p(p: float) -> str:
    """Every p-value in one format: three significant digits (1, 0.0312, 4.1e-07)."""
    return "—" if math.isnan(p) else f"{p:.3g}"


def comparison_rows(comparisons: list[Comparison]) -> tuple[list[str], list[list[str]]]:
    def fmt(column: str, value: Any) -> str:
        if column in P_COLUMNS:
            return format_p(value)
        if isinstance(value, float):
            if math.isnan(value):
                return "—"
            if math.isinf(value):
                # every paired difference is the same: t and d_z are infinite, the
                # difference itself (in diff) is exact
                return "constant difference"
            return f"{value:.3g}" if abs(value) < 1e-3 and value else f"{value:.4f}"
        return str(value)

    return list(COLUMNS), [[fmt(k, getattr(c, k)) for k in COLUMNS] for c in comparisons]
