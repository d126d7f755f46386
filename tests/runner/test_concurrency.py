"""Many streams in flight per worker (`--concurrency`): the same records as one at a time,
and failures of one stream do not lose or duplicate the others' episodes."""

from __future__ import annotations

import dataclasses

import pytest

from conftest import key_of, plugin_env, read_records, run_cli, without_timings
from lifebench.config.run import ExecutionConfig, LLMConfig, RunConfig
from lifebench.runner.run import execute


def records_by_key(out):
    return {key_of(r): without_timings(r) for r in read_records(out)}


GRID = ["--no-progress", "--benchmark", "plancraft,crafter,textworld",
        "--split", "plancraft:val.small,crafter:seeds-100,textworld:ige-cooking",
        "--method", "random,counter", "--seeds", "0,1,2", "--limit", "2", "--max-steps", "10"]


@pytest.fixture(scope="module")
def one_stream_at_a_time(plugin_path, tmp_path_factory):
    """The grid's records played one stream at a time in this process's one thread: what
    every way of playing streams at once must give."""
    out = tmp_path_factory.mktemp("one-at-a-time") / "out"
    result = run_cli("run", *GRID, "--workers", "0", "--concurrency", "1", "--out", str(out),
                     env=plugin_env(plugin_path))
    assert result.returncode == 0, result.stderr
    return records_by_key(out)


@pytest.mark.xdist_group("one-stream-at-a-time")  # one reference run per pytest worker
@pytest.mark.parametrize("workers,scheduler", [("0", "threads"), ("2", "threads"),
                                              ("0", "greenlets"), ("1", "greenlets")])
def test_same_records_with_many_streams_in_flight(cli, tmp_path, one_stream_at_a_time, workers,
                                                  scheduler):
    """Deterministic methods on three benchmarks, seeds as separate streams (15 streams of
    2 episodes): 4 in flight per worker give the records of one at a time."""
    out = tmp_path / "c4"
    result = cli("run", *GRID, "--workers", workers, "--concurrency", "4", "--scheduler", scheduler,
                 "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert records_by_key(out) == one_stream_at_a_time
    assert len(one_stream_at_a_time) == 5 * 3 * 2  # counter needs an oracle: not on Crafter


@pytest.mark.parametrize("workers,scheduler", [("1", "threads"), ("0", "greenlets"),
                                              ("1", "greenlets")])
def test_llm_streams_in_flight_share_one_endpoint(cli, llm_server, tmp_path, workers, scheduler):
    srv = llm_server(policy="plancraft", latency_s=0.05)
    runs = {}
    for concurrency in ("1", "8"):
        out = tmp_path / f"c{concurrency}"
        result = cli("run", "--no-progress", "--benchmark", "plancraft", "--split", "val.small",
                     "--method", "react", "--model", "planner", "--base-url", srv.url,
                     "--seeds", "0,1,2,3,4,5,6,7", "--limit", "2", "--workers", workers,
                     "--concurrency", concurrency, "--scheduler", scheduler,
                     "--cache-path", str(tmp_path / f"cache{concurrency}.sqlite"),
                     "--out", str(out))
        assert result.returncode == 0, result.stderr
        runs[concurrency] = records_by_key(out)
    assert len(runs["8"]) == 16 and all(r["success"] for r in runs["8"].values())
    # the same records as one stream at a time: keys, results, LLM calls by role
    assert runs["8"] == runs["1"]
    assert srv.stats()["max_in_flight"] > 1, "streams overlapped on the endpoint"


def test_llm_waits_of_greenlet_streams_time_out_and_retry(llm_server, tmp_path):
    """Faults and hung requests under the hub: every stream still gets its answers (one
    stream's wait does not hold the others past their timeouts)."""
    srv = llm_server(policy="plancraft", latency_s=0.02, fault_rate=0.3, seed=4,
                     faults=("timeout", "429", "500", "malformed", "drop"), hang_s=3.0)
    llm = LLMConfig(base_url=srv.url, cache="off", timeout_s=0.5, max_retries=20,
                    backoff_s=0.01, backoff_max_s=0.05, concurrency=2)  # 4 streams, 2 slots
    spec = RunConfig(benchmarks=("plancraft",), methods=("react",),
                     splits={"plancraft": ("val.small",)}, seeds=(0, 1, 2, 3), limit=2,
                     model="planner", llm=llm)
    out = tmp_path / "out"
    outcome = execute(spec, ExecutionConfig(out=str(out), workers=0, progress=False,
                                            concurrency=4, scheduler="greenlets"))
    records = read_records(out)
    assert outcome.results == len(records) == 8 and all(r["success"] for r in records)
    assert srv.stats()["faults"] > 0
    # without faults (abandoned requests stay in flight at the server), the 2 slots hold
    calm = llm_server(policy="plancraft", latency_s=0.05)
    calm_spec = dataclasses.replace(spec, llm=dataclasses.replace(llm, base_url=calm.url))
    execute(calm_spec, ExecutionConfig(out=str(tmp_path / "calm"), workers=0, progress=False,
                                       concurrency=4, scheduler="greenlets"))
    assert calm.stats()["max_in_flight"] == 2


@pytest.mark.parametrize("scheduler", ["threads", "greenlets"])
def test_a_hung_stream_is_timed_out_and_its_neighbours_are_not_charged(cli, tmp_path, faulty,
                                                                       scheduler):
    """Two streams in one worker; one hangs at its first episode. The worker is killed
    after the timeout: the hung episode is recorded as `timeout` and retried, the other
    stream's episode in flight is replayed without a failure record."""
    out = tmp_path / "out"
    result = cli("run", "--no-progress", "--benchmark", "plancraft", "--split", "val.small",
                 "--method", "faulty", "--seeds", "0,1", "--limit", "2", "--workers", "1",
                 "--concurrency", "2", "--scheduler", scheduler, "--timeout", "3",
                 "--out", str(out), *faulty("hang", "0", stateful=True))
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    results = [r for r in records if r["status"] in ("ok", "budget_exhausted")]
    assert len({key_of(r) for r in results}) == len(results) == 4
    failures = [r for r in records if r not in results]
    assert [r["status"] for r in failures] == ["timeout"] * len(failures)
    # each stream hangs once; a hang found while the other stream also hangs leaves that one
    # a bystander (replayed uncharged, and it then runs past its marker)
    assert 1 <= len(failures) <= 2


def test_bad_concurrency_is_a_one_line_error(cli, tmp_path):
    result = cli("run", "--no-progress", "--benchmark", "plancraft", "--method", "random",
                 "--concurrency", "0", "--out", str(tmp_path / "o"))
    assert result.returncode == 2 and "--concurrency must be at least 1" in result.stderr
    result = cli("run", "--no-progress", "--benchmark", "plancraft", "--method", "random",
                 "--scheduler", "fibers", "--out", str(tmp_path / "o"))
    assert result.returncode == 2 and "--scheduler" in result.stderr
    assert "greenlets" in result.stderr and len(result.stderr.strip().splitlines()) == 1
