"""The statistics' long simulations (issue 60), the tables docs/cli.md shows ("Statistics"):

1. the rejection rate at alpha 0.05 of every null scenario of
   tests/leaderboard/statistics_scenarios.py (the suite runs each 1,000 times), with more
   replicates and the Monte Carlo scenario the suite leaves out;
2. the coverage of the 95% interval in each design, with more replicates;
3. the Wilson interval's worst coverage for p in (0.001, 0.2) at n = 5 .. 100 (exact
   binomial sums over a grid of p);
4. the saddlepoint's relative error against the exact sign-flip p at 40 differences, and
   against 2,000,000 random sign vectors where the magnitudes are nearly equal;
5. the CPU time of the two large-sample paths: a sign flip of 200,000 continuous
   differences, a two-sample test of 100,000 + 100,000 values (target: 5 s each).

    python tests/perf/sim_statistics.py [--replicates 10000] [--coverage-replicates 20000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "leaderboard"))
from statistics_scenarios import (DESIGNS, NULL_SCENARIOS, SLOW_NULL_SCENARIOS,  # noqa: E402
                                  coverage, monte_carlo_se, rejection_rate)

from lifebench.api import permutation  # noqa: E402
from lifebench.api.stats import wilson_interval  # noqa: E402


def wilson_worst(n: int, grid: np.ndarray) -> tuple[float, float]:
    """The Wilson interval's lowest coverage over `grid` at n, and the p where it is."""
    bounds = [wilson_interval(k, n) for k in range(n + 1)]
    worst, where = 1.0, float("nan")
    for p in grid:
        pmf = stats.binom.pmf(np.arange(n + 1), n, p)
        covered = sum(w for (low, high), w in zip(bounds, pmf) if low <= p <= high)
        if covered < worst:
            worst, where = covered, p
    return worst, where


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=10_000)
    parser.add_argument("--slow-replicates", type=int, default=4_000)
    parser.add_argument("--coverage-replicates", type=int, default=20_000)
    args = parser.parse_args()

    print("| null scenario | replicates | rejected at 0.05 | Monte Carlo SE |\n|---|---|---|---|")
    scenarios = [(name, s, args.replicates) for name, s in NULL_SCENARIOS.items()] + \
        [(name, s, args.slow_replicates) for name, s in SLOW_NULL_SCENARIOS.items()]
    for name, scenario, replicates in scenarios:
        rate = rejection_rate(scenario, replicates, seed=600)
        print(f"| {name} | {replicates:,} | {rate:.4f} | {monte_carlo_se(0.05, replicates):.4f} |", flush=True)

    print("\n| design (families sampled) | replicates | coverage of the 95% interval |\n|---|---|---|")
    for name, design in DESIGNS.items():
        print(f"| {name} | {args.coverage_replicates:,} | "
              f"{coverage(design, args.coverage_replicates, seed=601):.4f} |", flush=True)

    print("\n| n | Wilson's worst coverage, p in (0.001, 0.2) | at p |\n|---|---|---|")
    grid = np.linspace(0.001, 0.2, 400)
    for n in (5, 10, 20, 50, 100):
        worst, where = wilson_worst(n, grid)
        print(f"| {n} | {worst:.3f} | {where:.3f} |", flush=True)

    print("\n| 40 differences | exact p | saddlepoint p | relative error |\n|---|---|---|---|")
    rng = np.random.default_rng(602)
    for name, d in {"normal, mean 0.3": rng.normal(0.3, 1, 40), "normal, mean 0.8": rng.normal(0.8, 1, 40),
                    "exponential - 0.5": rng.exponential(1, 40) - 0.5, "t3 + 0.6": rng.standard_t(3, 40) + 0.6,
                    "uniform(5, 6), two negative": rng.uniform(5, 6, 40) * np.where(np.arange(40) < 38, 1, -1)}.items():
        exact, _ = permutation._sign_flip_enumerated(d, float(d.sum()), permutation._tolerance(d))
        approximate = permutation.sign_flip_upper_tail(d, float(d.sum()))
        print(f"| {name} | {exact:.3e} | {approximate:.3e} | {(approximate - exact) / exact:+.2%} |", flush=True)

    print("\n| nearly equal magnitudes (uniform(5, 6)) | 2,000,000 draws' p | saddlepoint p | relative error |"
          "\n|---|---|---|---|")
    rng = np.random.default_rng(604)
    for n, negative in ((40, 8), (40, 12), (60, 25), (100, 42), (200, 84), (400, 168)):
        d = rng.uniform(5, 6, n) * np.where(np.arange(n) < n - negative, 1, -1)
        sampled = float(np.mean(permutation._random_sign_sums(d, 2_000_000, 605) >= d.sum() - 1e-9))
        approximate = permutation.sign_flip_upper_tail(d, float(d.sum()))
        print(f"| {n} differences, {negative} negative | {sampled:.3e} | {approximate:.3e} | "
              f"{(approximate - sampled) / sampled:+.1%} |", flush=True)

    print("\n| large sample | CPU s (one core) | p | null |\n|---|---|---|---|")
    rng = np.random.default_rng(603)
    d = rng.normal(0.002, 1, 200_000)
    started = time.process_time()
    p, null = permutation.sign_flip_pvalue(d)
    print(f"| sign flip, 200,000 continuous differences | {time.process_time() - started:.2f} | {p:.3g} | {null} |")
    a, b = rng.normal(0, 1, 100_000), rng.normal(0.01, 2, 100_000)
    started = time.process_time()
    p, null = permutation.two_sample_pvalue(a, b)
    print(f"| two-sample, 100,000 + 100,000 | {time.process_time() - started:.2f} | {p:.3g} | {null} |")


if __name__ == "__main__":
    main()
