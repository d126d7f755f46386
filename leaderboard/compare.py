"""Paired comparisons between the arms of a grid, with multiple-comparison correction.

An arm is a method (with its config) and model on a benchmark split and budget. lifebench
runs every arm on the same instances and seeds, and the instance is the unit of every
comparison (`lifebench.api.comparison`): trials scored as the protocol says, seeds
averaged within an instance, then the arms paired over instances. Matched: McNemar's
exact test where each instance has one binary outcome per arm, else the sign-flip
permutation test; unmatched: Fisher's exact test, else the two-sample permutation test.
The p-values of the whole grid are adjusted together (Holm by default, or
Benjamini-Hochberg).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass
from typing import Any, Optional

from lifebench.api.comparison import (InstanceSample, agreement_note, compare_arms, n_label,
                                      records_sample)
from lifebench.api.errors import UserError
from lifebench.api.records import EpisodeRecord
from lifebench.api.stats import adjust
from lifebench.leaderboard.grouping import arm_labels, grouped

BINARY_METRICS = ("success",)
NUMERIC_FIELDS = ("success", "score", "steps", "llm_calls", "tokens_in", "tokens_out", "wall_s",
                  "cost_usd", "success_step", "explore_steps")


def metric_value(record: EpisodeRecord, metric: str) -> Optional[float]:
    """A record's value of `metric`: a record field, or `extra.KEY` (numbers and booleans);
    None when the record has no such value."""
    if metric in NUMERIC_FIELDS:
        value = getattr(record, metric)
    elif metric.startswith("extra."):
        value = record.value(metric)
    else:
        raise UserError(f"unknown metric {metric!r}; use one of {', '.join(NUMERIC_FIELDS)} "
                        f"or extra.KEY (a numeric field of the records' extra)")
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and not math.isnan(value):
        return float(value)
    return None


def sample_of(records: list[EpisodeRecord], metric: str) -> InstanceSample:
    """An arm's (trial-scored) records as its per-instance values of `metric`."""
    return records_sample(records, lambda r: metric_value(r, metric))


@dataclass
class Comparison:
    a: str
    b: str
    benchmark: str
    split: str
    budget: str
    metric: str
    test: str
    n: int  # instances (paired: both arms'; unpaired: a's and b's together)
    mean_a: float
    mean_b: float
    diff: float
    statistic: float
    p: float
    p_adjusted: float = math.nan
    effect_size: float = math.nan
    paired: bool = True
    results_a: int = 0  # the results behind n: episodes, or trials where each counts
    results_b: int = 0

    def to_json(self) -> dict[str, Any]:
        """JSON-safe: NaN and infinities become null."""
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                for k, v in asdict(self).items()}


def compare(records: list[EpisodeRecord], metrics: list[str], correction: str = "holm",
            trials: Optional[str] = None) -> list[Comparison]:
    """Every pair of arms within every group, for every metric; p-values adjusted across
    the whole list."""
    return compared(records, metrics, correction, trials)[0]


def compared(records: list[EpisodeRecord], metrics: list[str], correction: str = "holm",
             trials: Optional[str] = None) -> tuple[list[Comparison], list[str]]:
    """`compare`, and the notes a reader of its table needs (seeds that replayed one run)."""
    out: list[Comparison] = []
    agreement: list[tuple[str, InstanceSample]] = []
    for group, arms in sorted(grouped(records, trials).items(), key=lambda kv: tuple(asdict(kv[0]).values())):
        labels = arm_labels(arms)
        ordered = sorted(arms, key=lambda arm: labels[arm])
        split = group.split + (f" [{group.benchmark_config_hash[:6]}]"
                               if group.benchmark_config_hash else "")
        for metric in metrics:
            samples = {arm: sample_of(arms[arm], metric) for arm in ordered}
            if metric == metrics[0]:
                agreement += [(f"{group.benchmark} {split} {labels[arm]}", samples[arm])
                              for arm in ordered]
            for first, second in itertools.combinations(ordered, 2):
                if not samples[first].n or not samples[second].n:
                    continue
                c = compare_arms(samples[first], samples[second], metric in BINARY_METRICS)
                out.append(Comparison(
                    a=labels[first], b=labels[second], benchmark=group.benchmark, split=split,
                    budget=group.budget, metric=metric, test=c.result.test, n=c.result.n,
                    mean_a=c.mean_a, mean_b=c.mean_b, diff=c.mean_a - c.mean_b,
                    statistic=c.result.statistic, p=c.result.p,
                    effect_size=c.result.effect_size, paired=c.paired,
                    results_a=c.results_a, results_b=c.results_b))
    for c, p in zip(out, adjust([c.p for c in out], correction)):
        c.p_adjusted = p
    note = agreement_note(agreement)
    return out, [NOTE] + ([note] if note else [])


NOTE = ("n: instances, the unit of every test (each arm's trials scored as its protocol says, "
        "then its seeds averaged per instance), with the results behind them where they "
        "differ; paired tests: McNemar's exact test where each instance has one binary "
        "outcome per arm, else the sign-flip permutation test (exact, or Monte Carlo with "
        "10,000 resamples and a fixed seed); unpaired (no shared instance): Fisher's exact "
        "test, else the two-sample permutation test")


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

    def shown(c: Comparison, column: str) -> str:
        if column != "n":
            return fmt(column, getattr(c, column))
        if c.paired and c.results_a != c.results_b:
            return f"{c.n} ({c.results_a}/{c.results_b} results)"
        return n_label(c.n, c.results_a if c.paired else c.results_a + c.results_b)

    return list(COLUMNS), [[shown(c, k) for k in COLUMNS] for c in comparisons]
