"""Paired comparisons between the arms of a grid, with multiple-comparison correction.

An arm is a method (with its config) and model on a benchmark split and budget. lifebench
runs every arm on the same instances and seeds, and the instance is the unit of every
comparison (`lifebench.api.comparison`): trials scored as the protocol says, seeds
averaged within an instance (as many on either side), then the arms paired over instances.
Matched: McNemar's exact test where each instance has one binary outcome per arm, else the
sign-flip permutation test; fewer than half of either arm's instances shared: Fisher's
exact test, else the studentized two-sample permutation test. The p-values of each metric
are adjusted together (Holm by default, Benjamini-Hochberg, or Benjamini-Yekutieli), so
that a metric added to the command changes no other metric's adjusted p.
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
from lifebench.leaderboard.plugins import sampled_families

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
    unpaired_a: int = 0  # instances only a ran (left out of a paired test)
    unpaired_b: int = 0  # instances only b ran
    diff_se: float = math.nan  # the standard error of diff
    diff_low: float = math.nan  # diff's 95% interval
    diff_high: float = math.nan
    unit: str = "instances"  # the test's unit: "families" where the benchmark samples them

    def to_json(self) -> dict[str, Any]:
        """JSON-safe: NaN and infinities become null."""
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                for k, v in asdict(self).items()}


def compare(records: list[EpisodeRecord], metrics: list[str], correction: str = "holm",
            trials: Optional[str] = None) -> list[Comparison]:
    """Every pair of arms within every group, for every metric; p-values adjusted across
    each metric's comparisons."""
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
        families = sampled_families(group.benchmark, [r for rs in arms.values() for r in rs])
        for metric in metrics:
            samples = {arm: sample_of(arms[arm], metric) for arm in ordered}
            if metric == metrics[0]:
                agreement += [(f"{group.benchmark} {split} {labels[arm]}", samples[arm])
                              for arm in ordered]
            for first, second in itertools.combinations(ordered, 2):
                if not samples[first].n or not samples[second].n:
                    continue
                c = compare_arms(samples[first], samples[second], metric in BINARY_METRICS,
                                 families=families)
                out.append(Comparison(
                    a=labels[first], b=labels[second], benchmark=group.benchmark, split=split,
                    budget=group.budget, metric=metric, test=c.result.test, n=c.result.n,
                    mean_a=c.mean_a, mean_b=c.mean_b, diff=c.mean_a - c.mean_b,
                    statistic=c.result.statistic, p=c.result.p,
                    effect_size=c.result.effect_size, paired=c.paired,
                    results_a=c.results_a, results_b=c.results_b, unpaired_a=c.unpaired_a,
                    unpaired_b=c.unpaired_b, diff_se=c.diff_se, diff_low=c.diff_low,
                    diff_high=c.diff_high, unit=c.unit))
    for metric in metrics:  # each metric its own family of tests
        family = [c for c in out if c.metric == metric]
        for c, p in zip(family, adjust([c.p for c in family], correction)):
            c.p_adjusted = p
    note = agreement_note(agreement)
    return out, [NOTE] + ([note] if note else [])


NOTE = ("n: instances, the unit of every test (each arm's trials scored as its protocol says, "
        "then its seeds averaged per instance, as many seeds on either side), with the "
        "results behind them where they differ; paired tests over the shared instances: "
        "McNemar's exact test where each instance has one binary outcome per arm, else the "
        "sign-flip permutation test (exact to 40 differences, Monte Carlo to 200, its "
        "saddlepoint approximation beyond); unpaired where fewer than half of either arm's instances are shared: "
        "Fisher's exact test, else the studentized two-sample permutation test (Welch's t "
        "permuted); unpaired: the instances only a / only b ran; diff's SE and 95% interval: "
        "t on the paired differences, Welch's where unpaired, Agresti-Min's (paired) and "
        "Agresti-Caffo's (unpaired) for binary outcomes; p adjusted within each metric")


COLUMNS = ("benchmark", "split", "budget", "metric", "a", "b", "test", "n", "unpaired", "mean_a",
           "mean_b", "diff", "diff_se", "diff_95", "effect_size", "statistic", "p", "p_adjusted")


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
        if column == "unpaired":
            return f"{c.unpaired_a}/{c.unpaired_b}"
        if column == "diff_95":
            return "—" if math.isnan(c.diff_low) else f"[{fmt('', c.diff_low)}, {fmt('', c.diff_high)}]"
        if column == "test" and c.unit == "families":
            return f"{c.test} (over task families)"
        if column == "statistic" and c.test == "fisher exact" and math.isinf(c.statistic):
            return "inf"  # Fisher's odds ratio: one arm never failed (or never succeeded)
        if column != "n":
            return fmt(column, getattr(c, column))
        if c.paired and c.results_a != c.results_b:
            return f"{c.n} ({c.results_a}/{c.results_b} results)"
        return n_label(c.n, c.results_a if c.paired else c.results_a + c.results_b)

    return list(COLUMNS), [[shown(c, k) for k in COLUMNS] for c in comparisons]
