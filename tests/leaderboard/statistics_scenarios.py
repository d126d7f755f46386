"""Seeded simulations of the comparison rule and the intervals (`lifebench.api.comparison`,
`lifebench.api.stats`): null scenarios, whose rejection rate at alpha must stay at alpha,
and interval designs, whose coverage must stay at 0.95. The suite runs each with 1,000
replicates or more (tests/leaderboard/test_statistics_round2.py); tests/perf/
sim_statistics.py runs them longer and prints the table docs/cli.md shows."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from lifebench.api.comparison import compare_arms, instance_sample
from lifebench.api.stats import bounded_interval, informative_clusters

ALPHA = 0.05


def arm(rng: np.random.Generator, probabilities: np.ndarray, seeds: int, replay: bool = False,
        names: list[str] | None = None) -> list[tuple[str, int, float]]:
    """(instance, seed, success) of one arm: each instance's success drawn once and replayed
    by every seed (temperature 0), or drawn anew per seed."""
    names = names or [f"i{i}" for i in range(len(probabilities))]
    draws = rng.random((len(probabilities), 1 if replay else seeds)) < probabilities[:, None]
    return [(names[i], seed, float(draws[i, 0 if replay else seed]))
            for i in range(len(probabilities)) for seed in range(seeds)]


def unequal_seeds(low: float, high: float) -> Callable[[np.random.Generator], float]:
    """40 instances; a ran 5 independent seeds, b 1 (seed 0); the same success rates."""
    def replicate(rng: np.random.Generator) -> float:
        p = rng.uniform(low, high, 40)
        return compare_arms(instance_sample(arm(rng, p, 5)), instance_sample(arm(rng, p, 1)),
                            binary=True).result.p
    return replicate


def replaying_against_independent(rng: np.random.Generator) -> float:
    """40 instances, 3 seeds each: a's replay one draw (temperature 0), b's are independent."""
    p = rng.uniform(0.1, 0.7, 40)
    return compare_arms(instance_sample(arm(rng, p, 3, replay=True)),
                        instance_sample(arm(rng, p, 3)), binary=True).result.p


def unpaired_unequal(rng: np.random.Generator) -> float:
    """No shared instance: 10 instances x 1 seed against 60 others x 5 seeds, success rates
    in (0, 0.3) for both: unequal sizes, and (means of 5 against single outcomes) spreads."""
    p_a, p_b = rng.uniform(0, 0.3, 10), rng.uniform(0, 0.3, 60)
    a = arm(rng, p_a, 1, names=[f"a{i}" for i in range(10)])
    b = arm(rng, p_b, 5, names=[f"b{i}" for i in range(60)])
    return compare_arms(instance_sample(a), instance_sample(b), binary=True).result.p


def unpaired_continuous(small: int, large: int) -> Callable[[np.random.Generator], float]:
    """No shared instance: scores of `small` instances with sd 3 against `large` with sd 1,
    equal means (the Behrens-Fisher case a plain permutation test fails)."""
    def replicate(rng: np.random.Generator) -> float:
        a = [(f"a{i}", 0, float(v)) for i, v in enumerate(rng.normal(0, 3, small))]
        b = [(f"b{i}", 0, float(v)) for i, v in enumerate(rng.normal(0, 1, large))]
        return compare_arms(instance_sample(a), instance_sample(b), binary=False).result.p
    return replicate


def shared_family_difficulty(rng: np.random.Generator) -> float:
    """6 task families of 8 instances, each family's difficulty a random effect both arms
    share (logit sd 1.5), 3 independent seeds."""
    family = np.repeat(rng.normal(0, 1.5, 6), 8)
    p = 1 / (1 + np.exp(-(family + rng.normal(0, 0.5, 48))))
    return compare_arms(instance_sample(arm(rng, p, 3)), instance_sample(arm(rng, p, 3)),
                        binary=True).result.p


def fixed_family_interaction(rng: np.random.Generator, effects=np.array([0.15, -0.1, 0.05, -0.05, 0.1, -0.15])) -> float:
    """ALFWorld's case: 6 fixed task types of 8 instances; a is better on some types and
    worse on others, by effects that average 0 (the benchmark's types are its design, not a
    sample: the null is the average difference over its instances)."""
    base = np.repeat(np.array([0.3, 0.5, 0.4, 0.6, 0.45, 0.55]), 8)
    return compare_arms(instance_sample(arm(rng, base + np.repeat(effects, 8), 1)),
                        instance_sample(arm(rng, base, 1)), binary=True).result.p


NULL_SCENARIOS: dict[str, Callable[[np.random.Generator], float]] = {
    "seeds replaying against independent seeds": replaying_against_independent,
    "unequal seeds (5 against 1), rates in (0, 0.1)": unequal_seeds(0.0, 0.1),
    "unequal seeds (5 against 1), rates in (0.3, 0.7)": unequal_seeds(0.3, 0.7),
    "unpaired: 10 x 1 seed against 60 x 5 seeds": unpaired_unequal,
    "unpaired: 6 scores sd 3 against 14 sd 1 (exact)": unpaired_continuous(6, 14),
    "task families with a shared difficulty effect": shared_family_difficulty,
    "fixed task types with a type x method effect averaging 0": fixed_family_interaction,
}
SLOW_NULL_SCENARIOS = {  # Monte Carlo per replicate: tests/perf/sim_statistics.py only
    "unpaired: 12 scores sd 3 against 40 sd 1 (monte carlo)": unpaired_continuous(12, 40),
}


def rejection_rate(scenario: Callable[[np.random.Generator], float], replicates: int,
                   seed: int = 60) -> float:
    rng = np.random.default_rng(seed)
    return sum(scenario(rng) < ALPHA for _ in range(replicates)) / replicates


@dataclass(frozen=True)
class Design:
    """Task families of the given sizes, sampled: each family's logit success offset drawn
    with sd `family_sd` (0: no family effect) around `logit`; one binary outcome per
    instance; the interval is `bounded_interval` clustered where `informative_clusters`."""

    sizes: tuple[int, ...]
    family_sd: float
    logit: float = -0.4

    def truth(self) -> float:
        """The population's success rate: E[logistic(logit + u)], u ~ N(0, family_sd^2)."""
        nodes, weights = np.polynomial.hermite_e.hermegauss(60)
        rates = 1 / (1 + np.exp(-(self.logit + self.family_sd * nodes)))
        return float(np.sum(weights * rates) / np.sum(weights))

    def covered(self, rng: np.random.Generator, truth: float) -> bool:
        offsets = np.repeat(rng.normal(0, self.family_sd, len(self.sizes)), self.sizes)
        p = 1 / (1 + np.exp(-(self.logit + offsets)))
        values = [float(v) for v in rng.random(p.size) < p]
        clusters = [f"f{i}" for i, size in enumerate(self.sizes) for _ in range(size)]
        low, high = bounded_interval(values, 0.0, 1.0,
                                     clusters if informative_clusters(values, clusters) else None)
        return low <= truth <= high


DESIGNS: dict[str, Design] = {
    "one family of 80 and 20 singletons": Design((80,) + (1,) * 20, 0.0),
    "families of 80, 10, 5, 3, 2, no family effect": Design((80, 10, 5, 3, 2), 0.0),
    "families of 80, 10, 5, 3, 2, a family effect": Design((80, 10, 5, 3, 2), 0.5),
    "10 families of 10, no family effect": Design((10,) * 10, 0.0),
    "10 families of 10, a family effect": Design((10,) * 10, 0.5),
    "25 families of 4, a family effect": Design((4,) * 25, 0.5),
}


def coverage(design: Design, replicates: int, seed: int = 61) -> float:
    rng = np.random.default_rng(seed)
    truth = design.truth()
    return sum(design.covered(rng, truth) for _ in range(replicates)) / replicates


def monte_carlo_se(rate: float, replicates: int) -> float:
    return math.sqrt(rate * (1 - rate) / replicates)
