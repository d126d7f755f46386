"""The runner end to end through the CLI: resume, SIGKILL, the lock, retries, crashes."""

from __future__ import annotations

import collections
import fcntl
import os
import signal
import subprocess
import sys
import time

from conftest import ROOT, key_of, plugin_env, read_records, without_timings
from lifebench.api import SCHEMA_VERSION

BASE = ["run", "--benchmark", "plancraft", "--split", "val", "--no-progress"]


def by_key(records):
    return {key_of(r): without_timings(r) for r in records}


def test_second_run_does_no_episode(cli, tmp_path):
    out = tmp_path / "out"
    first = cli(*BASE, "--method", "oracle,random", "--limit", "12", "--out", str(out))
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("24 episodes recorded")
    before = (out / "episodes.jsonl").read_bytes()
    second = cli(*BASE, "--method", "oracle,random", "--limit", "12", "--out", str(out))
    assert second.returncode == 0, second.stderr
    assert second.stdout.startswith("nothing to do: 24 episodes already recorded")
    assert (out / "episodes.jsonl").read_bytes() == before
    manifest = (out / "manifest.json").read_text()
    assert manifest.count('"episodes_already_done": 24') == 1


def test_records_carry_every_field(cli, tmp_path):
    out = tmp_path / "out"
    assert cli(*BASE, "--method", "oracle", "--limit", "3", "--out", str(out)).returncode == 0
    fields = {"run_id", "benchmark", "split", "instance_id", "method", "method_config_hash",
              "model", "seed", "trial", "episode_index", "budget_steps", "steps", "success",
              "score", "status", "llm_calls", "tokens_in", "tokens_out", "wall_s",
              "harness_version", "extra", "benchmark_config_hash",
              # schema 2: what the harness owns, typed, outside `extra`
              "schema_version", "budget", "attempt", "error", "task_family", "success_step",
              "llm_usage", "llm_call_tokens", "cost_usd", "explore_steps", "benchmark_config",
              # schema 3: the instance context ("" for none)
              "context", "context_config_hash",
              # schema 4: the method's behaviour version
              "method_version",
              # schema 5: calls cut at their cap, prompts fitted to the window
              "llm_calls_cut", "llm_calls_trimmed"}
    for record in read_records(out):
        assert set(record) == fields and record["schema_version"] == SCHEMA_VERSION == 7
        assert record["llm_calls_cut"] == record["llm_calls_trimmed"] == 0
        assert record["method_version"] == "1"
        assert record["context"] == record["context_config_hash"] == ""
        assert record["benchmark_config_hash"] == ""  # the benchmark's default config
        assert record["budget"] is None and record["budget_steps"] == 30  # asked: the default
        assert record["success_step"] == record["steps"] and record["task_family"]
        assert record["attempt"] == 0 and record["error"] is None
        assert record["extra"]["impossible_truth"] in (True, False)
        assert "impossible_predicted" in record["extra"]
    trajectories = list((out / "trajectories").glob("*.jsonl"))
    assert len(trajectories) == 1 and len(trajectories[0].read_text().splitlines()) == 3


def test_sigkill_then_resume_equals_uninterrupted(cli, plugin_path, tmp_path):
    """A lifelong method (whose actions depend on its memory) and a stateless one, killed
    mid-run: the resumed run's records equal an uninterrupted run's, each key once."""
    args = [*BASE, "--method", "counter,random", "--limit", "30", "--trials", "2", "--workers", "2"]
    reference = tmp_path / "reference"
    assert cli(*args, "--out", str(reference)).returncode == 0
    expected = by_key(read_records(reference))
    assert len(expected) == 120

    out = tmp_path / "killed"
    env = {**os.environ, **plugin_env(plugin_path)}
    proc = subprocess.Popen([sys.executable, "-m", "lifebench.cli", *args, "--out", str(out)],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline:
        path = out / "episodes.jsonl"
        if path.exists() and len(path.read_bytes().splitlines()) >= 40:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = read_records(out)
    assert 40 <= len(partial) < 120, "the kill must land mid-run"

    resumed = cli(*args, "--out", str(out))
    assert resumed.returncode == 0, resumed.stderr
    records = read_records(out)
    counts = collections.Counter(key_of(r) for r in records)
    assert set(counts) == set(expected) and max(counts.values()) == 1
    assert by_key(records) == expected
    # the lifelong method really did carry memory across the kill
    counter = sorted((r for r in records if r["method"] == "counter"),
                     key=lambda r: r["episode_index"])
    assert [r["extra"]["memory_size"] for r in counter] == list(range(1, 61))


def test_second_writer_is_refused(cli, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    fd = os.open(out / ".lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.write(fd, b"4242")
    try:
        result = cli(*BASE, "--method", "oracle", "--limit", "2", "--out", str(out))
    finally:
        os.close(fd)
    assert result.returncode == 2
    assert "being written by another lifebench process (pid 4242)" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (out / "episodes.jsonl").exists()


def test_env_errors_are_retried_and_recorded(cli, tmp_path, faulty):
    out = tmp_path / "out"
    result = cli(*BASE, "--method", "faulty", "--limit", "4", "--out", str(out),
                 *faulty("raise_env", "1,2", times=2))
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    statuses = collections.Counter((r["episode_index"], r["status"]) for r in records)
    assert statuses == {(0, "ok"): 1, (1, "env_error"): 2, (1, "ok"): 1, (2, "env_error"): 2,
                        (2, "ok"): 1, (3, "ok"): 1}
    retried = [r for r in records if r["episode_index"] == 1]
    assert [r["attempt"] for r in retried] == [0, 1, 2]
    assert "simulated environment crash" in retried[0]["error"]


def test_exhausted_retries_stop_a_lifelong_stream_and_resume_continues(cli, tmp_path, faulty):
    out = tmp_path / "out"
    args = [*BASE, "--method", "faulty", "--limit", "5", "--out", str(out), "--retries", "1",
            *faulty("raise_llm", "2", times=2, stateful=True)]
    first = cli(*args)
    assert first.returncode == 1
    assert "stopped at episode 2" in first.stderr and "llm_error" in first.stderr
    records = read_records(out)
    assert [(r["episode_index"], r["status"]) for r in records] == \
        [(0, "ok"), (1, "ok"), (2, "llm_error"), (2, "llm_error")]
    second = cli(*args)  # the endpoint is back: the stream resumes at episode 2
    assert second.returncode == 0, second.stderr
    results = [r for r in read_records(out) if r["status"] == "ok"]
    assert [r["episode_index"] for r in results] == [0, 1, 2, 3, 4]
    assert [r["extra"]["episodes_seen"] for r in results] == [1, 2, 3, 4, 5]


def test_agent_error_is_not_retried(cli, tmp_path, faulty):
    out = tmp_path / "out"
    result = cli(*BASE, "--method", "faulty", "--limit", "3", "--out", str(out),
                 *faulty("raise_agent", "1"))
    assert result.returncode == 1
    assert [(r["episode_index"], r["status"]) for r in read_records(out)] == \
        [(0, "ok"), (1, "agent_error")]


def test_crashed_worker_is_replaced_and_episode_retried(cli, tmp_path, faulty):
    out = tmp_path / "out"
    result = cli(*BASE, "--method", "faulty", "--limit", "4", "--out", str(out), "--workers", "1",
                 *faulty("crash", "1", stateful=True))
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    assert [(r["episode_index"], r["status"]) for r in records] == \
        [(0, "ok"), (1, "env_error"), (1, "ok"), (2, "ok"), (3, "ok")]
    assert "worker process died (exit code 17)" in records[1]["error"]
    # memory restored from the last committed state, not lost with the worker
    assert [r["extra"]["episodes_seen"] for r in records if r["status"] == "ok"] == [1, 2, 3, 4]


def test_hung_episode_is_killed_as_timeout(cli, tmp_path, faulty):
    out = tmp_path / "out"
    start = time.time()
    result = cli(*BASE, "--method", "faulty", "--limit", "2", "--out", str(out), "--workers", "1",
                 "--timeout", "2", *faulty("hang", "0"))
    assert result.returncode == 0, result.stderr
    assert time.time() - start < 60
    records = read_records(out)
    assert [(r["episode_index"], r["status"]) for r in records] == \
        [(0, "timeout"), (0, "ok"), (1, "ok")]
    assert "killed" in records[0]["error"]


def test_torn_last_line_is_set_aside_and_run_resumes(cli, tmp_path):
    out = tmp_path / "out"
    args = [*BASE, "--method", "oracle", "--limit", "5", "--out", str(out)]
    assert cli(*args).returncode == 0
    path = out / "episodes.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    torn = lines[-1][: len(lines[-1]) // 2]
    path.write_bytes(b"".join(lines[:-1]) + torn)
    result = cli(*args)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("1 episodes recorded")
    assert len(read_records(out)) == 5
    assert (out / "episodes.jsonl.torn").read_bytes() == torn + b"\n"


def test_corrupt_line_is_an_error_and_nothing_is_lost(cli, tmp_path):
    out = tmp_path / "out"
    args = [*BASE, "--method", "oracle", "--limit", "4", "--out", str(out)]
    assert cli(*args).returncode == 0
    path = out / "episodes.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    lines.insert(2, "{not json\n")
    path.write_text("".join(lines))
    before = path.read_bytes()
    for command in (args, ["leaderboard", str(out)]):
        result = cli(*command)
        assert result.returncode == 2
        assert "episodes.jsonl:3: not a valid episode record" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    assert path.read_bytes() == before
