"""Leaderboard statistics and tables on hand-computed cases."""

from __future__ import annotations

import math

import pytest

from lifebench.api import EpisodeRecord, aggregate_trials
from lifebench.api.stats import f1_score, wilson_interval
from lifebench.benchmarks.plancraft.reporting import impossible_f1
from lifebench.leaderboard.grid import benchmark_tables, grid


@pytest.mark.parametrize("k,n,low,high", [
    # reference values from the closed form (Wilson 1927), z = 1.959964
    (5, 10, 0.236593, 0.763407),
    (0, 10, 0.0, 0.277533),
    (10, 10, 0.722467, 1.0),
    (1, 40, 0.004427, 0.128814),
    (570, 570, 0.993310, 1.0),
])
def test_wilson_interval(k, n, low, high):
    lo, hi = wilson_interval(k, n)
    assert lo == pytest.approx(low, abs=1e-5) and hi == pytest.approx(high, abs=1e-5)


def test_wilson_is_the_inverted_score_test():
    """The interval's ends are the p where the score statistic equals z: the roots of
    (1 + z²/n) p² − (2k/n + z²/n) p + (k/n)² = 0."""
    z = 1.959963984540054
    for k, n in [(1, 3), (7, 19), (50, 100), (123, 570), (569, 570)]:
        a, b, c = 1 + z * z / n, -(2 * k / n + z * z / n), (k / n) ** 2
        disc = math.sqrt(b * b - 4 * a * c)
        roots = ((-b - disc) / (2 * a), (-b + disc) / (2 * a))
        assert wilson_interval(k, n) == pytest.approx(roots, abs=1e-9)


def test_wilson_rejects_bad_counts_and_handles_empty():
    with pytest.raises(ValueError):
        wilson_interval(3, 2)
    assert all(math.isnan(x) for x in wilson_interval(0, 0))


def test_f1():
    assert f1_score(10, 0, 0) == 1.0
    assert f1_score(0, 5, 5) == 0.0
    assert f1_score(3, 1, 2) == pytest.approx(6 / 9)
    assert math.isnan(f1_score(0, 0, 0))


def record(method, success, predicted, truth, steps=5, status="ok", instance="a", trial=0):
    return EpisodeRecord(run_id="r", benchmark="plancraft", split="val", instance_id=instance,
                         method=method, method_config_hash="h", model=None, seed=0, trial=trial,
                         episode_index=0, budget_steps=30, steps=steps, success=success,
                         score=float(success), status=status,
                         extra={"impossible_predicted": predicted, "impossible_truth": truth})


def test_impossible_f1_counts():
    records = [record("m", True, True, True), record("m", False, True, False),
               record("m", False, False, True), record("m", True, False, False)]
    assert impossible_f1(records) == pytest.approx(2 * 1 / (2 * 1 + 1 + 1))


def test_rows_count_results_and_failures_separately():
    records = [record("m", True, False, False, instance="a"),
               record("m", False, False, False, steps=30, status="budget_exhausted", instance="b"),
               record("m", False, False, False, steps=2, status="env_error", instance="c")]
    headers, rows = grid(records)
    row = dict(zip(headers, rows[0]))
    assert row["n"] == "2" and row["success"] == "0.500" and row["failed"] == "1"
    assert row["mean steps"] == "17.50"
    assert row["impossible F1"] == "—"  # no impossible task, no prediction: undefined
    [table] = benchmark_tables(records)
    assert table.title == "plancraft" and dict(zip(table.headers, table.rows[0])) == \
        {k: v for k, v in row.items() if k != "benchmark"}


def test_trial_aggregation():
    def trial(instance, t, score, success=False):
        r = record("m", success, False, False, instance=instance, trial=t)
        r.score = score
        return r

    rs = [trial("a", 0, 20), trial("a", 1, 100, True), trial("a", 2, 50),
          trial("b", 0, 30), trial("b", 1, 30), trial("b", 2, 10)]
    best = {r.instance_id: (r.trial, r.score) for r in aggregate_trials(rs, "max")}
    assert best == {"a": (1, 100), "b": (0, 30)}  # ties go to the earliest trial
    assert {r.instance_id: r.trial for r in aggregate_trials(rs, "last")} == {"a": 2, "b": 2}
    assert {r.instance_id: r.trial for r in aggregate_trials(rs, "first")} == {"a": 0, "b": 0}
    assert len(aggregate_trials(rs, "all")) == 6
    headers, rows = grid(rs, trials="max")
    row = dict(zip(headers, rows[0]))
    assert (row["trials"], row["n"], row["success"], row["mean score"]) == \
        ("max", "2", "0.500", "65.000")


def test_bounded_metrics_get_one_interval_that_respects_their_range():
    """Success and a [0, 1] score get the same interval, never outside [0, 1]; for 0/1
    outcomes of independent episodes it is Wilson's."""
    from lifebench.api.stats import bounded_interval, t_interval

    rng = __import__("random").Random(1)
    for _ in range(200):
        n = rng.randint(2, 60)
        values = [float(rng.random() < rng.random() * 0.3) for _ in range(n)]
        low, high = bounded_interval(values, 0.0, 1.0)
        assert 0.0 <= low <= sum(values) / n <= high <= 1.0
        assert (low, high) == pytest.approx(wilson_interval(int(sum(values)), n))
    # a random agent's scores: the t interval dips below zero, the bounded one does not
    scores = [0.0] * 16 + [1.0, 1.0]
    assert t_interval(scores)[0] < 0 <= bounded_interval(scores, 0.0, 1.0)[0]
    # on another range (ScienceWorld's 0-100), clustered: inside the range, around the mean
    points = [0, 0, 5, 10, 80, 100, 100, 95]
    low, high = bounded_interval(points, 0, 100, clusters=list("aabbccdd"))
    assert 0 <= low < sum(points) / len(points) < high <= 100


def test_grid_intervals_stay_in_range_for_success_and_score():
    records = [record("m", i < 2, False, False, instance=f"i{i}") for i in range(18)]
    headers, rows = grid(records)
    row = dict(zip(headers, rows[0]))
    assert row["95% CI"] == row["score 95% CI"] and not row["score 95% CI"].startswith("[-")


def test_a_constant_paired_difference_prints_clearly_and_p_values_share_one_format():
    from lifebench.leaderboard.compare import compare, comparison_rows

    a = [record("a", True, False, False, instance=f"i{i}") for i in range(6)]
    b = [record("b", False, False, False, instance=f"i{i}") for i in range(6)]
    headers, rows = comparison_rows(compare(a + b, ["score"]))
    row = dict(zip(headers, rows[0]))
    # the sign-flip test's statistic is the mean difference; d_z is infinite
    assert row["effect_size"] == "constant difference" and row["diff"] == row["statistic"] == "1.0000"
    assert (row["test"], row["p"]) == ("sign flip exact", "0.0312")  # 2 / 2^6: exact at n = 6
    assert "inf" not in " ".join(rows[0])
    from lifebench.leaderboard.compare import format_p
    assert [format_p(p) for p in (1.0, 0.0312345, 4.1234e-07, 0.05)] == ["1", "0.0312", "4.12e-07", "0.05"]


def test_success_within_k_reaches_the_longest_budget_of_a_group():
    """ScienceWorld's short tasks have 37 steps, its long ones 70: the table goes to 70."""
    from lifebench.leaderboard.tables import budget_tables

    short = record("m", True, False, False, steps=30, instance="s")
    short.budget_steps, short.success_step = 37, 30
    long = record("m", True, False, False, steps=60, instance="l")
    long.budget_steps, long.success_step = 70, 60
    [table] = budget_tables([short, long])
    assert table.headers[-1] == "k=70" and table.rows[0][-1] == "1.000"
    assert dict(zip(table.headers, table.rows[0]))["k=35"] == "0.500"
