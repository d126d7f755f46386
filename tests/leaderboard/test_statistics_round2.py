"""The comparison rule where real grids strain it (issue 60): arms that ran different seeds,
arms that share few instances, task families, numerics, p-values small enough for a large
family of tests, per-metric multiplicity, the paired difference's interval; a seeded null
simulation of each scenario and a coverage simulation of the intervals
(`statistics_scenarios`), each reproducer of the audit with the answer it must give."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from lifebench.api import EpisodeRecord
from lifebench.api import permutation, stats as ours
from lifebench.api.comparison import compare_arms, instance_sample

sys.path.insert(0, str(Path(__file__).resolve().parent))
from statistics_scenarios import (DESIGNS, NULL_SCENARIOS, coverage, monte_carlo_se,  # noqa: E402
                                  rejection_rate)

NULL_REPLICATES = 1000
COVERAGE_REPLICATES = 4000
BALANCED = {"10 families of 10, no family effect", "10 families of 10, a family effect",
            "25 families of 4, a family effect"}


@pytest.mark.parametrize("scenario", list(NULL_SCENARIOS))
def test_under_each_null_the_rejection_rate_is_at_most_alpha(scenario):
    rate = rejection_rate(NULL_SCENARIOS[scenario], NULL_REPLICATES)
    assert rate <= 0.05 + 2 * monte_carlo_se(0.05, NULL_REPLICATES), rate


@pytest.mark.parametrize("design", list(DESIGNS))
def test_the_intervals_keep_their_coverage(design):
    rate = coverage(DESIGNS[design], COVERAGE_REPLICATES)
    if design in BALANCED:
        assert abs(rate - 0.95) <= 0.01, rate
    else:
        assert rate >= 0.93, rate


def episodes(method: str, instances: list[str], seeds: int, success, split: str = "val") -> list[dict]:
    return [EpisodeRecord(
        run_id="r", benchmark="plancraft", split=split, instance_id=instance, method=method,
        method_config_hash=method[:4], model=None, seed=seed, trial=0, episode_index=i,
        budget_steps=30, steps=5 + seed, success=bool(success(i, seed)), score=float(success(i, seed)),
        status="ok").to_dict() for i, instance in enumerate(instances) for seed in range(seeds)]


def written(rows: list[dict], out: Path) -> Path:
    out.mkdir()
    (out / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return out


def test_unequal_seeds_are_balanced_before_pairing(cli, tmp_path):
    """8 instances: a ran 5 seeds (success on seed i mod 5), b one seed, failing: the old
    rule's 5-seed means against 1-seed outcomes gave p = 0.0078 and a ▼."""
    names = [f"I{i:03d}" for i in range(8)]
    rows = episodes("alpha", names, 5, lambda i, s: s == i % 5) + episodes("beta", names, 1, lambda i, s: False)
    out = written(rows, tmp_path / "run")
    [c] = json.loads(cli("compare", str(out), "--metric", "success", "--format", "json").stdout)
    assert c["p"] >= 0.05 and c["results_a"] == c["results_b"] == 8 and c["test"] == "mcnemar exact"
    board = cli("leaderboard", str(out), "--baseline", "alpha", "--no-plots")
    assert board.returncode == 0, board.stderr
    row = next(line for line in board.stdout.splitlines() if line.startswith("| beta"))
    assert "▼" not in row and "▲" not in row


def test_one_shared_instance_gives_the_unpaired_test_and_says_so(cli, tmp_path):
    """a succeeds on I000-I039, b fails on I039-I078: one shared instance used to give a
    paired test with n = 1 and p = 1."""
    rows = episodes("alpha", [f"I{i:03d}" for i in range(40)], 1, lambda i, s: True) \
        + episodes("beta", [f"I{i:03d}" for i in range(39, 79)], 1, lambda i, s: False)
    out = written(rows, tmp_path / "run")
    [c] = json.loads(cli("compare", str(out), "--metric", "success", "--format", "json").stdout)
    assert not c["paired"] and c["test"] == "fisher exact" and c["p"] < 1e-6
    assert (c["unpaired_a"], c["unpaired_b"]) == (39, 39)
    # the difference's interval does not collapse to a point (Agresti-Caffo)
    assert c["diff"] == 1.0 and 0.85 < c["diff_low"] < 0.95 and c["diff_high"] == 1.0 and c["diff_se"] > 0
    table = cli("compare", str(out), "--metric", "success").stdout
    assert " 39/39 " in table and "fewer than half of either arm's instances are shared" in table
    # most instances shared: paired over those, the rest counted
    a = instance_sample([(f"I{i}", 0, float(i % 3 == 0)) for i in range(30)])
    b = instance_sample([(f"I{i}", 0, float(i % 2 == 0)) for i in range(5, 40)])
    mostly = compare_arms(a, b, binary=True)
    assert mostly.paired and mostly.result.n == 25 and (mostly.unpaired_a, mostly.unpaired_b) == (5, 10)


def test_a_constant_sample_gets_the_interval_of_its_proportion():
    assert ours.bounded_interval([0.2] * 8, 0, 1) == pytest.approx(proportion_confint(1.6, 8, method="wilson"))
    assert ours.bounded_interval([0.2] * 8, 0, 1)[0] > 0.03
    assert ours.bounded_interval([0.5] * 8, 0, 1) == pytest.approx(proportion_confint(4, 8, method="wilson"))
    # a constant difference is said to be one, whatever its rounding
    diffs = [0.3 - 0.1] * 5 + [0.7 - 0.5] * 5
    assert math.isinf(ours.sign_flip_test(diffs).effect_size)
    assert math.isnan(ours.paired_t([0.3] * 5 + [0.7] * 5, [0.1] * 5 + [0.5] * 5).p)


def test_nan_and_infinity_are_refused_with_a_clear_error():
    for call in (lambda: ours.sign_flip_test([0.5, math.nan, -0.2]),
                 lambda: ours.permutation_test([0.5, math.nan], [0.1, 0.2]),
                 lambda: permutation.two_sample_pvalue([1.0, 2.0], [math.inf, 0.0]),
                 lambda: ours.bounded_interval([0.1, math.nan], 0, 1),
                 lambda: ours.paired_t([1.0, 2.0, 3.0], [1.0, math.nan, 2.0]),
                 lambda: ours.t_interval([1.0, math.inf])):
        with pytest.raises(ValueError, match="finite numbers"):
            call()


def test_p_values_reach_below_what_a_family_of_250_needs():
    d = np.random.default_rng(60).uniform(5, 6, 40)
    result = ours.sign_flip_test(list(d))
    assert result.test == "sign flip exact" and result.p <= 1e-9  # 2 / 2^40
    # beyond exact enumeration: Monte Carlo drawn again finer, then the saddlepoint
    middling = ours.sign_flip_test(list(np.random.default_rng(61).normal(1.0, 1.0, 100)))
    assert middling.test == "sign flip monte carlo" and middling.p < 0.05 / 250
    strong = ours.sign_flip_test(list(np.random.default_rng(61).normal(1.0, 1.0, 300)))
    assert strong.test == "sign flip saddlepoint" and strong.p < 1e-6
    assert ours.adjust([ours.sign_flip_test(list(d)).p] + [0.5] * 249, "holm")[0] < 0.05
    # the unpaired Monte Carlo draws again, finer, where its first p is small
    far = ours.permutation_test(list(np.random.default_rng(62).normal(0, 1, 30)),
                                list(np.random.default_rng(63).normal(1.5, 1, 40)))
    assert far.test == "studentized permutation monte carlo" and far.p < 0.05 / 250


@pytest.mark.parametrize("shape", ["normal", "exponential", "t3", "one sign"])
def test_the_saddlepoint_is_within_5_percent_of_the_exact_p(shape):
    """At 40 differences, where exact enumeration still runs, down to 1e-9."""
    rng = np.random.default_rng(64)
    draws = {"normal": lambda: rng.normal(0.5, 1, 40), "exponential": lambda: rng.exponential(1, 40) - 0.6,
             "t3": lambda: rng.standard_t(3, 40) + 0.7, "one sign": lambda: rng.uniform(0.1, 1, 40) * np.where(np.arange(40) < 38, 1, -1)}
    d = draws[shape]()
    exact, _ = permutation._sign_flip_enumerated(d, float(d.sum()), permutation._tolerance(d))
    approximate = permutation.sign_flip_upper_tail(d, float(d.sum()))
    assert 1e-12 < exact < 0.5 and approximate == pytest.approx(exact, rel=0.05), (exact, approximate)


def test_the_saddlepoint_on_a_lattice_is_continuity_corrected():
    """Seed means (thirds) at 60 units: against the exact lattice convolution."""
    a = np.random.default_rng(65).integers(-3, 4, 60)
    a = a[a != 0]
    exact = permutation._sign_flip_lattice(a, "greater")
    approximate = permutation.sign_flip_upper_tail(a / 3, float(a.sum()) / 3,
                                                   2 * float(np.gcd.reduce(np.abs(a))) / 3)
    assert approximate == pytest.approx(exact, rel=0.05), (exact, approximate)


def test_a_metric_added_changes_no_other_metrics_adjusted_p(cli, tmp_path):
    names = [f"I{i:03d}" for i in range(30)]
    rows = (episodes("alpha", names, 1, lambda i, s: i % 2) + episodes("beta", names, 1, lambda i, s: i % 3)
            + episodes("gamma", names, 1, lambda i, s: i % 5))
    out = written(rows, tmp_path / "run")

    def adjusted(*metrics: str) -> list[float]:
        shown = json.loads(cli("compare", str(out), *[f"--metric={m}" for m in metrics],
                               "--format", "json").stdout)
        return [c["p_adjusted"] for c in shown if c["metric"] == "success"]

    assert adjusted("success") == adjusted("success", "steps", "score")
    by = json.loads(cli("compare", str(out), "--metric", "success", "--correction", "by",
                        "--format", "json").stdout)
    assert all(c["p_adjusted"] >= c["p"] for c in by)


def test_speed_paths_hold_at_scale():
    """200,000 differences and 100,000 + 100,000 values take the fast paths (the CPU time is
    measured by tests/perf/perf_statistics_speed.py, not asserted here)."""
    rng = np.random.default_rng(66)
    assert permutation.sign_flip_pvalue(rng.normal(0, 1, 200_000))[1] == "saddlepoint"
    assert permutation.two_sample_pvalue(rng.normal(0, 1, 100_000), rng.normal(0, 2, 100_000))[1] \
        == permutation.LARGE_SAMPLE_NULL


def test_families_sampled_are_the_unit_of_tests_and_intervals():
    """A benchmark whose families are a sample: the paired differences averaged per family
    and tested over families; an interval clustered where two families hold two instances."""
    families = {f"i{i}": f"f{i % 4}" for i in range(20)}
    a = instance_sample([(f"i{i}", 0, float(i % 4 < 2)) for i in range(20)])
    b = instance_sample([(f"i{i}", 0, 0.0) for i in range(20)])
    c = compare_arms(a, b, binary=True, families=families)
    assert c.unit == "families" and c.result.n == 4 and c.result.test == "sign flip exact"
    assert c.result.p == 0.5  # two families of four differ: 2 / 2^2
    assert compare_arms(a, b, binary=True).result.n == 20  # instances as the population
    assert ours.informative_clusters([0.0] * 4, ["x", "x", "y", "y"])
    assert not ours.informative_clusters([0.0] * 4, ["x", "x", "y", "z"])
