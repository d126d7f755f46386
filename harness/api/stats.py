"""Confidence intervals and tests: the leaderboard's, and for plugins' own tables.

Each estimator states its assumptions; scipy and statsmodels do the distributions, and
`lifebench.api.permutation` the permutation tests' null distributions. Which test compares
two arms, on what unit, is decided once, in `lifebench.api.comparison` (the instance is
the unit).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Optional, Sequence

from lifebench.api.permutation import (LARGE_SAMPLE_NULL, P_FLOOR, finite, sign_flip_pvalue,
                                        two_sample_pvalue)


class _SciPyStats:
    """scipy.stats, imported on first use: importing it costs ~0.5 s, which every process
    that loads a benchmark or method reporting through this module (Plancraft's F1, How²'s
    tables) paid at start, whether it computed a statistic or not."""

    def __getattr__(self, name: str):
        from scipy import stats

        return getattr(stats, name)


_stats = _SciPyStats()


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion.

    Unlike the normal (Wald) interval it stays inside [0, 1] and holds its coverage far
    better near 0 and 1, where planning benchmarks often sit (oracles at 1.0, random agents
    near 0), but not everywhere there: its coverage oscillates with p and n, and its worst
    for p in (0.001, 0.2) is 0.83-0.86 at n = 5 to 100 (measured by
    tests/perf/sim_statistics.py; an interval that never dips, Clopper-Pearson, is wider
    everywhere else). Averaged over p it is near 0.95.
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


def constant(values: Sequence[float]) -> bool:
    """No spread: every value equal to the first but for rounding (relative 1e-12), so that
    eight copies of 0.2 read as constant although their computed variance is 1e-33."""
    if not len(values):
        return True
    low, high = min(values), max(values)
    return high - low <= 1e-12 * max(1.0, abs(low), abs(high))


def mean_variance(values: Sequence[float], clusters: Optional[Sequence[str]] = None) -> float:
    """The variance of a sample mean: the plug-in estimate sum((x - mean)^2) / n^2 for
    independent observations (for 0/1 outcomes exactly p(1 - p) / n), or, with `clusters`,
    the cluster-robust CR2 estimate (Bell and McCaffrey 2002), for observations correlated
    within clusters: each cluster's sum of residuals s_g, inflated by its leverage,
    sum(s_g^2 / (1 - n_g / n)) / n^2; CR1's bias down with few or unbalanced clusters is
    what it removes. 0 where the values do not vary."""
    n = len(values)
    mean = sum(values) / n
    if constant(values):
        return 0.0
    if clusters is None:
        return sum((v - mean) ** 2 for v in values) / (n * n)
    sums, sizes = _cluster_sums(values, clusters, mean)
    if len(sums) < 2:
        return math.nan
    return sum(s * s / (1 - sizes[g] / n) for g, s in sums.items()) / (n * n)


def _cluster_sums(values: Sequence[float], clusters: Sequence[str],
                  mean: float) -> tuple[dict[str, float], dict[str, int]]:
    sums: dict[str, float] = {}
    sizes: dict[str, int] = {}
    for value, cluster in zip(values, clusters):
        sums[cluster] = sums.get(cluster, 0.0) + (value - mean)
        sizes[cluster] = sizes.get(cluster, 0) + 1
    return sums, sizes


def cluster_degrees_of_freedom(clusters: Sequence[str]) -> float:
    """Bell and McCaffrey's degrees of freedom for the CR2 variance of a mean (working model:
    independent, equal variances): tr(M)^2 / tr(M^2) of the matrix behind the estimator, in
    closed form for the mean: n^2 / ((sum a_g n_g^2)^2 / n^2 + sum a_g^2 (n_g^2 - 2 n_g^3 / n))
    with a_g = n / (n - n_g). G - 1 for G equal clusters; near 1 where one cluster holds
    most of the instances, as it should (its one draw is most of the mean)."""
    sizes: dict[str, int] = {}
    for cluster in clusters:
        sizes[cluster] = sizes.get(cluster, 0) + 1
    n = len(clusters)
    if len(sizes) < 2:
        return math.nan
    a = {g: n / (n - m) for g, m in sizes.items()}
    first = sum(a[g] * m * m for g, m in sizes.items()) ** 2 / (n * n)
    second = sum(a[g] ** 2 * (m * m - 2 * m ** 3 / n) for g, m in sizes.items())
    return n * n / (first + second)


def informative_clusters(values: Sequence[float], clusters: Optional[Sequence[str]]) -> bool:
    """Whether clustering by `clusters` can tell anything: at least 2 clusters hold at least
    2 values each (else no within-cluster correlation can show, and one big cluster among
    singletons is one draw the data cannot weigh). The estimated intra-cluster correlation
    does not gate it: with few clusters its estimate is at or below 0 in a third of samples
    that have a real family effect, and the independent interval then covers 0.67 of the
    time (families of 80, 10, 5, 3 and 2: 0.885 overall against 1.0 without the gate,
    tests/perf/sim_statistics.py); `intraclass_correlation` reports it instead."""
    if clusters is None:
        return False
    sizes: dict[str, int] = {}
    for cluster in clusters:
        sizes[cluster] = sizes.get(cluster, 0) + 1
    return sum(size >= 2 for size in sizes.values()) >= 2


def intraclass_correlation(values: Sequence[float], clusters: Sequence[str]) -> float:
    """The one-way ANOVA estimate of the intra-cluster correlation (may be below 0; NaN
    where it is undefined: fewer than 2 clusters, or none with 2 values)."""
    groups: dict[str, list[float]] = {}
    for value, cluster in zip(values, clusters):
        groups.setdefault(cluster, []).append(value)
    n, g = len(values), len(groups)
    if g < 2 or n <= g:
        return math.nan
    mean = sum(values) / n
    between = sum(len(v) * (sum(v) / len(v) - mean) ** 2 for v in groups.values()) / (g - 1)
    within = sum((x - sum(v) / len(v)) ** 2 for v in groups.values() for x in v) / (n - g)
    n0 = (n - sum(len(v) ** 2 for v in groups.values()) / n) / (g - 1)
    denominator = between + (n0 - 1) * within
    return (between - within) / denominator if denominator > 0 else math.nan


def bounded_interval(values: Sequence[float], low: float, high: float,
                     clusters: Optional[Sequence[str]] = None,
                     confidence: float = 0.95) -> tuple[float, float]:
    """Interval of the mean of a metric bounded in [low, high]: success in [0, 1], a
    benchmark's score in its declared range. It never leaves [low, high].

    The Wilson score interval of the mean rescaled to [0, 1], p, with the effective sample
    size n_eff = p (1 - p) / Var(mean), Var from `mean_variance` (independent episodes, or
    CR2 cluster-robust over task families). For 0/1 outcomes of independent episodes n_eff
    is n and this is the Wilson interval; a bounded metric that varies less than 0/1
    outcomes gets a narrower interval, correlated episodes a wider one. n_eff is not capped
    at n (as inspect_ai's `ci_wilson(cluster=)` does): with CR2 and Bell-McCaffrey's
    quantile the cap only over-covers (0.98 for 10 equal families of 10 without a family
    effect, against 0.953 uncapped). With clusters the quantile is
    Student's t with Bell-McCaffrey degrees of freedom (`cluster_degrees_of_freedom`: G - 1
    for G equal clusters, fewer where they are unbalanced) instead of the normal's. When
    every value sits at one bound (p = 0 or 1) or none varies (`constant`), the spread says
    nothing and n_eff is n: the interval is the Wilson interval of that proportion at n.
    Coverage measured by tests/perf/sim_statistics.py (docs/cli.md, "Statistics")."""
    n = len(values)
    if n == 0 or not high > low:
        return (math.nan, math.nan)
    finite(values)
    width = high - low
    scaled = [min(1.0, max(0.0, (v - low) / width)) for v in values]
    p = sum(scaled) / n
    quantile = float(_stats.norm.ppf(0.5 + confidence / 2))
    variance = mean_variance(scaled, clusters)
    if clusters is not None:
        df = cluster_degrees_of_freedom(clusters)
        if math.isnan(df):
            return (math.nan, math.nan)
        quantile = float(_stats.t.ppf(0.5 + confidence / 2, df))
    n_eff = p * (1 - p) / variance if 0 < p < 1 and variance > 0 else float(n)
    z2 = quantile * quantile
    denom = 1 + z2 / n_eff
    centre = (p + z2 / (2 * n_eff)) / denom
    half = quantile * math.sqrt(p * (1 - p) / n_eff + z2 / (4 * n_eff * n_eff)) / denom
    lo = 0.0 if p == 0 else max(0.0, centre - half)
    hi = 1.0 if p == 1 else min(1.0, centre + half)
    return (low + width * lo, low + width * hi)


def f1_score(true_positive: int, false_positive: int, false_negative: int) -> float:
    """F1 of the positive class; NaN when there are no positives at all (undefined)."""
    denom = 2 * true_positive + false_positive + false_negative
    return 2 * true_positive / denom if denom else math.nan


def binary_f1(predicted: Sequence[bool], truth: Sequence[bool]) -> float:
    """F1 of binary predictions against the truth (positives: True)."""
    pairs = list(zip(predicted, truth))
    return f1_score(sum(p and t for p, t in pairs), sum(p and not t for p, t in pairs),
                    sum(t and not p for p, t in pairs))


def t_interval(values: list[float], confidence: float = 0.95) -> tuple[float, float]:
    """Student-t interval of a mean."""
    n = len(values)
    if n < 2:
        return (math.nan, math.nan)
    finite(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = float(_stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
    return (mean - half, mean + half)


def clustered_interval(values: list[float], clusters: list[str],
                       confidence: float = 0.95) -> tuple[float, float]:
    """Interval of a mean whose observations are correlated within clusters (e.g. the
    episodes of one task family): the cluster-robust CR2 standard error of the mean
    (`mean_variance`), with Bell-McCaffrey degrees of freedom (`cluster_degrees_of_freedom`).
    With one observation per cluster it is the t interval."""
    n = len(values)
    if n == 0:
        return (math.nan, math.nan)
    finite(values)
    mean = sum(values) / n
    df = cluster_degrees_of_freedom(clusters)
    if math.isnan(df):
        return (math.nan, math.nan)
    variance = mean_variance(values, clusters)
    half = float(_stats.t.ppf(0.5 + confidence / 2, df)) * math.sqrt(variance)
    return (mean - half, mean + half)


@dataclass(frozen=True)
class TestResult:
    test: str
    n: int
    statistic: float
    p: float
    effect_size: float  # Cohen's d_z (paired), d (unpaired) or h (proportions)


def _nan_to(value: float, default: float) -> float:
    return default if value is None or math.isnan(value) else float(value)


def _positive(p: float) -> float:
    """A p-value that never reads 0 (a distribution's tail beyond floating point)."""
    return p if math.isnan(p) else min(1.0, max(P_FLOOR, float(p)))


def paired_t(a: list[float], b: list[float], alternative: str = "two-sided") -> TestResult:
    """Student's paired t-test. Assumes normal differences; at small n prefer
    `sign_flip_test`, which assumes nothing of their shape."""
    diffs = [float(x) - float(y) for x, y in zip(finite(a, "a"), finite(b, "b"))]
    n = len(diffs)
    if n < 2:
        return TestResult("paired t", n, math.nan, math.nan, math.nan)
    if constant(diffs):
        # No spread in the differences: t is 0/0 or infinite. The t distribution then says
        # nothing (it would give p = 0 for a constant shift at any n): undefined.
        shift = diffs[0]
        if shift == 0:
            return TestResult("paired t", n, math.nan, 1.0, 0.0)
        return TestResult("paired t", n, math.copysign(math.inf, shift), math.nan,
                          math.copysign(math.inf, shift))
    result = _stats.ttest_rel(a, b, alternative=alternative)
    mean = sum(diffs) / n
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    return TestResult("paired t", n, float(result.statistic), _positive(result.pvalue), mean / sd)


def welch_t(a: list[float], b: list[float], alternative: str = "two-sided") -> TestResult:
    """Welch's t-test of two independent samples (unequal variances)."""
    return _unpaired_t(a, b, alternative, equal_var=False)


def student_t(a: list[float], b: list[float], alternative: str = "two-sided") -> TestResult:
    """Student's t-test of two independent samples (pooled variance; scipy's default)."""
    return _unpaired_t(a, b, alternative, equal_var=True)


def _unpaired_t(a: list[float], b: list[float], alternative: str, equal_var: bool) -> TestResult:
    name = "student t" if equal_var else "welch t"
    n = len(a) + len(b)
    if len(a) < 2 or len(b) < 2:
        return TestResult(name, n, math.nan, math.nan, math.nan)
    finite(a, "a"), finite(b, "b")
    with warnings.catch_warnings():  # identical samples: t is undefined, said by NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        result = _stats.ttest_ind(a, b, equal_var=equal_var, alternative=alternative)
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    va = sum((x - ma) ** 2 for x in a) / (len(a) - 1)
    vb = sum((x - mb) ** 2 for x in b) / (len(b) - 1)
    pooled = math.sqrt(((len(a) - 1) * va + (len(b) - 1) * vb) / (n - 2))
    statistic = _nan_to(result.statistic, math.nan)
    p = _nan_to(result.pvalue, 1.0 if ma == mb else math.nan)
    if not pooled and ma != mb:
        p = math.nan  # two constant samples: t is infinite, its p of 0 means nothing
    return TestResult(name, n, statistic, _positive(p), (ma - mb) / pooled if pooled else math.nan)


def sign_flip_test(diffs: Sequence[float], alternative: str = "two-sided") -> TestResult:
    """The paired permutation (sign-flip) test of per-unit differences (a - b): exact, or
    its saddlepoint approximation beyond 40 non-zero differences off a small lattice
    (`lifebench.api.permutation` says which, and the test's name: "sign flip exact" or
    "sign flip saddlepoint"). Assumes independent units, and under the null, arms
    exchangeable within a unit; no shape of the differences. Statistic: the mean
    difference. Effect size: Cohen's d_z (infinite for a constant non-zero difference,
    `constant` within rounding). Its smallest two-sided p at n units is 2 / 2^n: 0.5 at
    n = 2. NaN or infinity: ValueError."""
    n = len(diffs)
    if n == 0:
        return TestResult("sign flip exact", 0, math.nan, math.nan, math.nan)
    p, null = sign_flip_pvalue(diffs, alternative)
    mean = sum(diffs) / n
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1)) if n > 1 else math.nan
    if math.isnan(sd) or constant(diffs):
        effect = 0.0 if mean == 0 else (math.copysign(math.inf, mean) if n > 1 else math.nan)
    else:
        effect = mean / sd
    return TestResult(f"sign flip {_kind(null)}", n, mean, p, effect)


def permutation_test(a: Sequence[float], b: Sequence[float],
                     alternative: str = "two-sided") -> TestResult:
    """The studentized two-sample permutation test of mean(a) - mean(b) (unpaired): Welch's
    t permuted (`lifebench.api.permutation`), exact or Monte Carlo with fixed seeds, its p
    the larger of the permutation's and Welch's t-test's, or Welch's t-test alone where
    both samples hold 100 units or more ("studentized permutation exact" / "... monte
    carlo" / "welch t (large samples)"). The permutation p is exact for exchangeable
    samples; with unequal spreads it holds only asymptotically, and where the smaller
    sample has the larger spread it rejects 0.095 at alpha 0.05 (12 units of sd 3 against
    40 of sd 1), where Welch's t holds: the larger p holds wherever either does. Assumes
    independent units. Statistic: the difference of the means. Effect size: Cohen's d
    (pooled sd)."""
    n = len(a) + len(b)
    if not len(a) or not len(b):
        return TestResult("studentized permutation exact", n, math.nan, math.nan, math.nan)
    p, null = two_sample_pvalue(a, b, alternative)
    if null != LARGE_SAMPLE_NULL and len(a) >= 2 and len(b) >= 2:
        welch = _unpaired_t(list(a), list(b), alternative, equal_var=False).p
        p = p if math.isnan(welch) else max(p, welch)
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    squares = sum((x - ma) ** 2 for x in a) + sum((y - mb) ** 2 for y in b)
    pooled = math.sqrt(squares / (n - 2)) if n > 2 else math.nan
    effect = (ma - mb) / pooled if pooled else (0.0 if ma == mb else math.nan)
    name = null if null == LARGE_SAMPLE_NULL else f"studentized permutation {_kind(null)}"
    return TestResult(name, n, ma - mb, p, effect)


def _kind(null: str) -> str:
    return null if null in ("exact", "saddlepoint") else "monte carlo"


def two_way_anova(values: list[float], first: list[str], second: list[str]) -> list[dict]:
    """Two-way ANOVA with interaction (type II sums of squares, statsmodels' OLS) of
    `values` over two factors; one row per term: term ("a", "b", "a:b", "residual"), df,
    sum_sq, F, p (None where undefined)."""
    import pandas as pd
    from numpy.linalg import LinAlgError
    from statsmodels.formula.api import ols
    from statsmodels.stats.anova import anova_lm

    frame = pd.DataFrame({"y": values, "a": first, "b": second})
    with warnings.catch_warnings():  # a constant outcome: F is undefined, said by NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            table = anova_lm(ols("y ~ C(a) * C(b)", data=frame).fit(), typ=2)
        except (ValueError, LinAlgError):
            # a design the model cannot be fitted to (an empty cell of the two factors
            # leaves the type II contrasts undefined): every term undefined, not a crash
            return [{"term": term, "df": math.nan, "sum_sq": math.nan, "F": None, "p": None}
                    for term in ("a", "b", "a:b", "residual")]
    # A constant outcome leaves sums of squares of rounding noise (~1e-30) whose ratios
    # are meaningless F values: no variance, no test.
    constant = max(values) - min(values) == 0 if values else True
    names = {"C(a)": "a", "C(b)": "b", "C(a):C(b)": "a:b", "Residual": "residual"}

    def defined(x: float) -> Optional[float]:
        return None if constant or math.isnan(x) else float(x)

    return [{"term": names.get(str(term), str(term)), "df": float(row["df"]),
             "sum_sq": 0.0 if constant else float(row["sum_sq"]),
             "F": defined(row["F"]), "p": defined(row["PR(>F)"])}
            for term, row in table.iterrows()]


def cohens_h(p_a: float, p_b: float) -> float:
    return 2 * math.asin(math.sqrt(p_a)) - 2 * math.asin(math.sqrt(p_b))


def mcnemar_exact(a: list[bool], b: list[bool], alternative: str = "two-sided") -> TestResult:
    """McNemar's exact test for paired binary outcomes: a binomial test on the discordant
    pairs (`greater`: a succeeds where b fails more often than the reverse). The statistic
    is min(b, c) for the two-sided test (statsmodels' convention), else the count of pairs
    a won."""
    a_only = sum(1 for x, y in zip(a, b) if x and not y)
    b_only = sum(1 for x, y in zip(a, b) if y and not x)
    n = len(a)
    h = cohens_h(sum(a) / n, sum(b) / n) if n else math.nan
    discordant = a_only + b_only
    if discordant == 0:
        return TestResult("mcnemar exact", n, 0.0, 1.0, h)
    p = float(_stats.binomtest(a_only, discordant, 0.5, alternative=alternative).pvalue)
    statistic = float(min(a_only, b_only)) if alternative == "two-sided" else float(a_only)
    return TestResult("mcnemar exact", n, statistic, _positive(p), h)


def fisher_exact(a: list[bool], b: list[bool], alternative: str = "two-sided") -> TestResult:
    """Fisher's exact test of two independent proportions (unmatched binary outcomes)."""
    table = [[sum(a), len(a) - sum(a)], [sum(b), len(b) - sum(b)]]
    n = len(a) + len(b)
    if not a or not b:
        return TestResult("fisher exact", n, math.nan, math.nan, math.nan)
    result = _stats.fisher_exact(table, alternative=alternative)
    return TestResult("fisher exact", n, float(result.statistic), _positive(result.pvalue),
                      cohens_h(sum(a) / len(a), sum(b) / len(b)))


# Holm: the familywise error rate under any dependence. bh: the false discovery rate where
# the tests are independent or positively dependent (PRDS); two-sided pairwise tests that
# share arms are not shown to be, so by (Benjamini-Yekutieli) keeps it under any
# dependence, at the price of a factor sum(1/i) (3.0 at 11 tests, 5.5 at 140).
CORRECTIONS = {"holm": "holm", "bh": "fdr_bh", "by": "fdr_by", "none": None}


def adjust(pvalues: list[float], method: str = "holm") -> list[float]:
    """Multiple-comparison adjusted p-values (statsmodels' Holm or Benjamini-Hochberg);
    undefined (NaN) p-values stay NaN and do not count as tests."""
    if method not in CORRECTIONS:
        raise ValueError(f"correction {method!r}: choose from {', '.join(CORRECTIONS)}")
    from statsmodels.stats.multitest import multipletests

    defined = [i for i, p in enumerate(pvalues) if not math.isnan(p)]
    out = [math.nan] * len(pvalues)
    if not defined:
        return out
    if CORRECTIONS[method] is None:
        for i in defined:
            out[i] = pvalues[i]
        return out
    _, adjusted, _, _ = multipletests([pvalues[i] for i in defined], method=CORRECTIONS[method])
    for i, p in zip(defined, adjusted):
        out[i] = float(p)
    return out
