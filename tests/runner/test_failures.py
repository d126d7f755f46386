"""Failures told apart and survived, each with the real file system or process: a writer
that cannot write, an interrupt, a changed lifelong stream, exit codes, a wrong API key,
bad inputs that must be one line, and surprises that must be said."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import CANARY, ROOT, key_of, one_line_error, plugin_env, read_records
from lifebench.testing.processes import alive, child_pids, interrupt, running

BASE = ["run", "--no-progress", "--benchmark", "plancraft", "--split", "val.small"]


def every_key_once(out: Path) -> list[dict]:
    results = [r for r in read_records(out) if r["status"] in ("ok", "budget_exhausted")]
    keys = [key_of(r) for r in results]
    assert len(keys) == len(set(keys))
    return results


# 1. a failing writer ----------------------------------------------------------------

def test_a_failing_writer_stops_the_run_and_a_resume_completes(plugin_path, tmp_path):
    out = tmp_path / "R"
    args = [sys.executable, "-m", "lifebench.cli", *BASE, "--method", "random", "--limit", "40",
            "--workers", "2", "--out", str(out)]
    env = {**os.environ, **plugin_env(plugin_path)}

    def file_size_limit() -> None:  # as `ulimit -f 20`: writes past 20 KiB fail (EFBIG)
        resource.setrlimit(resource.RLIMIT_FSIZE, (20 * 1024, 20 * 1024))

    limited = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT,
                             preexec_fn=file_size_limit, timeout=300)
    line = one_line_error(limited, "cannot write", str(out), "File too large",
                          "raise the file-size limit", "rerun the same command")
    assert "Traceback" not in limited.stderr
    recorded = read_records(out)
    assert all(r["status"] in ("ok", "budget_exhausted") for r in recorded), \
        "nothing recorded as a method's or an environment's failure"
    assert len(recorded) < 40, line
    resumed = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert len(every_key_once(out)) == 40
    for path in (out / "trajectories").glob("*.jsonl"):  # the torn line was repaired
        assert all(json.loads(line) for line in path.read_text().splitlines())


def test_a_results_path_that_cannot_be_a_directory_is_one_line(cli, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    one_line_error(cli(*BASE, "--method", "oracle", "--limit", "1", "--out", str(blocker / "out")),
                   "cannot use", "as the results directory", "choose another --out")
    out = tmp_path / "out"
    (out / "episodes.jsonl").mkdir(parents=True)
    one_line_error(cli(*BASE, "--method", "oracle", "--limit", "1", "--out", str(out)),
                   "episodes.jsonl", "Is a directory")
    one_line_error(cli("leaderboard", str(out)), "cannot read", "Is a directory")


# 2. interrupting --------------------------------------------------------------------

@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_ends_every_worker_at_once(plugin_path, tmp_path, how):
    out = tmp_path / "out"
    with running([sys.executable, "-m", "lifebench.cli", *BASE, "--split", "val",
                  "--method", "counter", "--seeds", "0,1,2,3", "--method-arg",
                  "delay_s=0.05", "--workers", "4", "--out", str(out)],
                 cwd=ROOT, env={**os.environ, **plugin_env(plugin_path)},
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        deadline = time.time() + 120
        while time.time() < deadline and not ((out / "episodes.jsonl").exists()
                                              and len(read_records(out)) >= 8):
            time.sleep(0.1)
        workers = child_pids(proc.pid)
        assert len(workers) >= 4
        stderr = interrupt(proc, how)
    assert proc.returncode == 130
    assert b"interrupted; rerun the same command to resume" in stderr
    deadline = time.time() + 10  # the run has exited; its children must be gone with it
    while time.time() < deadline and alive(workers):
        time.sleep(0.1)
    assert not alive(workers), f"a child outlived the run: {alive(workers)}"
    assert len(every_key_once(out)) >= 8, "what was recorded before the interrupt is kept"


# 3. a changed lifelong stream -------------------------------------------------------

def test_a_lifelong_stream_asked_in_another_order_is_refused(cli, tmp_path):
    out = tmp_path / "out"
    first = cli(*BASE, "--method", "counter", "--limit", "20", "--workers", "0", "--out", str(out))
    assert first.returncode == 0, first.stderr
    records = sorted(read_records(out), key=lambda r: r["episode_index"])
    ids = f"{records[0]['instance_id']},{records[15]['instance_id']}"
    line = one_line_error(cli(*BASE, "--method", "counter", "--instances", ids, "--workers", "0",
                              "--out", str(out)),
                          records[15]["instance_id"], "played at position 15",
                          "this run puts it at position 1", "use a new --out")
    assert "lifelong" in line
    assert len(read_records(out)) == 20, "nothing recorded"
    shorter = cli(*BASE, "--method", "counter", "--limit", "10", "--workers", "0", "--out", str(out))
    assert shorter.returncode == 0 and shorter.stdout.startswith("nothing to do: 10 episodes")


# 4. exit codes ----------------------------------------------------------------------

def test_a_run_whose_episodes_all_failed_exits_non_zero_with_the_count(cli, tmp_path):
    out = tmp_path / "out"
    result = cli(*BASE, "--method", "random", "--limit", "3", "--timeout", "1e-9",
                 "--retries", "1", "--workers", "0", "--out", str(out))
    assert result.returncode == 1, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert "3 episodes ended as infrastructure failures after their retries" in last
    assert "rerun the same command" in last
    assert [r["status"] for r in read_records(out)] == ["timeout"] * 6


# 5. a wrong API key, a replay-cache miss --------------------------------------------

def parrot(cli, srv, out, *more, key=CANARY):
    return cli(*BASE, "--method", "parrot", "--model", "m", "--base-url", srv.url, "--limit", "3",
               "--workers", "0", "--out", str(out), *more, env={"OPENAI_API_KEY": key})


def test_a_wrong_api_key_stops_the_run_with_one_line(cli, llm_server, tmp_path):
    srv = llm_server(script=["think: hm"], api_key="sk-the-right-one")
    out = tmp_path / "out"
    line = one_line_error(parrot(cli, srv, out, "--cache", "off"), srv.url, "(401)",
                          "OPENAI_API_KEY")
    assert CANARY not in line and "sk-the-right-one" not in line
    assert read_records(out) == [], "no episode recorded"
    right = parrot(cli, srv, out, "--cache", "off", key="sk-the-right-one")
    assert right.returncode == 0 and len(every_key_once(out)) == 3


def test_a_replay_cache_miss_is_not_retried(cli, llm_server, tmp_path):
    srv = llm_server(script=["think: hm"])
    out = tmp_path / "out"
    one_line_error(parrot(cli, srv, out, "--cache", "replay", "--cache-path", str(tmp_path / "c.sqlite")),
                   "cache miss in replay mode", "--cache rw")
    assert srv.stats()["requests"] == 0 and read_records(out) == []


# 6. one line, never a traceback -----------------------------------------------------

def write_records(out: Path, rows: list[dict]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return out


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> list[dict]:
    from lifebench.testing import run_cli

    out = tmp_path_factory.mktemp("recorded") / "out"
    result = run_cli(*BASE, "--method", "oracle", "--limit", "3", "--workers", "0", "--out", str(out))
    assert result.returncode == 0, result.stderr
    return read_records(out)


@pytest.mark.parametrize("field,value,fragment", [
    ("success", "yes", "field 'success'"), ("extra", [1], "field 'extra'"),
    ("budget_steps", None, "field 'budget_steps'"), ("score", float("nan"), "field 'score' is nan"),
])
def test_records_of_the_wrong_shape_are_one_line(cli, tmp_path, recorded, field, value, fragment):
    rows = [dict(r) for r in recorded]
    rows[1][field] = value
    out = write_records(tmp_path / "bad", rows)
    one_line_error(cli("leaderboard", str(out)), f"{out / 'episodes.jsonl'}:2", fragment)


def test_outputs_that_cannot_be_written_and_big_numbers_are_one_line(cli, tmp_path, recorded):
    out = write_records(tmp_path / "ok", recorded)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    one_line_error(cli("leaderboard", str(out), "--output", str(blocker / "board.md")),
                   "cannot write")
    rows = [dict(r) for r in recorded]
    rows[0]["seed"] = 2**70
    one_line_error(cli("export", str(write_records(tmp_path / "big", rows)), "--hf",
                       str(tmp_path / "hf")), "beyond 64 bits")


def test_a_closed_pipe_is_not_an_error(tmp_path, recorded):
    out = write_records(tmp_path / "ok", recorded)
    pipe = subprocess.run(f"{sys.executable} -m lifebench.cli leaderboard {out} --no-plots | head -1",
                          shell=True, capture_output=True, text=True, cwd=ROOT)
    assert pipe.stdout.strip() == "The grid: methods × benchmarks" and pipe.stderr == ""


@pytest.mark.parametrize("spec,fragment", [
    ('out = 5', "--out: expected text"), ('run_id = {x = 1}', "--run-id: expected text"),
    ('run_id = [1, 2]', "--run-id: expected text"), ('trials = [2, 3]', "--trials: expected an integer"),
])
def test_spec_values_of_the_wrong_type_are_one_line(cli, tmp_path, spec, fragment):
    path = tmp_path / "spec.toml"
    path.write_text(f'benchmarks = ["plancraft"]\nmethods = ["oracle"]\n{spec}\n')
    one_line_error(cli("run", str(path), "--out", str(tmp_path / "o")), fragment)


def test_a_manifest_of_the_wrong_shape_is_set_aside(cli, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "manifest.json").write_text('{"runs": 5}')
    result = cli(*BASE, "--method", "oracle", "--limit", "1", "--workers", "0", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert (out / "manifest.json.corrupt").read_text() == '{"runs": 5}'
    assert len(json.loads((out / "manifest.json").read_text())["runs"]) == 1


# 7. surprises said ------------------------------------------------------------------

@pytest.mark.parametrize("args,fragment", [
    (["--split", ""], "--split: give a split name"),
    (["--limit", "1,2"], "--limit: expected an integer"),
    (["--trials", "2,3"], "--trials: expected an integer"),
    (["--run-id", "../../x"], "--run-id '../../x'"),
])
def test_silent_inputs_are_refused(cli, tmp_path, args, fragment):
    one_line_error(cli("run", "--benchmark", "plancraft", "--method", "oracle", *args,
                       "--out", str(tmp_path / "o")), fragment)
    assert not (tmp_path / "o").exists()


def test_a_torn_last_line_and_pooled_rows_are_said(cli, tmp_path, recorded):
    out = write_records(tmp_path / "torn", recorded)
    with open(out / "episodes.jsonl", "a") as f:
        f.write('{"run_id": "r", "bench')
    board = cli("leaderboard", str(out), "--no-plots")
    assert board.returncode == 0 and "is cut short" in board.stderr and "skipped" in board.stderr
    check = cli("check", "--baseline", str(out), "--candidate", str(out))
    assert check.returncode == 0 and "is cut short" in check.stderr
    more = cli(*BASE, "--method", "random", "--limit", "2", "--seeds", "1", "--workers", "0",
               "--out", str(tmp_path / "other"))
    assert more.returncode == 0, more.stderr
    pooled = cli("leaderboard", str(out), str(tmp_path / "other"), "--no-plots")
    assert "note: val.small (budget default): the rows ran different episodes" in pooled.stdout
