"""The one rule for comparing two arms: the benchmark instance is the unit.

An arm's results on an instance are not independent draws: with a deterministic model, or
one at temperature 0, the seeds of one instance replay the same episode, and even with
independent seeds they share the instance's difficulty. Counting (instance, seed) pairs as
units multiplies n by the seeds and makes tests reject far more often than their alpha
(33 of 100 null comparisons at alpha 0.05 with 3 replaying seeds). So, everywhere a
comparison is made (the grid's marks, `lifebench compare`, `lifebench check`, the
papers' "ours" columns):

1. within an instance, each seed's scored trials are averaged (the caller has already
   scored trials as the method's protocol says: the best, the first, or every one);
2. then the instance's seeds are averaged: one value per instance and arm;
3. then the two arms are paired over the instances both ran, each instance's two values
   made of as many seeds on either side (`balanced`: the seeds both ran first, then each
   arm's own in order, up to the smaller count), so that a 5-seed mean never meets a 1-seed
   outcome, whose difference is not symmetric under the null; McNemar's exact test where
   each instance has one binary outcome per arm (success, one seed, or seeds that agree),
   else the sign-flip permutation test of the per-instance differences (exact, or its
   saddlepoint approximation);
4. where fewer than half of either arm's instances are shared (none, or a stray overlap),
   the unpaired test over every instance of each arm: Fisher's exact test for binary
   outcomes, else the studentized two-sample permutation test (valid with unequal sizes
   and spreads); the instances only one arm ran are counted either way (`unpaired_a`,
   `unpaired_b`).

The population is the benchmark's instances (its task families, where it has them, are a
fixed design: ALFWorld's six types, ScienceWorld's thirty tasks, a split's targets), so
instances are the unit of the test and of the interval alike. A benchmark that declares
its families sampled (`Benchmark.population = "families"`) gets both at the family level:
the paired differences averaged per family, then tested over families, and intervals
clustered by family (CR2, Bell-McCaffrey degrees of freedom) where the families carry
information (`lifebench.api.stats.informative_clusters`).

Where seeds are independent draws, averaging them first costs a little power against
pairing episodes, and buys a test whose rejection rate is its alpha whatever the seeds
are (both measured in tests/leaderboard/test_instance_rule.py; unequal seeds, partial
overlap, families: tests/leaderboard/test_statistics_round2.py).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any, Callable, Hashable, Iterable, Mapping, Optional, Sequence

from lifebench.api.stats import (TestResult, bounded_interval, clustered_interval, constant,
                                 fisher_exact, informative_clusters, mcnemar_exact,
                                 permutation_test, sign_flip_test, t_interval)


@dataclass(frozen=True)
class InstanceSample:
    """One arm's results with the instance as the unit."""

    values: Mapping[Hashable, float]  # instance -> the mean over its seeds
    counts: Mapping[Hashable, int]  # instance -> the results (episodes, scored trials) behind
    replicated: int = 0  # instances with two seeds or more
    agreeing: int = 0  # of those, the instances whose seeds all had the same value
    # instance -> seed -> (that seed's mean, the results behind it): what pairing balances
    seeds: Mapping[Hashable, Mapping[Hashable, tuple[float, int]]] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def results(self) -> int:
        return sum(self.counts.values())

    @property
    def binary(self) -> bool:
        """Every instance's value is 0 or 1: one binary outcome per instance."""
        return all(v in (0.0, 1.0) for v in self.values.values())


def instance_sample(observations: Iterable[tuple[Hashable, Hashable, float]]) -> InstanceSample:
    """(instance, seed, value) triples -> the arm's sample: per seed the mean of its values
    (its scored trials), then per instance the mean over its seeds."""
    per_seed: dict[tuple[Hashable, Hashable], list[float]] = {}
    for instance, seed, value in observations:
        _add(per_seed, (instance, seed), value)
    return _sample(per_seed)


def records_sample(records: Iterable[Any], value: Callable[[Any], Optional[float]],
                   instance: Callable[[Any], Hashable] = lambda r: r.instance_id) -> InstanceSample:
    """`instance_sample` of records (anything with `instance_id` and `seed`): `value` gives
    a record's number, or None to leave it out; `instance` its unit (e.g. (split,
    instance_id) where a table pools splits)."""
    per_seed: dict[tuple[Hashable, Hashable], list[float]] = {}
    for record in records:
        number = value(record)
        if number is not None:
            _add(per_seed, (instance(record), record.seed), number)
    return _sample(per_seed)


def _add(per_seed: dict[tuple[Hashable, Hashable], list[float]], key: tuple[Hashable, Hashable],
         value: float) -> None:
    totals = per_seed.get(key)
    if totals is None:
        per_seed[key] = [float(value), 1.0]
    else:
        totals[0] += value
        totals[1] += 1.0


def _sample(per_seed: dict[tuple[Hashable, Hashable], list[float]]) -> InstanceSample:
    """Each seed's mean (of its values' sum and count), averaged per instance."""
    by_instance: dict[Hashable, list[float]] = defaultdict(list)
    counts: dict[Hashable, int] = defaultdict(int)
    seeds: dict[Hashable, dict[Hashable, tuple[float, int]]] = defaultdict(dict)
    for (instance, seed), (total, count) in per_seed.items():
        by_instance[instance].append(total / count)
        counts[instance] += int(count)
        seeds[instance][seed] = (total / count, int(count))
    values, replicated, agreeing = {}, 0, 0
    for instance, means in by_instance.items():
        if len(means) > 1:
            values[instance] = fmean(means)
            replicated += 1
            agreeing += max(means) == min(means)
        else:
            values[instance] = means[0]
    return InstanceSample(values, dict(counts), replicated, agreeing, dict(seeds))


@dataclass(frozen=True)
class ArmComparison:
    """Arm a against arm b under the instance rule."""

    result: TestResult  # its n: the units compared (both arms' where unpaired)
    mean_a: float  # over the instances compared
    mean_b: float
    paired: bool
    results_a: int  # the results behind a's instances compared
    results_b: int
    unpaired_a: int = 0  # instances a ran and b did not (left out of a paired test)
    unpaired_b: int = 0
    diff_se: float = math.nan  # the standard error of mean_a - mean_b
    diff_low: float = math.nan  # its 95% interval (t, on the test's units)
    diff_high: float = math.nan
    unit: str = "instances"  # or "families", where the benchmark samples them


PAIRED_SHARE = 0.5  # below this share of either arm's instances shared: the unpaired test


def compare_arms(a: InstanceSample, b: InstanceSample, binary: bool,
                 alternative: str = "two-sided",
                 families: Optional[Mapping[Hashable, str]] = None) -> ArmComparison:
    """The test of arm a against arm b (`alternative` "greater": a is better), paired over
    the instances both ran (their seeds balanced), unpaired over all where fewer than half
    of either arm's instances are shared. `binary`: the metric is a 0/1 outcome (success).
    `families`: instance -> task family where the benchmark samples families (the unit
    then is the family, where at least two families hold two instances)."""
    shared = sorted(set(a.values) & set(b.values), key=repr)
    only_a, only_b = a.n - len(shared), b.n - len(shared)
    if shared and len(shared) >= PAIRED_SHARE * a.n and len(shared) >= PAIRED_SHARE * b.n:
        pairs = [balanced(a, b, k) for k in shared]
        xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
        diffs = [x - y for x, y in zip(xs, ys)]
        unit = "instances"
        grouped = _family_means(shared, diffs, families)
        if grouped is not None:
            diffs, unit = grouped, "families"
            result = sign_flip_test(diffs, alternative)
        elif binary and _all_binary(xs) and _all_binary(ys):
            result = mcnemar_exact([x == 1.0 for x in xs], [y == 1.0 for y in ys], alternative)
        else:
            result = sign_flip_test(diffs, alternative)
        se, low, high = _agresti_min(xs, ys) if result.test == "mcnemar exact" else _paired_interval(diffs)
        return ArmComparison(result, fmean(xs), fmean(ys), True, sum(p[2] for p in pairs),
                             sum(p[3] for p in pairs), only_a, only_b, se, low, high, unit)
    # unpaired: in a fixed order, so that a Monte Carlo p never depends on the records' order
    keys_a, keys_b = sorted(a.values, key=repr), sorted(b.values, key=repr)
    size = _fewest_seeds(a, b)
    xs, ys = [_first_seeds(a, k, size) for k in keys_a], [_first_seeds(b, k, size) for k in keys_b]
    unit = "instances"
    grouped_a, grouped_b = _family_means(keys_a, xs, families), _family_means(keys_b, ys, families)
    if grouped_a is not None and grouped_b is not None:
        tested_a, tested_b, unit = grouped_a, grouped_b, "families"
        result = permutation_test(tested_a, tested_b, alternative)
    else:
        tested_a, tested_b = xs, ys
        if binary and _all_binary(xs) and _all_binary(ys):
            result = fisher_exact([x == 1.0 for x in xs], [y == 1.0 for y in ys], alternative)
        else:
            result = permutation_test(xs, ys, alternative)
    se, low, high = _agresti_caffo(xs, ys) if result.test == "fisher exact" else \
        _welch_interval(tested_a, tested_b)
    results_a, results_b = (a.results, b.results) if size is None else \
        (_first_seeds_results(a, size), _first_seeds_results(b, size))
    return ArmComparison(result, fmean(xs) if xs else math.nan, fmean(ys) if ys else math.nan,
                         False, results_a, results_b, only_a, only_b, se, low, high, unit)


def _fewest_seeds(a: InstanceSample, b: InstanceSample) -> Optional[int]:
    """The fewest seeds any instance of either arm ran, where instances differ in their
    seed counts (an unpaired test then takes that many from each, so that every instance's
    value is the same kind of mean); None where they all ran as many, or seeds are unknown."""
    counts = {len(s) for sample in (a, b) for s in sample.seeds.values()}
    if len(counts) <= 1 or len(a.seeds) < a.n or len(b.seeds) < b.n:
        return None
    return min(counts)


def _chosen_seeds(sample: InstanceSample, instance: Hashable, size: int) -> list[Hashable]:
    return sorted(sample.seeds[instance], key=repr)[:size]


def _first_seeds(sample: InstanceSample, instance: Hashable, size: Optional[int]) -> float:
    if size is None:
        return sample.values[instance]
    seeds = sample.seeds[instance]
    return fmean(seeds[s][0] for s in _chosen_seeds(sample, instance, size))


def _first_seeds_results(sample: InstanceSample, size: int) -> int:
    return sum(sample.seeds[k][s][1] for k in sample.seeds for s in _chosen_seeds(sample, k, size))


def balanced(a: InstanceSample, b: InstanceSample, instance: Hashable) -> tuple[float, float, int, int]:
    """The two arms' values on `instance` made of the same number of seeds: the seeds both
    ran first, then each arm's own in order, up to the smaller count; with the results
    behind each. Samples built without seeds keep their instance means."""
    mine, theirs = a.seeds.get(instance), b.seeds.get(instance)
    if not mine or not theirs or len(mine) == len(theirs):
        return a.values[instance], b.values[instance], a.counts[instance], b.counts[instance]
    common = sorted(set(mine) & set(theirs), key=repr)
    size = min(len(mine), len(theirs))

    def chosen(seeds: Mapping[Hashable, tuple[float, int]]) -> tuple[float, int]:
        picked = (common + sorted((s for s in seeds if s not in common), key=repr))[:size]
        return fmean(seeds[s][0] for s in picked), sum(seeds[s][1] for s in picked)

    (x, count_a), (y, count_b) = chosen(mine), chosen(theirs)
    return x, y, count_a, count_b


def _family_means(instances: Sequence[Hashable], values: Sequence[float],
                  families: Optional[Mapping[Hashable, str]]) -> Optional[list[float]]:
    """`values` averaged per family, in a fixed order, where `families` is given and at least
    two families hold two of `instances`; else None (the instance is the unit)."""
    if families is None or any(k not in families for k in instances):
        return None
    groups: dict[str, list[float]] = defaultdict(list)
    for instance, value in zip(instances, values):
        groups[str(families[instance])].append(value)
    if sum(len(v) >= 2 for v in groups.values()) < 2:
        return None
    return [fmean(groups[f]) for f in sorted(groups)]


def _paired_interval(diffs: Sequence[float]) -> tuple[float, float, float]:
    """The mean difference's standard error and 95% t interval (n - 1 degrees of freedom)."""
    n = len(diffs)
    if n < 2:
        return math.nan, math.nan, math.nan
    mean = fmean(diffs)
    se = 0.0 if constant(diffs) else math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1) / n)
    half = _t_quantile(n - 1) * se
    return se, mean - half, mean + half


def _agresti_min(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float, float]:
    """Paired proportions' difference: Agresti and Min's interval (half a pair added to each
    cell of the 2 x 2 table), which never collapses to a point when every pair agrees."""
    n = len(xs) + 2.0
    a_only = (sum(1 for x, y in zip(xs, ys) if x > y) + 0.5) / n
    b_only = (sum(1 for x, y in zip(xs, ys) if y > x) + 0.5) / n
    centre = a_only - b_only
    se = math.sqrt(max(0.0, a_only + b_only - centre * centre) / n)
    return se, max(-1.0, centre - 1.959964 * se), min(1.0, centre + 1.959964 * se)


def _agresti_caffo(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float, float]:
    """Two independent proportions' difference: Agresti and Caffo's interval (one success
    and one failure added to each arm)."""
    pa, pb = (sum(xs) + 1) / (len(xs) + 2), (sum(ys) + 1) / (len(ys) + 2)
    se = math.sqrt(pa * (1 - pa) / (len(xs) + 2) + pb * (1 - pb) / (len(ys) + 2))
    return se, max(-1.0, pa - pb - 1.959964 * se), min(1.0, pa - pb + 1.959964 * se)


def _welch_interval(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float, float]:
    """mean(xs) - mean(ys)'s unequal-variance standard error and 95% interval (Welch-
    Satterthwaite degrees of freedom)."""
    if len(xs) < 2 or len(ys) < 2:
        return math.nan, math.nan, math.nan
    mx, my = fmean(xs), fmean(ys)
    vx = 0.0 if constant(xs) else sum((x - mx) ** 2 for x in xs) / (len(xs) - 1) / len(xs)
    vy = 0.0 if constant(ys) else sum((y - my) ** 2 for y in ys) / (len(ys) - 1) / len(ys)
    se = math.sqrt(vx + vy)
    if se == 0:
        return 0.0, mx - my, mx - my
    df = (vx + vy) ** 2 / ((vx * vx / (len(xs) - 1) if vx else 0.0) + (vy * vy / (len(ys) - 1) if vy else 0.0))
    half = _t_quantile(df) * se
    return se, mx - my - half, mx - my + half


def _t_quantile(df: float) -> float:
    from scipy import stats

    return float(stats.t.ppf(0.975, df))


def _all_binary(values: list[float]) -> bool:
    return all(v in (0.0, 1.0) for v in values)


def agreement_note(samples: Iterable[tuple[str, InstanceSample]]) -> Optional[str]:
    """The notes' line on seeds: the share of instances whose seeds all had the same
    outcome, per label (samples of one label are counted together) that ran an instance on
    several seeds; None when none did. 100% says the seeds were one run (a deterministic
    model, or temperature 0)."""
    merged: dict[str, list[int]] = {}
    for label, sample in samples:
        if sample.replicated:
            counts = merged.setdefault(label, [0, 0])
            counts[0] += sample.agreeing
            counts[1] += sample.replicated
    if not merged:
        return None
    agreeing, replicated = sum(a for a, _ in merged.values()), sum(r for _, r in merged.values())
    parts = "; ".join(f"{label} {_percent(a, r)} ({a} of {r})" for label, (a, r) in merged.items())
    return (f"same outcome in every seed: {_percent(agreeing, replicated)} of the "
            f"{replicated} instances run on several seeds ({parts}); where it is 100% the "
            f"seeds replayed one run and add nothing: the instance is the unit of n and of "
            f"every test")


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "—"


@dataclass(frozen=True)
class InstanceEstimate:
    """An arm's mean of one metric with its 95% interval, the instance as the unit."""

    mean: float  # over instances, each the mean over its seeds
    low: float
    high: float
    n: int  # instances
    results: int  # the results behind them (instances x seeds, x trials where each counts)
    families: int = 0  # the task families the interval clustered by (0: not clustered)

    @property
    def n_label(self) -> str:
        return n_label(self.n, self.results)


def instance_estimate(records: Sequence[Any], value: Callable[[Any], Optional[float]],
                      bounds: Optional[tuple[float, float]] = None,
                      families_sampled: bool = False) -> InstanceEstimate:
    """The mean of `value` over the records' instances (each the mean over its seeds of
    its scored trials: seeds that replay one episode count once; this is the interval
    clustered by instance) with its 95% interval: `bounded_interval` on `bounds` where the
    metric has them (success: (0, 1)), else a t interval. `families_sampled` (the
    benchmark's `population` is "families"): cluster-robust over task families (records'
    `task_family`) where they carry information (`informative_clusters`)."""
    return sample_estimate(records_sample(records, value), records, bounds, families_sampled)


def sample_estimate(sample: InstanceSample, records: Iterable[Any],
                    bounds: Optional[tuple[float, float]] = None,
                    families_sampled: bool = False) -> InstanceEstimate:
    """`instance_estimate` of a sample already made of `records`."""
    instances = list(sample.values)
    values = [sample.values[i] for i in instances]
    clusters = instance_families(records, instances) if families_sampled else None
    if not informative_clusters(values, clusters):
        clusters = None
    if bounds is not None:
        low, high = bounded_interval(values, *bounds, clusters)
    elif clusters is not None:
        low, high = clustered_interval(values, clusters)
    else:
        low, high = t_interval(values)
    return InstanceEstimate(fmean(values) if values else math.nan, low, high, sample.n,
                            sample.results, len(set(clusters)) if clusters else 0)


def instance_families(records: Iterable[Any], instances: Sequence[Hashable]) -> Optional[list[str]]:
    """The task family of each of `instances`, where several instances share one (the
    coarser unit to cluster by); else None."""
    family = {r.instance_id: getattr(r, "task_family", None) for r in records}
    families = [family.get(i) for i in instances]
    if instances and all(f is not None for f in families) and len(set(families)) < len(instances):
        return [str(f) for f in families]
    return None


def n_label(instances: int, results: int) -> str:
    """n as instances, with the results behind them where they differ: "134 (402 results)"."""
    return f"{instances}" if results == instances else f"{instances} ({results} results)"
