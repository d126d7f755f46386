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
3. then the two arms are paired over the instances both ran: McNemar's exact test where
   each instance has one binary outcome per arm (success, one seed, or seeds that agree),
   else the exact (or seeded Monte Carlo) sign-flip permutation test of the per-instance
   differences;
4. where no instance matches, the unpaired fallback takes the same per-instance values:
   Fisher's exact test for binary outcomes, else the two-sample permutation test.

Where seeds are independent draws, averaging them first costs a little power against
pairing episodes, and buys a test whose rejection rate is its alpha whatever the seeds
are (both measured in tests/leaderboard/test_instance_rule.py).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from statistics import fmean
from typing import Any, Callable, Hashable, Iterable, Mapping, Optional, Sequence

from lifebench.api.stats import (TestResult, bounded_interval, clustered_interval, fisher_exact,
                                 mcnemar_exact, permutation_test, sign_flip_test, t_interval)


@dataclass(frozen=True)
class InstanceSample:
    """One arm's results with the instance as the unit."""

    values: Mapping[Hashable, float]  # instance -> the mean over its seeds
    counts: Mapping[Hashable, int]  # instance -> the results (episodes, scored trials) behind
    replicated: int = 0  # instances with two seeds or more
    agreeing: int = 0  # of those, the instances whose seeds all had the same value

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
    for (instance, _), (total, count) in per_seed.items():
        by_instance[instance].append(total / count)
        counts[instance] += int(count)
    values, replicated, agreeing = {}, 0, 0
    for instance, means in by_instance.items():
        if len(means) > 1:
            values[instance] = fmean(means)
            replicated += 1
            agreeing += max(means) == min(means)
        else:
            values[instance] = means[0]
    return InstanceSample(values, dict(counts), replicated, agreeing)


@dataclass(frozen=True)
class ArmComparison:
    """Arm a against arm b under the instance rule."""

    result: TestResult  # its n: the instances compared (both arms' where unpaired)
    mean_a: float  # over the instances compared
    mean_b: float
    paired: bool
    results_a: int  # the results behind a's instances compared
    results_b: int


def compare_arms(a: InstanceSample, b: InstanceSample, binary: bool,
                 alternative: str = "two-sided") -> ArmComparison:
    """The test of arm a against arm b (`alternative` "greater": a is better), paired over
    the instances both ran, unpaired where they share none. `binary`: the metric is a
    0/1 outcome (success)."""
    matched = sorted(set(a.values) & set(b.values), key=repr)
    if matched:
        xs, ys = [a.values[k] for k in matched], [b.values[k] for k in matched]
        if binary and _all_binary(xs) and _all_binary(ys):
            result = mcnemar_exact([x == 1.0 for x in xs], [y == 1.0 for y in ys], alternative)
        else:
            result = sign_flip_test([x - y for x, y in zip(xs, ys)], alternative)
        return ArmComparison(result, fmean(xs), fmean(ys), True,
                             sum(a.counts[k] for k in matched), sum(b.counts[k] for k in matched))
    # unpaired: in a fixed order, so that a Monte Carlo p never depends on the records' order
    xs = [a.values[k] for k in sorted(a.values, key=repr)]
    ys = [b.values[k] for k in sorted(b.values, key=repr)]
    if binary and _all_binary(xs) and _all_binary(ys):
        result = fisher_exact([x == 1.0 for x in xs], [y == 1.0 for y in ys], alternative)
    else:
        result = permutation_test(xs, ys, alternative)
    return ArmComparison(result, fmean(xs) if xs else math.nan, fmean(ys) if ys else math.nan,
                         False, a.results, b.results)


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
                      bounds: Optional[tuple[float, float]] = None) -> InstanceEstimate:
    """The mean of `value` over the records' instances (each the mean over its seeds of
    its scored trials: seeds that replay one episode count once; this is the interval
    clustered by instance) with its 95% interval: `bounded_interval` on `bounds` where the
    metric has them (success: (0, 1)), else a t interval; cluster-robust over task families
    where several instances share one (records' `task_family`)."""
    return sample_estimate(records_sample(records, value), records, bounds)


def sample_estimate(sample: InstanceSample, records: Iterable[Any],
                    bounds: Optional[tuple[float, float]] = None) -> InstanceEstimate:
    """`instance_estimate` of a sample already made of `records`."""
    instances = list(sample.values)
    values = [sample.values[i] for i in instances]
    clusters = instance_families(records, instances)
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
