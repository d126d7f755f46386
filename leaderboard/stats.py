"""Confidence intervals used by the tables."""

from __future__ import annotations

import math

from scipy import stats as _stats


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion.

    Unlike the normal (Wald) interval it stays inside [0, 1] and keeps its coverage near
    0 and 1, where planning benchmarks often sit (oracles at 1.0, random agents near 0).
    """
    if n <= 0:
        return (math.nan, math.nan)
    if not 0 <= successes <= n:
        raise ValueError(f"successes={successes} outside [0, n={n}]")
    z = float(_stats.norm.ppf(0.5 + confidence / 2))
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # Exact at the edges: with 0 (or n) successes the bound is exactly 0 (or 1).
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return (low, high)


def f1_score(true_positive: int, false_positive: int, false_negative: int) -> float:
    """F1 of the positive class; NaN when there are no positives at all (undefined)."""
    denom = 2 * true_positive + false_positive + false_negative
    return 2 * true_positive / denom if denom else math.nan
