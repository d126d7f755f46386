"""A pilot's per-instance costs carried to the instances it did not play: per cell and in
total, a central estimate and a 90% interval, by a seeded bootstrap over the pilot's
instances.

The model (the plan prints these assumptions under its table):
- a cell's instances are exchangeable: the pilot's first N stand for the rest (a split
  sorted by task type or difficulty biases the estimate, and no interval can show it);
- an instance either runs an episode to its step budget ("long": a failure that never
  ends, the costliest case) or ends before it. Of the pilot's n instances k were long;
  the share of long ones among the rest is uncertain with a small pilot, and is taken
  from Jeffreys' Beta(k + 1/2, n - k + 1/2): its mean, (k + 1/2) / (n + 1), is the central
  estimate's share (one half without a pilot, as the scripted estimate assumes, moving to
  k / n as the pilot grows). A long instance costs what the pilot's long ones did, or, if
  it had none, every trial at the full budget (`PilotSample.long_cost`);
- an instance that ends early costs its cell's level times a factor of its own: on the
  log scale, log(1 + cost) = level + r. The spread of r is taken to be the same in every
  cell, so the residuals of every cell's early-ending pilot instances around their cell's
  mean (widened by sqrt(n/(n-1)), for the mean they were taken around) make one pool: with
  a pilot of 2 instances a cell alone would have one spread to go on;
- the same instance costs alike for every method: the cells of one benchmark split draw
  the same residuals, and the same instances run long, in a replicate, so their errors add
  up in the total, as they do.

A replicate draws, for each benchmark split, n residuals for the luck of the pilot's own
instances and, for each instance still to play, whether it runs long and a residual; a
cell's remaining cost is the sum over those instances of its long cost or
exp(level - mean(pilot draws) + r) - 1. The interval runs from the 5th to the 95th
percentile of the replicates (widened to hold the central estimate).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Hashable

import numpy as np

REPLICATES = 2000
SEED = 0  # the same pilot gives the same plan
LEVEL = 0.90  # the interval's coverage


@dataclass(frozen=True)
class Estimate:
    """A central estimate and the interval (or range) around it."""

    central: float
    low: float
    high: float

    @classmethod
    def exact(cls, value: float) -> "Estimate":
        return cls(value, value, value)

    def plus(self, other: "Estimate") -> "Estimate":
        """The sum, its bounds added (a conservative interval of a sum)."""
        return Estimate(self.central + other.central, self.low + other.low, self.high + other.high)

    def scaled(self, factor: float) -> "Estimate":
        return Estimate(self.central * factor, self.low * factor, self.high * factor)


@dataclass(frozen=True)
class PilotSample:
    """One cell's pilot: each pilot instance's costs (metric -> value, every trial and
    attempt summed), the instances still to play, and the benchmark split they share
    with the other cells of that split."""

    group: Hashable
    units: tuple[dict[str, float], ...]
    remaining: float
    long: tuple[bool, ...] = ()  # per unit: an episode of it ran to its budget
    long_cost: dict[str, float] = field(default_factory=dict)  # an instance at its budget
    # The cell stops an instance at its first success: a long pilot instance may have won a
    # later trial, while one still to play may lose every trial at its budget, so a long
    # instance costs at least `long_cost`.
    stops_at_success: bool = False

    @property
    def is_long(self) -> np.ndarray:
        return np.array(self.long or (False,) * len(self.units), dtype=bool)

    @property
    def budgeted(self) -> bool:
        """Whether an instance can run long (an episode with a step budget; a context build
        has none)."""
        return bool(self.long_cost) or any(self.long)

    @property
    def long_share(self) -> tuple[float, float]:
        """Jeffreys' Beta parameters of the share of long instances."""
        k = int(self.is_long.sum())
        return k + 0.5, len(self.units) - k + 0.5

    @property
    def mean_long_share(self) -> float:
        a, b = self.long_share
        return a / (a + b) if self.budgeted else 0.0

    def values(self, metric: str) -> tuple[np.ndarray, float]:
        """The early-ending units' costs, and what a long instance costs."""
        values = np.array([u.get(metric, 0.0) for u in self.units], dtype=float)
        longs = values[self.is_long]
        long = float(longs.mean()) if len(longs) else self.long_cost.get(metric, 0.0)
        if self.stops_at_success:
            long = max(long, self.long_cost.get(metric, 0.0))
        return values[~self.is_long], long

    def central(self, metric: str) -> float:
        regular, long = self.values(metric)
        share = self.mean_long_share
        typical = float(regular.mean()) if len(regular) else long
        return self.remaining * ((1 - share) * typical + share * long)


@dataclass(frozen=True)
class Extrapolation:
    cells: dict[Hashable, dict[str, Estimate]]
    total: dict[str, Estimate]
    residuals: dict[str, int]  # per metric, the pool's size (0: no spread to draw from)


def extrapolate(samples: dict[Hashable, PilotSample], metrics: tuple[str, ...],
                replicates: int = REPLICATES, seed: int = SEED) -> Extrapolation:
    """Every sample's remaining cost per metric, and the total's, as `Estimate`s."""
    rng = np.random.default_rng(seed)
    samples = dict(sorted(samples.items(), key=lambda item: repr(item[0])))  # a fixed order
    groups = sorted({s.group for s in samples.values()}, key=repr)
    # Uniform draws per benchmark split, shared by its cells and by every metric (an
    # instance that costs many calls costs many tokens too): the pilot's luck, and for each
    # instance to play, whether it runs long and its residual.
    draws = {}
    for group in groups:
        members = [s for s in samples.values() if s.group == group]
        n = max(len(s.units) for s in members)
        ahead = max(math.ceil(s.remaining) for s in members)
        draws[group] = (rng.random((replicates, n)), rng.random((replicates, ahead)),
                        rng.random((replicates, ahead)))
    shares = {key: rng.beta(*s.long_share, size=replicates) if s.budgeted else np.zeros(replicates)
              for key, s in samples.items()}
    cells: dict[Hashable, dict[str, Estimate]] = {key: {} for key in samples}
    total: dict[str, Estimate] = {}
    sizes: dict[str, int] = {}
    for metric in metrics:
        pool = _pool(samples, metric)
        sizes[metric] = len(pool)
        replicated = np.zeros(replicates)
        central_total = 0.0
        for key, sample in samples.items():
            central = sample.central(metric) if sample.units else 0.0
            central_total += central
            regular, long = sample.values(metric)
            if not sample.units or sample.remaining <= 0 or not (regular.any() or long):
                cells[key][metric] = Estimate.exact(central)  # nothing spent: nothing to spread
                continue
            luck, runs_long, residual = draws[sample.group]
            count = math.ceil(sample.remaining)
            if len(regular) and len(pool):
                level = float(np.log1p(regular).mean())
                shift = pool[_indices(luck[:, :len(regular)], len(pool))].mean(axis=1)
                typical = np.clip(np.expm1(level - shift[:, None]
                                           + pool[_indices(residual[:, :count], len(pool))]), 0.0, None)
            else:  # no spread to draw from: the early-ending instances at their mean
                typical = np.full((replicates, count), float(regular.mean()) if len(regular) else long)
            spent = np.where(runs_long[:, :count] < shares[key][:, None], long, typical)
            spent_sum = spent.sum(axis=1) * (sample.remaining / count)
            replicated += spent_sum
            cells[key][metric] = _interval(central, spent_sum)
        total[metric] = _interval(central_total, replicated)
    return Extrapolation(cells, total, sizes)


def _pool(samples: dict[Hashable, PilotSample], metric: str) -> np.ndarray:
    """The residuals of log(1 + cost) around each cell's mean, from the early-ending
    instances of cells with two or more that spent something on `metric`, each widened by
    sqrt(n/(n-1))."""
    out = []
    for sample in samples.values():
        regular, _ = sample.values(metric)
        values = np.log1p(regular)
        if len(values) >= 2 and values.any():
            out.append((values - values.mean()) * math.sqrt(len(values) / (len(values) - 1)))
    return np.concatenate(out) if out else np.zeros(0)


def _indices(uniform: np.ndarray, size: int) -> np.ndarray:
    return np.minimum((uniform * size).astype(int), size - 1)


def _interval(central: float, replicated: np.ndarray) -> Estimate:
    tail = (1 - LEVEL) / 2 * 100
    low, high = np.percentile(replicated, [tail, 100 - tail])
    return Estimate(central, min(float(low), central), max(float(high), central))
