"""Prepare once, reuse everywhere: what InstructRAG learns before its stream (meta-training
on Plancraft's support split) is stored under the results directory and loaded by every
later stream with the same preparation key, within a run and across runs; the records are
the ones a stream that prepares itself makes."""

from __future__ import annotations

import json

from conftest import read_records

SMOKE = ["--method-arg", "iterations=1", "--method-arg", "tasks_per_batch=1",
         "--method-arg", "questions_per_task=1", "--method-arg", "support_limit=6",
         "--method-arg", "train_steps=3"]


def run(lifebench_cli, srv, out, *args):
    result = lifebench_cli("run", "--no-progress", "--benchmark", "plancraft", "--method",
                           "instructrag", "--model", "m", "--base-url", srv.url, "--cache", "off",
                           "--workers", "0", "--limit", "1", "--out", str(out), *SMOKE, *args)
    assert result.returncode == 0, result.stderr
    return result


def roles(record) -> dict[str, int]:
    return {role: usage["calls"] for role, usage in record["llm_usage"].items()}


def played(record) -> tuple:
    extra = record["extra"]
    return (record["success"], record["steps"], record["score"], extra["instructrag_path"],
            extra["instructrag_candidates"], extra["instructrag_stages"]["graph_paths"])


def test_a_second_split_sends_only_its_episodes_requests(llm_server, lifebench_cli, tmp_path):
    srv = llm_server(policy="scripted")
    out = tmp_path / "out"
    run(lifebench_cli, srv, out, "--split", "val")
    [val] = read_records(out)
    made = len(srv.requests())
    assert roles(val)["train"] > 0 and val["llm_calls"] == made  # preparation in its record
    prepared = val["extra"]["prepared"]
    key = prepared["key"]
    # what preparing cost, apart (the record's totals include it)
    assert prepared["reused"] is False and prepared["llm_calls"] == roles(val)["train"]
    assert 0 < prepared["tokens_in"] < val["tokens_in"]
    artifact = json.loads((out / "prepared" / f"{key}.json").read_text())
    assert artifact["made_by"].startswith("plancraft.val.instructrag")

    second = run(lifebench_cli, srv, out, "--split", "val.repeated")
    assert "1 stream(s) reused a prepared artifact" in second.stdout
    [repeated] = [r for r in read_records(out) if r["split"] == "val.repeated"]
    assert repeated["extra"]["prepared"] == {"key": key, "reused": True}
    assert set(roles(repeated)) == {"actor"}  # no training request
    assert len(srv.requests()) - made == repeated["llm_calls"] == repeated["steps"]

    # a stream that prepares itself plays the same episode
    alone = tmp_path / "alone"
    run(lifebench_cli, srv, alone, "--split", "val.repeated")
    [fresh] = read_records(alone)
    assert played(fresh) == played(repeated) and roles(fresh)["train"] > 0
    assert fresh["extra"]["prepared"] == prepared


def test_streams_of_one_run_share_a_preparation(llm_server, lifebench_cli, tmp_path):
    """Two splits in one run: the first stream prepares, the other waits for it and loads
    what it stored (so a run's preparation requests are those of one stream)."""
    srv = llm_server(policy="scripted")
    out = tmp_path / "out"
    result = run(lifebench_cli, srv, out, "--split", "val,val.repeated")
    assert "1 stream(s) reused a prepared artifact" in result.stdout
    records = read_records(out)
    reused = {r["split"]: r["extra"]["prepared"]["reused"] for r in records}
    assert sorted(reused.values()) == [False, True]
    assert len(srv.requests()) == sum(r["llm_calls"] for r in records)
    assert sum("train" in roles(r) for r in records) == 1
    # a corrupt artifact is set aside in one line, and the next stream prepares again
    [artifact] = (out / "prepared").iterdir()
    artifact.write_text("{not json")
    again = run(lifebench_cli, srv, out, "--split", "val.small")
    assert [line for line in again.stderr.splitlines() if "unreadable" in line] == [
        f"note: {artifact} is unreadable (Expecting property name enclosed in double quotes: "
        f"line 1 column 2 (char 1)); kept as "
        f"{artifact.name}.corrupt, and the method prepares again"]
    [small] = [r for r in read_records(out) if r["split"] == "val.small"]
    assert small["extra"]["prepared"]["reused"] is False and "train" in roles(small)
    assert artifact.with_name(artifact.name + ".corrupt").exists() and artifact.exists()
    # JSON of the wrong shape: the method does not load it, and prepares
    artifact.write_text(json.dumps({"key": artifact.stem, "state": {"graph": 7}}))
    shaped = run(lifebench_cli, srv, out, "--split", "test")
    assert f"note: the prepared artifact {artifact.stem} does not load (" in shaped.stderr
    [test] = [r for r in read_records(out) if r["split"] == "test"]
    assert test["status"] in ("ok", "budget_exhausted") and test["extra"]["prepared"]["reused"] is False
