"""Method versions in tables, and the exact comparison of a deterministic model's calls and
tokens (`lifebench.leaderboard.exact`), on hand-made records."""

from __future__ import annotations

import dataclasses

import pytest

from lifebench.api import EpisodeRecord, RoleUsage
from lifebench.leaderboard.check import regression_check
from lifebench.leaderboard.exact import DEFAULT_THRESHOLDS, check_thresholds, exact_differences
from lifebench.leaderboard.grid import benchmark_tables
from lifebench.leaderboard.grouping import grouped


def record(instance: str, trial: int = 0, version: str = "1", calls: int = 4, tokens: int = 1000,
           context: dict | None = None) -> EpisodeRecord:
    return EpisodeRecord(
        run_id="r", benchmark="corridor", split="tiny", instance_id=instance, method="react",
        method_config_hash="h", model="scripted", seed=0, trial=trial, episode_index=trial,
        budget_steps=12, steps=calls, success=True, score=1.0, status="ok", llm_calls=calls,
        tokens_in=tokens, tokens_out=10 * calls, method_version=version,
        llm_usage={"actor": RoleUsage(calls, tokens, 10 * calls)},
        extra={"context": context} if context else {})


def test_two_versions_of_a_method_are_two_rows_and_two_arms():
    records = [record(i, version=v) for v in ("1", "2") for i in ("a", "b")]
    (table,) = benchmark_tables(records)
    methods = [row[table.headers.index("method")] for row in table.rows]
    assert sorted(methods) == ["react v1", "react v2"]  # the model has its own column
    assert all(row[table.headers.index("n")] == "2" for row in table.rows)
    (arms,) = grouped(records).values()
    assert sorted(arm.method_version for arm in arms) == ["1", "2"]
    # one version alone is labelled as before versions existed
    (alone,) = benchmark_tables(records[:2])
    assert [row[alone.headers.index("method")] for row in alone.rows] == ["react"]


def test_an_unchanged_rerun_has_no_exact_difference():
    records = [record(i, t) for i in ("a", "b") for t in (0, 1)]
    rows = exact_differences(records, [dataclasses.replace(r) for r in records])
    assert rows and all(r.change == 0 and not r.failed for r in rows)
    assert {r.trial for r in rows} == {None, 0, 1}  # the arm, then each trial
    assert not regression_check(records, records, exact_thresholds=DEFAULT_THRESHOLDS).failed


def test_growth_past_the_threshold_fails_with_a_line_naming_method_and_metric():
    base = [record(i) for i in ("a", "b")]
    small = [dataclasses.replace(r, tokens_in=1040, llm_usage={"actor": RoleUsage(4, 1040, 40)})
             for r in base]
    report = regression_check(base, small, exact_thresholds=DEFAULT_THRESHOLDS)
    assert not report.failed  # +4% is within the 5% threshold
    assert any(line.startswith("react: prompt tokens per episode +4.0%") for line in report.lines())
    big = [dataclasses.replace(r, tokens_in=1410, llm_usage={"actor": RoleUsage(4, 1410, 40)})
           for r in base]
    report = regression_check(base, big, exact_thresholds=DEFAULT_THRESHOLDS)
    assert report.failed
    failing = [line for line in report.lines() if line.startswith("FAIL ")]
    assert failing[0].startswith("FAIL react: prompt tokens per episode +41.0% (exact, deterministic model")
    # without the exact comparison the statistical check sees nothing
    assert not regression_check(base, big).failed


def test_a_shrinking_trial_fails_too_as_a_lost_memory_would():
    base = [record("a", 0), record("a", 1, tokens=1400)]
    lost = [record("a", 0), record("a", 1, tokens=1000)]
    rows = [r for r in exact_differences(base, lost) if r.failed]
    assert {(r.trial, r.metric) for r in rows} >= {(1, "tokens_in")}


def test_a_context_charged_to_every_trial_is_a_difference():
    built = {"llm_calls": 30, "tokens_in": 9000, "tokens_out": 300}
    base = [record("a", 0, context={**built, "charged": True}),
            record("a", 1, context={**built, "charged": False})]
    twice = [record("a", t, context={**built, "charged": True}) for t in (0, 1)]
    report = regression_check(base, twice, exact_thresholds=DEFAULT_THRESHOLDS)
    assert report.failed
    assert any(line.startswith("FAIL react: context build LLM calls per episode +100.0%")
               for line in report.lines())


def test_thresholds_from_a_spec_are_checked():
    assert check_thresholds({"tokens_in": 0.1}, "spec")["tokens_in"] == 0.1
    assert check_thresholds({}, "spec") == DEFAULT_THRESHOLDS
    with pytest.raises(ValueError, match="unknown metric 'tokens'"):
        check_thresholds({"tokens": 0.1}, "spec")
    with pytest.raises(ValueError, match="must be a number >= 0"):
        check_thresholds({"tokens_in": -1}, "spec")


def test_format_retries_appearing_fail_as_a_parser_that_stops_matching_would():
    base = [record("a")]
    base[0].extra["format_retries"] = 0
    retried = [dataclasses.replace(base[0], extra={"format_retries": 3})]
    report = regression_check(base, retried, exact_thresholds=DEFAULT_THRESHOLDS)
    assert report.failed
    assert any(line.startswith("FAIL react: format retries per episode new") for line in report.lines())
