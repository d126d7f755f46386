"""`--executor ray` on a local Ray instance started by the run, and on a running cluster
(`--ray-address`): the same records as the local executor, and a Ray worker killed mid-run
costs nothing but a retry."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import ROOT, key_of, plugin_env, read_records, without_timings

pytest.importorskip("ray")
# one local Ray instance at a time on this machine: the tests run in one pytest worker
pytestmark = pytest.mark.xdist_group("ray")


@pytest.fixture(scope="module", autouse=True)
def ray_token(tmp_path_factory):
    """Token authentication for every Ray instance and driver of the module (the default Ray
    is moving to), with a token of its own: nothing depends on ~/.ray, and nothing is
    written there (a local `ray.init()` would make ~/.ray/auth_token, which later turns
    token authentication on for a `ray start` elsewhere on the machine)."""
    token = tmp_path_factory.mktemp("ray") / "auth_token"
    token.write_text(secrets.token_hex(32))
    chosen = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}
    before = {key: os.environ.get(key) for key in chosen}
    os.environ.update(chosen)
    yield token
    for key, value in before.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="module")
def ray_cluster(ray_token):
    """The address of one Ray head node (`ray start --head`, 2 CPUs) that the module's runs
    share with `--ray-address`: a Ray instance starts in about 10 s, once here instead of in
    every run. Its processes are one process group, killed at the end."""
    # short: Ray's Unix sockets live in its temp dir (and a temp dir of its own keeps a plain
    # `ray.init()` from finding this cluster: the local-instance runs still start their own)
    temp = tempfile.mkdtemp(prefix="lbray", dir="/tmp")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log_path = Path(temp) / "start.log"
    with log_path.open("w") as log:
        head = subprocess.Popen(
            [str(Path(sys.executable).parent / "ray"), "start", "--head", "--block", "--num-cpus", "2",
             "--port", str(port), "--node-ip-address", "127.0.0.1", "--include-dashboard", "false",
             "--disable-usage-stats", "--temp-dir", temp],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + 120
        while "Ray runtime started" not in log_path.read_text():
            assert head.poll() is None and time.time() < deadline, log_path.read_text()[-2000:]
            time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        os.killpg(head.pid, signal.SIGKILL)  # no 30-s drain: nothing of it is kept
        head.wait()
        shutil.rmtree(temp, ignore_errors=True)


def comparable(records: list[dict]) -> dict:
    out = {}
    for r in records:
        if r["status"] in ("ok", "budget_exhausted"):
            record = without_timings(r)
            record.pop("attempt", None)
            out[key_of(r)] = record
    return out


GRID = ["--benchmark", "plancraft", "--split", "val.small", "--limit", "12", "--seeds", "0,1",
        "--method", "random,oracle,counter", "--workers", "2", "--run-id", "same"]


def test_ray_and_local_give_identical_records(cli, ray_cluster, tmp_path):
    local = cli("run", "--no-progress", *GRID, "--out", str(tmp_path / "local"))
    assert local.returncode == 0, local.stderr
    on_ray = cli("run", "--no-progress", *GRID, "--executor", "ray", "--ray-address", ray_cluster,
                 "--out", str(tmp_path / "ray"), timeout=600)
    assert on_ray.returncode == 0, on_ray.stderr
    a, b = read_records(tmp_path / "local"), read_records(tmp_path / "ray")
    assert len(a) == len(b) == 12 * 2 * 3
    assert comparable(a) == comparable(b)
    # resume works as locally: a second ray run finds everything done
    again = cli("run", "--no-progress", *GRID, "--executor", "ray", "--ray-address", ray_cluster,
                "--out", str(tmp_path / "ray"), timeout=600)
    assert again.returncode == 0 and len(read_records(tmp_path / "ray")) == len(b)


def ray_unit_pids() -> list[int]:
    """Ray worker processes running a lifebench unit (Ray titles them after the task)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes().startswith(b"ray::play_unit"):
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids


def test_a_killed_ray_worker_is_replaced_and_every_key_is_recorded_once(plugin_path, tmp_path):
    """On a local Ray instance the run starts (the module's other runs join a cluster)."""
    out = tmp_path / "out"
    env = {**os.environ, **plugin_env(plugin_path)}
    # two lifelong streams of slow episodes (the counter method's memory decides its moves)
    proc = subprocess.Popen([sys.executable, "-m", "lifebench.cli", "run", "--no-progress",
                             "--benchmark", "plancraft", "--split", "val.small", "--limit", "10",
                             "--seeds", "0,1", "--method", "counter", "--method-arg", "delay_s=0.15",
                             "--executor", "ray", "--workers", "2", "--out", str(out)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not (
                (out / "episodes.jsonl").exists() and len(read_records(out)) >= 3 and ray_unit_pids()):
            time.sleep(0.1)
        victims = ray_unit_pids()
        assert victims, "no Ray worker running a unit"
        os.kill(victims[0], signal.SIGKILL)
        _, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stderr.decode()
    records = read_records(out)
    results = [r for r in records if r["status"] in ("ok", "budget_exhausted")]
    keys = [key_of(r) for r in results]
    assert len(keys) == len(set(keys)) == 20, "every episode once"
    assert [r["status"] for r in records if r not in results] == ["env_error"]
    # the killed stream went on from its saved memory: the same records as an unbroken run
    reference = tmp_path / "reference"
    unbroken = subprocess.run([sys.executable, "-m", "lifebench.cli", "run", "--no-progress",
                               "--benchmark", "plancraft", "--split", "val.small", "--limit", "10",
                               "--seeds", "0,1", "--method", "counter", "--method-arg", "delay_s=0.15",
                               "--workers", "2", "--out", str(reference)],
                              cwd=ROOT, env=env, capture_output=True, timeout=300)
    assert unbroken.returncode == 0, unbroken.stderr
    assert comparable(records) == comparable(read_records(reference))


def test_the_llm_concurrency_limit_holds_across_the_cluster(cli, llm_server, ray_cluster, tmp_path):
    """8 streams in flight over 2 Ray worker processes, 2 requests at most at the endpoint:
    the limit is the cluster's, not each process's."""
    srv = llm_server(script=["think: a moment"], latency_s=0.2)
    result = cli("run", "--no-progress", "--benchmark", "plancraft", "--split", "val.small",
                 "--limit", "1", "--seeds", ",".join(map(str, range(8))), "--max-steps", "3",
                 "--method", "parrot", "--model", "m", "--base-url", srv.url, "--cache", "off",
                 "--executor", "ray", "--ray-address", ray_cluster, "--workers", "2", "--concurrency", "4",
                 "--llm-concurrency", "2", "--out", str(tmp_path / "out"), timeout=600)
    assert result.returncode == 0, result.stderr
    assert len(read_records(tmp_path / "out")) == 8
    stats = srv.stats()
    assert stats["requests"] == 24 and stats["max_in_flight"] == 2


def test_a_hung_episode_on_ray_is_killed_as_timeout_and_retried(cli, ray_cluster, tmp_path, faulty):
    out = tmp_path / "out"
    result = cli("run", "--no-progress", "--benchmark", "plancraft", "--split", "val.small",
                 "--method", "faulty", "--limit", "2", "--out", str(out), "--workers", "1",
                 "--executor", "ray", "--ray-address", ray_cluster, "--timeout", "2", *faulty("hang", "0"),
                 timeout=300)
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    assert [(r["episode_index"], r["status"]) for r in records] == [(0, "timeout"), (0, "ok"), (1, "ok")]
    assert "killed" in records[0]["error"]


def test_a_preparations_jobs_are_ray_tasks_and_a_lost_one_is_played_again(cli, ray_cluster, tmp_path):
    """`run_jobs` under Ray: each job a task of its own (not the unit's process), results in
    order; a job whose worker dies is played again by Ray."""
    marks = tmp_path / "marks"
    marks.mkdir()
    out = tmp_path / "out"
    result = cli("run", "--no-progress", "--method", "jobber", "--benchmark", "corridor",
                 "--split", "tiny", "--limit", "1", "--executor", "ray", "--ray-address", ray_cluster,
                 "--workers", "2",
                 "--method-arg", "jobber.die=once", "--method-arg", f"jobber.marks={marks}",
                 "--out", str(out), timeout=300)
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    assert record["status"] == "ok", record["error"]
    assert record["extra"]["squares"] == [0, 1, 4, 9] and record["extra"]["job_processes"] >= 1
    assert sorted(p.name for p in marks.iterdir()) == ["play-0", "play-1"]


def test_a_cluster_that_cannot_be_joined_is_a_one_line_error(cli, ray_cluster, tmp_path):
    """A dead address is refused at once (Ray would retry for minutes), and a driver that
    lacks the token a cluster asks for is told so: exit 2, no traceback."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{probe.getsockname()[1]}"
    args = ["run", "--no-progress", "--benchmark", "corridor", "--split", "tiny", "--limit", "1",
            "--method", "random", "--executor", "ray", "--out", str(tmp_path / "out")]
    refused = cli(*args, "--ray-address", dead)
    assert refused.returncode == 2, refused.stderr
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith(f"lifebench: error: cannot reach the Ray cluster at {dead}: nothing answers")
    no_token = cli(*args, "--ray-address", ray_cluster,
                   env={"RAY_AUTH_MODE": "token", "HOME": str(tmp_path), "RAY_AUTH_TOKEN_PATH": ""})
    assert no_token.returncode == 2, no_token.stderr
    [line] = no_token.stderr.strip().splitlines()
    assert f"cannot reach the Ray cluster at {ray_cluster}: Token authentication" in line
    # a driver that sends no token to a cluster that asks for one: told what to set
    # (one connection attempt, not Ray's 20 of a second each)
    tokenless = cli(*args, "--ray-address", ray_cluster,
                    env={"RAY_AUTH_MODE": "disabled", "RAY_gcs_server_port_wait_time_s": "1"})
    assert tokenless.returncode == 2, tokenless.stderr
    last = tokenless.stderr.strip().splitlines()[-1]  # (Ray's core logs its retries before)
    assert last.startswith(f"lifebench: error: cannot reach the Ray cluster at {ray_cluster}")
    assert last.endswith("it asks for its token: set RAY_AUTH_MODE=token here, with the token it "
                         "was started with in ~/.ray/auth_token or RAY_AUTH_TOKEN")
