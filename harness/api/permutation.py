"""Permutation tests: valid at any sample size, because their p-values come from the null
distribution of the data themselves, not from a normal or t approximation.

- `sign_flip_pvalue`: paired. Under the null each unit's difference is as likely to carry
  either sign (the two arms are exchangeable within the unit). Statistic: the sum (so the
  mean) of the differences.
- `two_sample_pvalue`: unpaired, studentized. Under the null the two samples' labels are
  exchangeable. Statistic: Welch's t of the split (the difference of the means over its
  unequal-variance standard error), so that the test stays valid, asymptotically, when the
  samples differ in size and in spread (Janssen 1997; Chung and Romano 2013), where the
  plain difference of means is not (the Behrens-Fisher problem).

How the sign flip's null distribution is computed, the cheapest exact way first:
1. On a lattice: when every difference is an integer multiple of 1/L for a small L (success
   rates averaged over k seeds: L = k; integer scores), the exact distribution of the sum
   is built by convolution, one unit at a time, over the lattice's points. Exact at any n.
2. By enumeration, up to `EXACT_UNITS` (40) non-zero differences: every sign vector's sum,
   the two halves' sums met in the middle (2 x 2^20 sums at 40), so the smallest p is the
   exact 2 / 2^n.
3. Up to `SADDLEPOINT_UNITS` (200) differences, Monte Carlo, as the two-sample test below.
4. Beyond: the saddlepoint approximation of the sign-flip distribution (Lugannani and Rice
   1980; for randomization tests, Robinson 1982), with a continuity correction on a
   lattice. Its relative error is small far into the tail, where multiplicity control
   needs it (within 2% of the exact p at 40 differences of smooth shapes, 2.6e-2 to
   2.6e-5), except where the magnitudes are nearly equal: the sum is then nearly a lattice
   the correction does not know, and at 40 differences the error reached 20% at p = 0.004
   and 44% at 5e-10; by 60 it is within 4%, by 200 within 1% (tests/perf/
   sim_statistics.py), hence Monte Carlo up to 200.

How the two-sample null is computed (and the sign flip's Monte Carlo):
1. By enumeration, while there are at most `EXACT_LIMIT` splits.
2. Monte Carlo: `RESAMPLES` draws from a generator seeded with `RESAMPLING_SEED`, so the
   same data always give the same p; p = (1 + hits) / (1 + draws), which a Monte Carlo
   permutation test must use to stay valid (Phipson and Smyth, 2010). Where that p is
   under `REFINE_BELOW`, it is replaced by the p of `REFINED_RESAMPLES` fresh draws (another
   seed): still a valid p (a fresh valid p reported on an event), whose floor 2 / 200,001
   lies well below alpha / m for families of thousands of tests.
3. Where both samples hold at least `LARGE_SAMPLE` units, the studentized statistic is
   normal (its permutation distribution and its sampling distribution alike): Welch's t
   test's p (t with Welch-Satterthwaite degrees of freedom).

No branch returns p = 0: the observed assignment is one of the null's, so the smallest
p is 1 / (the number of assignments): with 2 units, 0.25 one-sided and 0.5 two-sided; an
approximation's p is floored there too (and at `P_FLOOR`, the smallest normal float).
Two-sided p is twice the smaller one-sided p, capped at 1 (scipy's `permutation_test`
convention; for the symmetric sign-flip distribution it is P(|T*| >= |T|)). NaN and
infinite values are refused (ValueError): no p of them would mean anything.
"""

from __future__ import annotations

import itertools
import math
import sys
from functools import lru_cache
from typing import Sequence

import numpy as np

EXACT_LIMIT = 2 ** 16  # two-sample splits enumerated one by one, at most
EXACT_UNITS = 40  # sign vectors enumerated (met in the middle) up to 2^40
LATTICE_LIMIT = 2 ** 24  # lattice points x units the convolution may touch, at most
MAX_DENOMINATOR = 360  # lattices 1/L tried: seed means of up to 360 (seeds x trials)
RESAMPLES = 10_000  # Monte Carlo: the p-value's standard error is at most 0.005 (0.0022 at p = 0.05)
REFINE_BELOW = 0.01  # a Monte Carlo p under this is drawn again, finer
REFINED_RESAMPLES = 200_000  # its floor: 2 / 200,001 two-sided
RESAMPLING_SEED = 20_261_127
SADDLEPOINT_UNITS = 200  # beyond: the sign flip's saddlepoint; up to it, Monte Carlo
LARGE_SAMPLE = 100  # two samples of at least this many units each: Welch's t tail
P_FLOOR = sys.float_info.min  # an approximation's p never reads 0
ALTERNATIVES = ("two-sided", "greater", "less")
MONTE_CARLO = (f"monte carlo ({RESAMPLES} resamples, seed {RESAMPLING_SEED}; "
               f"{REFINED_RESAMPLES} more where p < {REFINE_BELOW})")
SADDLEPOINT = "saddlepoint"
LARGE_SAMPLE_NULL = "welch t (large samples)"


def finite(values: Sequence[float], what: str = "values") -> np.ndarray:
    """`values` as floats; ValueError naming the first NaN or infinity."""
    array = np.asarray(values, dtype=float)
    if array.size and not np.all(np.isfinite(array)):
        bad = array[~np.isfinite(array)][0]
        raise ValueError(f"{what} hold {bad!r} at position {int(np.argmax(~np.isfinite(array)))}: "
                         f"a test needs finite numbers; leave undefined values out first")
    return array


def _check(alternative: str) -> None:
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative {alternative!r}: choose from {', '.join(ALTERNATIVES)}")


def _pvalue(p_greater: float, p_less: float, alternative: str, floor: float = P_FLOOR) -> float:
    if alternative == "greater":
        p = p_greater
    elif alternative == "less":
        p = p_less
    else:
        p = 2 * min(p_greater, p_less)
    return min(1.0, max(floor, p))


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
    was computed: "exact", `MONTE_CARLO` or "saddlepoint"."""
    _check(alternative)
    d = finite(diffs, "differences")
    d = d[d != 0]  # a zero difference has the same sum under either sign
    if d.size == 0:
        return 1.0, "exact"
    floor = max(P_FLOOR, 2.0 ** -d.size)  # the observed signs are one of 2^n
    on_lattice = lattice(d)
    if on_lattice is not None:
        a, _ = on_lattice
        span = int(np.abs(a).sum())
        if (2 * span + 1) * a.size <= LATTICE_LIMIT:
            return _sign_flip_lattice(a, alternative), "exact"
    observed = float(d.sum())
    tol = _tolerance(d)
    if d.size <= EXACT_UNITS:
        p_greater, p_less = _sign_flip_enumerated(d, observed, tol)
        return _pvalue(p_greater, p_less, alternative), "exact"
    if d.size <= SADDLEPOINT_UNITS:
        p = _pvalue(*_sign_flip_sampled(d, observed, tol, RESAMPLES, RESAMPLING_SEED), alternative)
        if p < REFINE_BELOW:
            p = _pvalue(*_sign_flip_sampled(d, observed, tol, REFINED_RESAMPLES, RESAMPLING_SEED + 1),
                        alternative)
        return p, MONTE_CARLO
    step = 0.0
    if on_lattice is not None:  # the sum moves in steps of 2 gcd(a) / L: corrected by half
        a, denominator = on_lattice
        step = 2.0 * float(np.gcd.reduce(np.abs(a))) / denominator
    p_greater = sign_flip_upper_tail(d, observed, step)
    p_less = sign_flip_upper_tail(d, -observed, step)
    return _pvalue(p_greater, p_less, alternative, floor), SADDLEPOINT


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
    return _pvalue(p_greater, p_less, alternative, 2.0 ** -int(np.count_nonzero(a)))


def _all_sign_sums(d: np.ndarray) -> np.ndarray:
    """sum(s_i d_i) for every one of the 2^m sign vectors (m = len(d))."""
    sums = np.zeros(1)
    for value in d:
        sums = np.concatenate([sums + value, sums - value])
    return sums


def _sign_flip_enumerated(d: np.ndarray, observed: float, tol: float) -> tuple[float, float]:
    """P(S >= observed) and P(S <= observed) over every sign vector: the sums of the two
    halves' sign vectors, counted against each other (a sorted half, searched)."""
    half = d.size // 2
    left, right = _all_sign_sums(d[:half]), np.sort(_all_sign_sums(d[half:]))
    total = float(left.size) * float(right.size)
    # S = l + r >= observed - tol  <=>  r >= observed - tol - l
    greater = right.size - np.searchsorted(right, observed - tol - left, side="left")
    less = np.searchsorted(right, observed + tol - left, side="right")
    return float(greater.sum()) / total, float(less.sum()) / total


POPCOUNT = np.array([bin(byte).count("1") for byte in range(256)], dtype=np.int64)


def _random_sign_sums(d: np.ndarray, draws: int, seed: int) -> np.ndarray:
    """`draws` draws of sum(s_i d_i) under random signs. Equal differences are drawn
    together: the signs of c equal values sum to 2 B - c, B ~ Binomial(c, 1/2), the count
    of heads in c random bits (ceil(c / 8) random bytes, the last one masked); so the cost
    is resamples x (differences / 8 + distinct values)."""
    rng = np.random.default_rng(seed)
    values, counts = np.unique(d, return_counts=True)
    nbytes = -(-counts // 8)
    starts = np.concatenate([[0], np.cumsum(nbytes)[:-1]])
    masks = np.full(int(nbytes.sum()), 0xFF, dtype=np.uint8)
    masks[starts + nbytes - 1] = ((1 << (counts - 8 * (nbytes - 1))) - 1).astype(np.uint8)
    sums = np.empty(draws)
    chunk = max(1, 2 ** 21 // masks.size)
    for start in range(0, draws, chunk):
        rows = min(chunk, draws - start)
        bits = rng.integers(0, 256, size=(rows, masks.size), dtype=np.uint8) & masks
        heads = np.add.reduceat(POPCOUNT[bits], starts, axis=1)
        sums[start:start + rows] = (2 * heads - counts) @ values
    return sums


def _sign_flip_sampled(d: np.ndarray, observed: float, tol: float, draws: int,
                       seed: int) -> tuple[float, float]:
    """P(S >= observed) and P(S <= observed) from `draws` random sign vectors, each
    (1 + hits) / (1 + draws)."""
    null = _random_sign_sums(d, draws, seed)
    return ((1 + int(np.sum(null >= observed - tol))) / (1 + draws),
            (1 + int(np.sum(null <= observed + tol))) / (1 + draws))


def sign_flip_upper_tail(d: np.ndarray, x: float, step: float = 0.0) -> float:
    """P(S >= x) for S = sum(s_i d_i) under random signs, by the saddlepoint (Lugannani-
    Rice) approximation; `step`: the lattice step of S (0: continuous), whose half is the
    continuity correction. x is an attained value of S."""
    magnitudes = np.abs(d)
    top = float(magnitudes.sum())
    if x >= top - _tolerance(magnitudes):
        return 2.0 ** -d.size  # every sign agrees: one vector of 2^n
    if step and x <= 0:  # P(S >= x) = 1 - P(S <= x - step) = 1 - P(S >= step - x)
        return 1.0 - sign_flip_upper_tail(d, step - x, step)
    if not step and x < 0:
        return 1.0 - sign_flip_upper_tail(d, -x, 0.0)
    return _lugannani_rice(magnitudes, x - step / 2)


def _lugannani_rice(magnitudes: np.ndarray, y: float) -> float:
    """P(S >= y) (continuous form) for S = sum(s_i m_i); y >= 0."""
    from scipy import optimize, stats

    sd = math.sqrt(float(np.sum(magnitudes ** 2)))
    if y <= 1e-6 * sd:  # at the centre the formula is 0/0; the symmetric sum is normal there
        return float(stats.norm.sf(y / sd))

    def slope(t: float) -> float:  # K'(t) - y, rising from -y to sum(m) - y
        return float(np.dot(magnitudes, np.tanh(t * magnitudes))) - y

    high = 1.0 / float(magnitudes.max())
    while slope(high) < 0:
        high *= 2
    t = optimize.brentq(slope, 0.0, high, xtol=1e-15 * high, rtol=4 * np.finfo(float).eps, maxiter=500)
    scaled = t * magnitudes
    # log cosh(z) = |z| + log1p(exp(-2|z|)) - log 2, without overflow
    cumulant = float(np.sum(scaled + np.log1p(np.exp(-2 * scaled)) - math.log(2)))
    curvature = float(np.sum(magnitudes ** 2 / np.cosh(np.minimum(scaled, 700)) ** 2))
    w = math.sqrt(max(0.0, 2 * (t * y - cumulant)))
    u = t * math.sqrt(curvature)
    if w < 1e-8 or u <= 0:
        return float(stats.norm.sf(y / sd))
    return min(1.0, max(0.0, float(stats.norm.sf(w) + stats.norm.pdf(w) * (1 / u - 1 / w))))


def welch_statistic(first_sum: np.ndarray, first_squares: np.ndarray, k: int,
                    total: float, total_squares: float, n: int) -> np.ndarray:
    """Welch's t of splits given the first group's sums and sums of squares (of centred
    values): the difference of the means over sqrt(v1 / k + v2 / (n - k)). Where a group
    has one unit it has no variance: the difference of the means itself."""
    rest = n - k
    mean_first, mean_rest = first_sum / k, (total - first_sum) / rest
    difference = mean_first - mean_rest
    if k < 2 or rest < 2:
        return difference
    var_first = np.maximum(0.0, first_squares - k * mean_first ** 2) / (k - 1)
    var_rest = np.maximum(0.0, (total_squares - first_squares) - rest * mean_rest ** 2) / (rest - 1)
    se = np.sqrt(var_first / k + var_rest / rest)
    scale = max(1.0, float(np.sqrt(total_squares / n)))
    flat = se <= 1e-12 * scale  # no spread in either group: the sign of the difference alone
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(flat, np.sign(difference) * np.where(np.abs(difference) > 1e-12 * scale,
                                                          np.inf, 0.0), difference / np.where(flat, 1.0, se))
    return t


def two_sample_pvalue(a: Sequence[float], b: Sequence[float],
                      alternative: str = "two-sided") -> tuple[float, str]:
    """The studentized permutation test's p-value of mean(a) - mean(b) over the splits of
    the pooled sample into groups of len(a) and len(b), and how its null was computed."""
    _check(alternative)
    x, y = finite(a, "the first sample"), finite(b, "the second sample")
    k, n = x.size, x.size + y.size
    if min(x.size, y.size) >= LARGE_SAMPLE:
        return _welch_tail(x, y, alternative), LARGE_SAMPLE_NULL
    pooled = np.concatenate([x, y])
    pooled = pooled - pooled.mean()  # centred: sums of squares without cancellation
    squares = pooled * pooled
    total, total_squares = float(pooled.sum()), float(squares.sum())
    observed = float(welch_statistic(np.array([pooled[:k].sum()]), np.array([squares[:k].sum()]),
                                     k, total, total_squares, n)[0])
    if math.comb(n, k) <= EXACT_LIMIT:
        chosen = _all_splits(n, k)
        count = chosen.shape[0]
        null = welch_statistic(pooled[chosen].sum(axis=1), squares[chosen].sum(axis=1), k, total,
                               total_squares, n)
        p_greater, p_less = _tails(null, observed, exact=True)
        return _pvalue(p_greater, p_less, alternative, 1.0 / count), "exact"
    null = _split_statistics(pooled, squares, k, total, total_squares, RESAMPLES, RESAMPLING_SEED)
    p = _pvalue(*_tails(null, observed, exact=False), alternative)
    if p < REFINE_BELOW:
        null = _split_statistics(pooled, squares, k, total, total_squares, REFINED_RESAMPLES,
                                 RESAMPLING_SEED + 1)
        p = _pvalue(*_tails(null, observed, exact=False), alternative)
    return p, MONTE_CARLO


@lru_cache(maxsize=4)
def _all_splits(n: int, k: int) -> np.ndarray:
    """Every choice of k of n units, one per row (C(n, k) x k)."""
    count = math.comb(n, k)
    return np.fromiter(itertools.chain.from_iterable(itertools.combinations(range(n), k)),
                       dtype=np.int64, count=count * k).reshape(count, k)


def _tails(null: np.ndarray, observed: float, exact: bool) -> tuple[float, float]:
    """P(T* >= t) and P(T* <= t): the share of the null (exact) or (1 + hits) / (1 + draws)."""
    tol = 1e-9 * max(1.0, abs(observed)) if math.isfinite(observed) else 0.0
    greater = int(np.sum(null >= observed - tol))
    less = int(np.sum(null <= observed + tol))
    if exact:
        return greater / null.size, less / null.size
    return (1 + greater) / (1 + null.size), (1 + less) / (1 + null.size)


def _split_statistics(pooled: np.ndarray, squares: np.ndarray, k: int, total: float,
                      total_squares: float, draws: int, seed: int) -> np.ndarray:
    """Welch's t of `draws` random splits (the first k of a random permutation)."""
    rng = np.random.default_rng(seed)
    n = pooled.size
    out = np.empty(draws)
    both = np.stack([pooled, squares])
    chunk = max(1, 2 ** 21 // n)
    for start in range(0, draws, chunk):
        rows = min(chunk, draws - start)
        order = rng.permuted(np.broadcast_to(np.arange(n), (rows, n)), axis=1)[:, :k]
        first = both[:, order].sum(axis=2)
        out[start:start + rows] = welch_statistic(first[0], first[1], k, total, total_squares, n)
    return out


def _welch_tail(x: np.ndarray, y: np.ndarray, alternative: str) -> float:
    """Welch's t-test's p (large samples: the studentized statistic is normal)."""
    from scipy import stats

    if np.ptp(x) == 0 and np.ptp(y) == 0:  # no spread: only the difference's sign is known
        return 1.0 if x[0] == y[0] else _pvalue(*((P_FLOOR, 1.0) if x[0] > y[0] else (1.0, P_FLOOR)),
                                                 alternative)
    result = stats.ttest_ind(x, y, equal_var=False, alternative=alternative)
    p = float(result.pvalue)
    return min(1.0, max(P_FLOOR, p)) if not math.isnan(p) else 1.0

