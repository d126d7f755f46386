"""Permutation tests: valid at any sample size, because their p-values come from the null
distribution of the data themselves, not from a normal or t approximation.

- `sign_flip_test`: paired. Under the null each unit's difference is as likely to carry
  either sign (the two arms are exchangeable within the unit). Statistic: the sum (so the
  mean) of the differences.
- `two_sample_test`: unpaired. Under the null the two samples' labels are exchangeable.
  Statistic: the difference of the means.

How the null distribution is computed, the cheapest exact way first:
1. On a lattice: when every difference is an integer multiple of 1/L for a small L (success
   rates averaged over k seeds: L = k; integer scores), the exact distribution of the sum
   is built by convolution, one unit at a time, over the lattice's points. Exact at any n.
2. By enumeration: every sign vector (every split of the pooled sample) while there are at
   most `EXACT_LIMIT` of them.
3. Monte Carlo beyond: `RESAMPLES` draws from a generator seeded with `RESAMPLING_SEED`, so
   the same data always give the same p; p = (1 + hits) / (1 + RESAMPLES), which a
   Monte Carlo permutation test must use to stay valid (Phipson and Smyth, 2010).

No branch returns p = 0: the observed assignment is one of the null's, so the smallest
p is 1 / (the number of assignments): with 2 units, 0.25 one-sided and 0.5 two-sided.
Two-sided p is twice the smaller one-sided p, capped at 1 (scipy's `permutation_test`
convention; for the symmetric sign-flip distribution it is P(|T*| >= |T|)).
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache
from typing import Sequence

import numpy as np

EXACT_LIMIT = 2 ** 16  # sign vectors (or splits) enumerated one by one, at most
LATTICE_LIMIT = 2 ** 24  # lattice points x units the convolution may touch, at most
MAX_DENOMINATOR = 360  # lattices 1/L tried: seed means of up to 360 (seeds x trials)
RESAMPLES = 10_000  # Monte Carlo: the p-value's standard error is at most 0.005 (0.0022 at p = 0.05)
RESAMPLING_SEED = 20_261_127
ALTERNATIVES = ("two-sided", "greater", "less")


def _check(alternative: str) -> None:
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative {alternative!r}: choose from {', '.join(ALTERNATIVES)}")


def _pvalue(p_greater: float, p_less: float, alternative: str) -> float:
    if alternative == "greater":
        return min(1.0, p_greater)
    if alternative == "less":
        return min(1.0, p_less)
    return min(1.0, 2 * min(p_greater, p_less))


def _tolerance(values: np.ndarray) -> float:
    """Sums that are equal in exact arithmetic may differ in their last bits."""
    return 1e-9 * max(1.0, float(np.abs(values).sum()))


def lattice(values: np.ndarray) -> tuple[np.ndarray, int] | None:
    """(integers a, L) with values = a / L for the smallest L <= MAX_DENOMINATOR, or None."""
    for denominator in range(1, MAX_DENOMINATOR + 1):
        scaled = values * denominator
        rounded = np.rint(scaled)
        if np.all(np.abs(scaled - rounded) <= 1e-7 * np.maximum(1.0, np.abs(scaled))):
            return rounded.astype(np.int64), denominator
    return None


def sign_flip_pvalue(diffs: Sequence[float], alternative: str = "two-sided") -> tuple[float, str]:
    """The sign-flip test's p-value of paired differences, and how its null distribution
    was computed: "exact" or "monte carlo (10000 resamples, seed 20261127)"."""
    _check(alternative)
    d = np.asarray(diffs, dtype=float)
    d = d[d != 0]  # a zero difference has the same sum under either sign
    if d.size == 0:
        return 1.0, "exact"
    on_lattice = lattice(d)
    if on_lattice is not None:
        a, _ = on_lattice
        span = int(np.abs(a).sum())
        if (2 * span + 1) * a.size <= LATTICE_LIMIT:
            return _sign_flip_lattice(a, alternative), "exact"
    observed = float(d.sum())
    tol = _tolerance(d)
    if 2 ** d.size <= EXACT_LIMIT:
        null = _all_signs(d.size) @ d
        p_greater = float(np.mean(null >= observed - tol))
        p_less = float(np.mean(null <= observed + tol))
        return _pvalue(p_greater, p_less, alternative), "exact"
    null = _random_sign_sums(d)
    p_greater = (1 + int(np.sum(null >= observed - tol))) / (1 + RESAMPLES)
    p_less = (1 + int(np.sum(null <= observed + tol))) / (1 + RESAMPLES)
    return _pvalue(p_greater, p_less, alternative), MONTE_CARLO


MONTE_CARLO = f"monte carlo ({RESAMPLES} resamples, seed {RESAMPLING_SEED})"


def _sign_flip_lattice(a: np.ndarray, alternative: str) -> float:
    """The exact null distribution of sum(s_i a_i), s_i = +-1, by convolution: index j of
    `pmf` is the sum j - span."""
    span = int(np.abs(a).sum())
    pmf = np.zeros(2 * span + 1)
    pmf[span] = 1.0
    reach = 0  # the sums so far lie in [-reach, reach]
    for step in np.sort(np.abs(a)):
        step = int(step)
        low, high = span - reach, span + reach + 1
        moved = np.zeros_like(pmf)
        moved[low + step:high + step] += 0.5 * pmf[low:high]
        moved[low - step:high - step] += 0.5 * pmf[low:high]
        pmf, reach = moved, reach + step
    observed = int(a.sum()) + span
    p_greater = float(pmf[observed:].sum())
    p_less = float(pmf[:observed + 1].sum())
    return _pvalue(p_greater, p_less, alternative)


POPCOUNT = np.array([bin(byte).count("1") for byte in range(256)], dtype=np.int64)


@lru_cache(maxsize=32)
def _all_signs(m: int) -> np.ndarray:
    """Every vector of m signs, one per row (2^m x m)."""
    codes = np.arange(2 ** m, dtype=np.int64)[:, None]
    bits = (codes >> np.arange(m, dtype=np.int64)[None, :]) & 1
    return 1.0 - 2.0 * bits


def _random_sign_sums(d: np.ndarray) -> np.ndarray:
    """RESAMPLES draws of sum(s_i d_i) under random signs. Equal differences are drawn
    together: the signs of c equal values sum to 2 B - c, B ~ Binomial(c, 1/2), the count
    of heads in c random bits (ceil(c / 8) random bytes, the last one masked); so the cost
    is resamples x (differences / 8 + distinct values)."""
    rng = np.random.default_rng(RESAMPLING_SEED)
    values, counts = np.unique(d, return_counts=True)
    nbytes = -(-counts // 8)
    starts = np.concatenate([[0], np.cumsum(nbytes)[:-1]])
    masks = np.full(int(nbytes.sum()), 0xFF, dtype=np.uint8)
    masks[starts + nbytes - 1] = ((1 << (counts - 8 * (nbytes - 1))) - 1).astype(np.uint8)
    sums = np.empty(RESAMPLES)
    chunk = max(1, 2 ** 21 // masks.size)
    for start in range(0, RESAMPLES, chunk):
        rows = min(chunk, RESAMPLES - start)
        bits = rng.integers(0, 256, size=(rows, masks.size), dtype=np.uint8) & masks
        heads = np.add.reduceat(POPCOUNT[bits], starts, axis=1)
        sums[start:start + rows] = (2 * heads - counts) @ values
    return sums


def two_sample_pvalue(a: Sequence[float], b: Sequence[float],
                      alternative: str = "two-sided") -> tuple[float, str]:
    """The permutation test's p-value of mean(a) - mean(b) over the splits of the pooled
    sample into groups of len(a) and len(b), and how its null was computed."""
    _check(alternative)
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    pooled = np.concatenate([x, y])
    n, k = pooled.size, x.size
    # the sum of the first group decides the statistic: mean(a) - mean(b) rises with it
    observed = float(x.sum())
    tol = _tolerance(pooled)
    if math.comb(n, k) <= EXACT_LIMIT:
        count = math.comb(n, k)
        chosen = np.fromiter(itertools.chain.from_iterable(itertools.combinations(range(n), k)),
                             dtype=np.int64, count=count * k).reshape(count, k)
        sums = pooled[chosen].sum(axis=1)
        p_greater = float(np.mean(sums >= observed - tol))
        p_less = float(np.mean(sums <= observed + tol))
        return _pvalue(p_greater, p_less, alternative), "exact"
    rng = np.random.default_rng(RESAMPLING_SEED)
    sums = np.empty(RESAMPLES)
    chunk = max(1, 2 ** 22 // n)
    for start in range(0, RESAMPLES, chunk):
        rows = min(chunk, RESAMPLES - start)
        shuffled = rng.permuted(np.broadcast_to(pooled, (rows, n)), axis=1)
        sums[start:start + rows] = shuffled[:, :k].sum(axis=1)
    p_greater = (1 + int(np.sum(sums >= observed - tol))) / (1 + RESAMPLES)
    p_less = (1 + int(np.sum(sums <= observed + tol))) / (1 + RESAMPLES)
    return _pvalue(p_greater, p_less, alternative), MONTE_CARLO
