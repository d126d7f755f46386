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
    assert row["episodes"] == "2" and row["success"] == "0.500" and row["failed"] == "1"
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
    assert (row["trials"], row["episodes"], row["success"], row["mean score"]) == \
        ("max", "2", "0.500", "65.000")
