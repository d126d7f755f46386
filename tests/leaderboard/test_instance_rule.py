"""The instance is the unit of every comparison (`lifebench.api.comparison`), and small
samples get exact tests: a seeded null simulation (the rejection rate stays at alpha with
seeds that replay each instance and with independent ones), the power it costs, the
small-n case through the CLI, and each test against scipy or statsmodels on fixed data."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
from scipy import stats

from lifebench.api import EpisodeRecord
from lifebench.api import permutation, stats as ours
from lifebench.api.comparison import (agreement_note, compare_arms, instance_estimate,
                                      instance_sample, records_sample)

ALPHA = 0.05


def outcomes(rng: np.random.Generator, probabilities: np.ndarray, seeds: int,
             replay: bool) -> list[tuple[str, int, float]]:
    """(instance, seed, success) of one arm: each instance's success drawn once and
    replayed by every seed (temperature 0), or drawn anew per seed."""
    draws = rng.random((len(probabilities), 1 if replay else seeds)) < probabilities[:, None]
    return [(f"i{i}", seed, float(draws[i, 0 if replay else seed]))
            for i in range(len(probabilities)) for seed in range(seeds)]


def rejection_rate(replay: bool, comparisons: int = 2000, instances: int = 40,
                   seeds: int = 3, shift: float = 0.0, unit: str = "instance") -> float:
    """The share of simulated comparisons called significant at ALPHA, two-sided. Both
    arms have per-instance success probabilities (shifted by `shift` for a); `unit`
    "pair" pairs (instance, seed) as the leaderboard did before, "seed0" keeps seed 0 only."""
    rng = np.random.default_rng(46 + replay + 10 * int(100 * shift))
    rejected = 0
    for _ in range(comparisons):
        p = rng.uniform(0.1, 0.7, instances)
        a = outcomes(rng, np.clip(p + shift, 0, 1), seeds, replay)
        b = outcomes(rng, p, seeds, replay)
        if unit == "pair":  # the old rule: every (instance, seed) its own unit
            a, b = [((i, s), 0, v) for i, s, v in a], [((i, s), 0, v) for i, s, v in b]
        elif unit == "seed0":
            a, b = [t for t in a if t[1] == 0], [t for t in b if t[1] == 0]
        result = compare_arms(instance_sample(a), instance_sample(b), binary=True).result
        rejected += result.p < ALPHA
    return rejected / comparisons


@pytest.mark.parametrize("replay", [True, False], ids=["seeds-replay", "seeds-independent"])
def test_under_the_null_the_rejection_rate_is_at_most_alpha(replay):
    rate = rejection_rate(replay)
    standard_error = math.sqrt(ALPHA * (1 - ALPHA) / 2000)
    assert rate <= ALPHA + 2 * standard_error, rate
    if replay:
        # the rule it replaces: (instance, seed) pairs as units triple n for nothing
        assert rejection_rate(replay, comparisons=300, unit="pair") > 0.15


def test_averaging_independent_seeds_keeps_the_power_of_one_seed():
    """+0.2 success on 60 instances, 3 independent seeds: the instance rule detects it at
    least as often as a test on one seed, minus 0.05."""
    averaged = rejection_rate(False, comparisons=400, instances=60, shift=0.2)
    one_seed = rejection_rate(False, comparisons=400, instances=60, shift=0.2, unit="seed0")
    assert averaged >= one_seed - 0.05, (averaged, one_seed)
    assert one_seed > 0.3  # the difference is detectable at all


def record(method: str, instance: str, seed: int, score: float) -> dict:
    return EpisodeRecord(
        run_id="r", benchmark="crafter", split="s", instance_id=instance, method=method,
        method_config_hash="h", model=None, seed=seed, trial=0, episode_index=0,
        budget_steps=30, steps=5, success=False, score=score, status="ok").to_dict()


def test_a_constant_shift_on_two_instances_is_never_significant(cli, tmp_path):
    """2 instances x 3 seeds, every score one point above the baseline's: the old paired
    t-test said p = 0 and the grid marked ▲; no exact test reaches 0.05 at n = 2."""
    rows = [record(method, f"i{i}", seed, 2.0 + i + (method == "better"))
            for method in ("base", "better") for i in range(2) for seed in range(3)]
    out = tmp_path / "run"
    out.mkdir()
    (out / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    board = cli("leaderboard", str(out), "--baseline", "base", "--no-plots")
    assert board.returncode == 0, board.stderr
    cell = next(line for line in board.stdout.splitlines() if line.startswith("| better"))
    assert "▲" not in cell and "▼" not in cell and "n=2 (6 results)" in cell
    assert "significantly better/worse than base" in board.stdout
    compared = cli("compare", str(out), "--metric", "score", "--format", "json")
    [comparison] = json.loads(compared.stdout)
    assert comparison["n"] == 2 and comparison["p"] >= 0.25 and comparison["p"] == 0.5
    assert comparison["test"] == "sign flip exact" and comparison["results_a"] == 6
    # seeds that replay one run are said to: the share of instances whose seeds agreed
    assert "same outcome in every seed: 100% of the 4 instances" in board.stdout
    markdown = cli("compare", str(out), "--metric", "score").stdout
    assert "| 2 (6 results) |" in markdown and "note: n: instances" in markdown
    # a baseline that ran nothing here: one line, exit 2
    wrong = cli("leaderboard", str(out), "--baseline", "bsae", "--no-plots")
    assert wrong.returncode == 2 and "did you mean 'base'" in wrong.stderr
    assert len(wrong.stderr.strip().splitlines()) == 1


def test_sign_flip_equals_scipys_exact_permutation_test():
    """Each way the null is computed (lattice convolution, enumeration, Monte Carlo)
    against scipy's exact sign-flip distribution."""
    rng = np.random.default_rng(7)

    def scipy_p(d, alternative):
        return stats.permutation_test((d,), lambda x, axis: np.sum(x, axis=axis),
                                      permutation_type="samples", n_resamples=np.inf,
                                      alternative=alternative).pvalue

    cases = {"lattice (thirds)": rng.integers(-3, 4, 14) / 3,
             "enumeration": rng.normal(0.4, 1, 13),
             "lattice (scores)": rng.integers(-40, 60, 12).astype(float)}
    for name, d in cases.items():
        for alternative in permutation.ALTERNATIVES:
            p, null = permutation.sign_flip_pvalue(d, alternative)
            assert null == "exact" and p == pytest.approx(scipy_p(d, alternative)), name
    d = rng.normal(0.3, 1, 18)  # 2^18 sign vectors: the two halves' sums met in the middle
    p, null = permutation.sign_flip_pvalue(d)
    assert null == "exact" and p == pytest.approx(scipy_p(d, "two-sided"))
    assert permutation.sign_flip_pvalue(d[::-1])[0] == pytest.approx(p)  # whatever the order


def test_two_sample_permutation_equals_scipy():
    rng = np.random.default_rng(8)
    a, b = rng.normal(0, 1, 7), rng.normal(0.8, 1, 8)
    def welch(x, y, axis):  # the studentized statistic
        return stats.ttest_ind(x, y, axis=axis, equal_var=False).statistic

    b = b * 3  # unequal spreads: the studentized order differs from the means'
    for alternative in permutation.ALTERNATIVES:
        theirs = stats.permutation_test((a, b), welch, permutation_type="independent",
                                        n_resamples=np.inf, alternative=alternative)
        assert permutation.two_sample_pvalue(a, b, alternative) == \
            (pytest.approx(theirs.pvalue), "exact")
    a, b = rng.normal(0, 1, 40), rng.normal(0.5, 1, 45)  # Monte Carlo near Welch's
    p, null = permutation.two_sample_pvalue(a, b)
    assert null.startswith("monte carlo") and p == pytest.approx(stats.ttest_ind(a, b).pvalue, abs=0.01)


def test_no_test_returns_p_zero():
    """The smallest p is what the null distribution allows: 2 / 2^n two-sided."""
    assert ours.sign_flip_test([1.0, 1.0]).p == 0.5
    assert ours.sign_flip_test([1.0, 1.0], "greater").p == 0.25
    assert ours.sign_flip_test([3.0] * 30).p == pytest.approx(2 / 2 ** 30)
    assert ours.sign_flip_test(list(np.linspace(1, 2, 40) ** 1.5)).p == pytest.approx(2 / 2 ** 40)
    # Monte Carlo (41 to 200 differences): never below its refined floor
    assert ours.sign_flip_test(list(np.linspace(1, 2, 60) ** 1.5)).p == \
        pytest.approx(2 / (permutation.REFINED_RESAMPLES + 1))
    # the saddlepoint's p never below the one sign vector's share, nor 0
    assert ours.sign_flip_test(list(np.linspace(1, 2, 250) ** 1.5)).p == pytest.approx(2 / 2 ** 250)
    assert ours.sign_flip_test([1.5] * 3000).p > 0
    assert ours.mcnemar_exact([True, True], [False, False]).p == 0.5
    assert ours.permutation_test([1.0, 1.0], [0.0, 0.0]).p == pytest.approx(2 / 6)
    assert ours.permutation_test([1.0] * 200, [0.0] * 200).p > 0
    # the t-tests are undefined without spread, not p = 0
    assert math.isnan(ours.paired_t([2.0, 3.0], [1.0, 2.0]).p)
    assert math.isnan(ours.welch_t([1.0, 1.0], [0.0, 0.0]).p)
    assert math.isnan(ours.student_t([1.0, 1.0, 1.0], [0.0, 0.0]).p)


def test_binary_outcomes_go_to_mcnemar_and_it_equals_statsmodels():
    from statsmodels.stats.contingency_tables import mcnemar

    rng = random.Random(9)
    # one seed, or seeds that replay: one binary outcome per instance and arm
    a = [(f"i{i}", s, float(rng.random() < 0.7)) for i in range(30) for s in range(1)]
    b = [(i, s, float(v if rng.random() < 0.6 else rng.random() < 0.4)) for i, s, v in a]
    replayed = [(i, s, v) for i, _, v in a for s in range(3)]
    x, y = instance_sample(a), instance_sample(b)
    c = compare_arms(instance_sample(replayed), y, binary=True)
    table = [[sum(x.values[k] and y.values[k] for k in x.values),
              sum(x.values[k] and not y.values[k] for k in x.values)],
             [sum(y.values[k] and not x.values[k] for k in x.values),
              sum(not x.values[k] and not y.values[k] for k in x.values)]]
    assert c.result.test == "mcnemar exact" and c.result.n == 30
    assert c.result.p == pytest.approx(mcnemar(table, exact=True).pvalue)
    assert (c.results_a, c.results_b) == (30, 30)  # as many seeds on either side: seed 0
    # seeds that disagree: the sign-flip test on the per-instance means
    mixed = a[:10] + [(i, 1, 1 - v) for i, _, v in a[:10]] + a[10:]
    both = b[:10] + [(i, 1, v) for i, _, v in b[:10]] + b[10:]
    assert compare_arms(instance_sample(mixed), instance_sample(both), binary=True).result.test \
        == "sign flip exact"
    # against one seed, a's seed 0 alone meets b's: binary again
    assert compare_arms(instance_sample(mixed), y, binary=True).result.test == "mcnemar exact"
    # no shared instance: Fisher's exact test on the instances' outcomes
    other = instance_sample([(f"j{i}", 0, v) for i, _, v in b])
    unpaired = compare_arms(x, other, binary=True)
    assert not unpaired.paired and unpaired.result.test == "fisher exact"


def test_seeds_are_averaged_within_an_instance_and_agreement_is_counted():
    sample = instance_sample([("a", 0, 1.0), ("a", 1, 0.0), ("a", 1, 1.0),  # seed 1: 2 trials
                              ("b", 0, 1.0), ("b", 1, 1.0), ("c", 0, 0.0)])
    assert sample.values == {"a": pytest.approx(0.75), "b": 1.0, "c": 0.0}
    assert (sample.n, sample.results, sample.replicated, sample.agreeing) == (3, 6, 2, 1)
    note = agreement_note([("react", sample), ("react", sample), ("random", instance_sample([]))])
    assert note.startswith("same outcome in every seed: 50% of the 4 instances run on several "
                           "seeds (react 50% (2 of 4))")
    assert agreement_note([("x", instance_sample([("a", 0, 1.0)]))]) is None


def test_the_interval_counts_instances_not_replayed_seeds():
    """Three seeds replaying 40 instances give the interval of the 40 instances, not of
    120 results (which would be ~sqrt(3) narrower)."""
    rng = random.Random(10)
    one = [EpisodeRecord(run_id="r", benchmark="b", split="s", instance_id=f"i{i}", method="m",
                         method_config_hash="h", model=None, seed=0, trial=0, episode_index=i,
                         budget_steps=9, steps=3, success=rng.random() < 0.4, score=0.0,
                         status="ok") for i in range(40)]
    three = [EpisodeRecord(**{**r.__dict__, "seed": seed}) for r in one for seed in range(3)]
    single = instance_estimate(one, lambda r: float(r.success), (0.0, 1.0))
    replayed = instance_estimate(three, lambda r: float(r.success), (0.0, 1.0))
    assert (replayed.low, replayed.high) == pytest.approx((single.low, single.high), abs=0.02)
    assert replayed.n_label == "40 (120 results)" and single.n_label == "40"
    assert records_sample(three, lambda r: float(r.success)).agreeing == 40
