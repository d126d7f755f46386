"""A preparation's independent jobs (`lifebench.api.jobs.run_jobs`) on the run's workers:
the same records, prepared artifact and answers as with one worker; a job whose worker dies
is played again; one lost each time fails its preparation in one line."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from conftest import read_records, without_timings

# InstructRAG on one Plancraft game at a small scale: its support episodes are ReAct's
# (jobs), and each meta-training iteration's episodes are one batch of jobs.
INSTRUCTRAG = ["--method", "instructrag", "--benchmark", "plancraft", "--split", "val",
               "--limit", "1", "--model", "m", "--cache", "rw", "--no-progress",
               *[w for arg in ("iterations=3", "tasks_per_batch=2", "support_limit=12",
                               "train_steps=3", "support_paths=agent")
                 for w in ("--method-arg", f"instructrag.{arg}")]]


def _timeless(stages: dict) -> dict:
    return {k: v for k, v in stages.items() if not k.endswith("_s")}  # the stages' wall times


def _record(out: Path) -> dict:
    [record] = read_records(out)
    record = without_timings(record)
    record["extra"]["instructrag_stages"] = _timeless(record["extra"]["instructrag_stages"])
    return record


def _artifact(out: Path) -> dict:
    [path] = (out / "prepared").glob("*.json")
    artifact = json.loads(path.read_text())
    state = artifact["state"]
    return {**artifact, "state": {**state, "stages": _timeless(state["stages"])}}


def _answers(out: Path) -> list[tuple]:
    """Each kept answer's episode, request and occurrence (the completions themselves carry
    the server's ids and times)."""
    with sqlite3.connect(out / "answers.sqlite") as conn:
        return sorted(conn.execute("SELECT s.name, a.key, a.n FROM answers a JOIN scopes s "
                                   "ON a.scope = s.id"))


def test_instructrags_preparation_on_two_workers_is_the_one_workers(llm_server, lifebench_cli,
                                                                      tmp_path):
    srv = llm_server(policy="scripted")
    runs = {}
    for workers in ("1", "2"):
        out = tmp_path / f"w{workers}"
        result = lifebench_cli("run", *INSTRUCTRAG, "--base-url", srv.url, "--workers", workers,
                               "--cache-path", str(tmp_path / f"cache{workers}.sqlite"),
                               "--run-id", "same", "--out", str(out))
        assert result.returncode == 0, result.stderr
        runs[workers] = (_record(out), _artifact(out), _answers(out))
    one, two = runs["1"], runs["2"]
    record = one[0]
    assert record["status"] == "ok"
    # support episodes and training episodes were played, and some training request was
    # asked again in a later iteration (answered by the cache: counted as cached on both)
    assert record["llm_usage"]["support"]["calls"] > 0
    assert record["llm_usage"]["train"]["cached"] > 0
    assert one[0] == two[0]  # the record, per call and in order
    assert one[1] == two[1]  # the prepared artifact
    assert one[2] == two[2]  # the answers, under the same episode and occurrence


def jobber(cli, out: Path, *args: str):
    return cli("run", "--no-progress", "--method", "jobber", "--benchmark", "corridor",
               "--split", "tiny", "--limit", "1", "--out", str(out), *args)


def test_jobs_spread_over_the_workers_and_a_lost_one_is_played_again(cli, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    result = jobber(cli, tmp_path / "once", "--workers", "2", "--method-arg", "jobber.jobs=6",
                    "--method-arg", "jobber.die=once", "--method-arg", f"jobber.marks={marks}")
    assert result.returncode == 0, result.stderr
    [record] = read_records(tmp_path / "once")
    assert record["status"] == "ok", record["error"]
    # every result in its place, though job 0's worker died under it once
    assert record["extra"]["squares"] == [0, 1, 4, 9, 16, 25]
    assert sorted(p.name for p in marks.iterdir()) == ["play-0", "play-1"]
    assert record["extra"]["job_processes"] >= 1  # not all in the preparing process

    inline = jobber(cli, tmp_path / "inline", "--workers", "1")
    assert inline.returncode == 0, inline.stderr
    [alone] = read_records(tmp_path / "inline")
    assert alone["extra"]["squares"] == [0, 1, 4, 9] and alone["extra"]["job_processes"] == 0


def test_a_job_lost_each_time_fails_its_preparation_in_one_line(cli, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    result = jobber(cli, tmp_path / "lost", "--workers", "2", "--retries", "0",
                    "--method-arg", "jobber.die=always", "--method-arg", f"jobber.marks={marks}")
    records = read_records(tmp_path / "lost")
    assert records and records[0]["status"] == "agent_error"
    error = records[0]["error"]
    assert "JobLost" in error and "lost with its worker 3 times" in error and "\n" not in error
    assert len(list(marks.iterdir())) >= 3
    assert "Traceback" not in result.stderr
