"""Records outlive code: results written before schema 2 (a committed fixture, written by
the code before typed fields existed) load, upgraded, and resume and compare as before."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import ROOT, markdown_table, read_records
from lifebench.api import (SCHEMA_VERSION, Budget, CallTokens, EpisodeRecord, RoleUsage, Status,
                           TrajectoryStep)
from lifebench.store.records_file import load_records

V1 = ROOT / "tests" / "fixtures" / "results-v1"
MOVED = ("budget", "attempt", "error", "task_family", "success_step", "llm_usage",
         "llm_call_tokens", "cost_usd", "explore_steps", "benchmark_config")


def v1_rows() -> list[dict]:
    return read_records(V1)


def by_method(records, method):
    return [r for r in records if r.method == method]


def test_schema_1_records_are_upgraded_to_typed_fields():
    rows = v1_rows()
    assert all("schema_version" not in r for r in rows), "the fixture predates schema 2"
    records = [EpisodeRecord.from_dict(r) for r in rows]
    assert all(r.schema_version == SCHEMA_VERSION for r in records)
    assert all(not set(MOVED) & set(r.extra) for r in records), "moved fields left extra"
    for row, record in zip(rows, records):
        asked = row["extra"].get("budget")
        assert record.budget == (None if asked == "default" else row["budget_steps"])
        assert record.budget_asked == Budget(record.budget)
        assert record.task_family == row["extra"].get("task_family")
        assert record.success_step == row["extra"].get("success_step")
        assert record.status is Status(row["status"])
        plugin_fields = {k: v for k, v in row["extra"].items() if k not in MOVED}
        assert record.extra == plugin_fields
    faulty = by_method(records, "faulty")
    assert [r.attempt for r in faulty][:2] == [0, 1] and "simulated environment crash" in faulty[0].error
    react = by_method(records, "react")
    assert all(isinstance(u, RoleUsage) for r in react for u in r.llm_usage.values())
    assert all(isinstance(c, CallTokens) for r in react for c in r.llm_call_tokens)
    assert all(r.llm_usage["actor"].calls == r.llm_calls and r.cost_usd > 0 for r in react)
    crafter = by_method(records, "random")
    assert {r.benchmark_config["length"] for r in crafter if r.benchmark == "crafter"} == {12}


def test_schema_2_records_read_as_played_without_a_context():
    record = EpisodeRecord.from_dict(v1_rows()[0])
    row = json.loads(record.to_json())
    for name in ("context", "context_config_hash"):
        row.pop(name)
    row["schema_version"] = 2
    upgraded = EpisodeRecord.from_dict(row)
    assert upgraded.schema_version == SCHEMA_VERSION and upgraded.context == "" and upgraded.context_config_hash == ""
    assert upgraded.key == record.key and upgraded.key.context == ""
    assert json.loads(upgraded.to_json()) == json.loads(record.to_json())


def test_schema_3_records_read_as_method_version_1_and_versions_key_apart():
    record = EpisodeRecord.from_dict(v1_rows()[0])
    row = json.loads(record.to_json())
    row.pop("method_version")
    row["schema_version"] = 3
    upgraded = EpisodeRecord.from_dict(row)
    assert upgraded.schema_version == SCHEMA_VERSION and upgraded.method_version == "1"
    assert upgraded.key == record.key
    bumped = EpisodeRecord.from_dict({**row, "schema_version": SCHEMA_VERSION, "method_version": "2"})
    assert bumped.key != record.key and bumped.key.method_version == "2"
    with pytest.raises(ValueError, match="method_version"):
        EpisodeRecord.from_dict({**row, "schema_version": SCHEMA_VERSION, "method_version": 2})


def test_upgraded_records_keep_their_keys_and_round_trip():
    for row in v1_rows():
        record = EpisodeRecord.from_dict(row)
        fields = ("benchmark", "benchmark_config_hash", "split", "instance_id", "method",
                  "method_config_hash", "model", "seed", "trial", "budget_steps")
        assert tuple(getattr(record.key, f) for f in fields) == tuple(row[f] for f in fields)
        again = EpisodeRecord.from_dict(json.loads(record.to_json()))
        assert again == record and again.to_json() == record.to_json()


def test_moved_fields_are_still_found_under_their_old_names():
    """`compare --metric extra.cost_usd` and `--anova extra.KEY` keep working."""
    react = by_method(load_records([V1]), "react")[0]
    assert react.value("extra.cost_usd") == react.cost_usd
    assert react.value("extra.task_family") == react.task_family
    assert react.value("extra.impossible_truth") is False


@pytest.mark.parametrize("bad,message", [
    ({"success": "yes"}, "field 'success'"),
    ({"extra": [1]}, "field 'extra'"),
    ({"budget_steps": None}, "field 'budget_steps'"),
    ({"status": "exploded"}, "unknown status"),
    ({"schema_version": 99}, "newer than this lifebench reads"),
])
def test_records_of_the_wrong_shape_are_refused(bad, message):
    row = {**v1_rows()[0], **bad}
    with pytest.raises(ValueError, match=message):
        EpisodeRecord.from_dict(row)


def test_a_run_resumes_into_results_written_before_schema_2(cli, tmp_path):
    out = tmp_path / "v1"
    shutil.copytree(V1, out)
    before = len(read_records(out))
    result = cli("run", "--no-progress", "--benchmark", "plancraft", "--split", "val.small",
                 "--method", "random,oracle", "--limit", "3", "--workers", "0", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("nothing to do: 6 episodes already recorded"), "every key was found"
    more = cli("run", "--no-progress", "--benchmark", "plancraft", "--split", "val.small",
               "--method", "random,oracle", "--limit", "4", "--workers", "0", "--out", str(out))
    assert more.returncode == 0 and more.stdout.startswith("2 episodes recorded"), more.stdout
    rows = read_records(out)
    assert len(rows) == before + 2 and {r.get("schema_version", 1) for r in rows} == {1, SCHEMA_VERSION}
    check = cli("check", "--baseline", str(V1), "--candidate", str(out))
    assert check.returncode == 0, check.stdout
    board = cli("leaderboard", str(out), "--no-plots")
    assert board.returncode == 0, board.stderr
    oracle = [row for row in markdown_table(board.stdout, "plancraft") if row["method"] == "oracle"]
    assert [(row["n"], row["success"], row["budget"]) for row in oracle] == [("4", "1.000", "30")]


def test_trajectory_steps_keep_their_json():
    line = (V1 / "trajectories").glob("plancraft.val.small.oracle-*.jsonl").__next__().read_text().splitlines()[0]
    steps = json.loads(line)["steps"]
    assert [TrajectoryStep.from_dict(s).to_dict() for s in steps] == steps


def test_schema_4_records_read_with_no_call_cut_or_trimmed():
    record = EpisodeRecord.from_dict(v1_rows()[0])
    row = json.loads(record.to_json())
    for name in ("llm_calls_cut", "llm_calls_trimmed"):
        row.pop(name)
    for call in row["llm_call_tokens"]:  # a schema-4 call: no finish, cap, reasoning, trimming
        for name in ("finish", "max_tokens", "reasoning_tokens", "trimmed", "key", "tokens_fitted"):
            call.pop(name)
    row["schema_version"] = 4
    upgraded = EpisodeRecord.from_dict(row)
    assert upgraded.schema_version == SCHEMA_VERSION == 7
    assert upgraded.llm_calls_cut == upgraded.llm_calls_trimmed == 0
    assert json.loads(upgraded.to_json()) == json.loads(record.to_json())
    assert Status("context_overflow").is_result and not Status("context_overflow").is_retried


def test_schema_5_records_read_with_no_call_keys():
    record = EpisodeRecord.from_dict(v1_rows()[0])
    row = json.loads(record.to_json())
    row["llm_call_tokens"] = [{"role": "actor", "tokens_in": 10, "tokens_out": 2, "cached": False,
                               "finish": "stop", "max_tokens": None, "reasoning_tokens": 0,
                               "trimmed": 0}]  # a schema-5 call: no key
    row["schema_version"] = 5
    upgraded = EpisodeRecord.from_dict(row)
    assert upgraded.schema_version == SCHEMA_VERSION == 7
    assert upgraded.llm_call_tokens and all(call.key == "" for call in upgraded.llm_call_tokens)


def test_schema_6_records_read_with_no_fitted_counts():
    record = EpisodeRecord.from_dict(v1_rows()[0])
    row = json.loads(record.to_json())
    row["llm_call_tokens"] = [{"role": "actor", "tokens_in": 10, "tokens_out": 2, "cached": False,
                               "finish": "stop", "max_tokens": None, "reasoning_tokens": 0,
                               "trimmed": 0, "key": "k"}]  # a schema-6 call: no fitted count
    row["schema_version"] = 6
    upgraded = EpisodeRecord.from_dict(row)
    assert upgraded.schema_version == SCHEMA_VERSION == 7
    assert [(c.key, c.tokens_fitted) for c in upgraded.llm_call_tokens] == [("k", None)]
