"""ScienceWorld on the real simulator: splits, the CLIN/STEP protocol, the oracle, JVM safety."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, plugin_env, read_records
from lifebench.benchmarks.scienceworld import ScienceWorldBenchmark, jvm
from lifebench.benchmarks.scienceworld.tasks import STEP18
from lifebench.testing.processes import alive, descendant_pids, interrupt, running


@pytest.fixture(scope="module")
def bench():
    yield ScienceWorldBenchmark()
    jvm.discard()  # this process's simulator must not outlive the module


RUN_TAG = "LIFEBENCH_TEST_RUN"  # set in a run's environment; its JVMs inherit it


def java_pids(under: int | None = None, tag: str | None = None) -> set[int]:
    """Every running ScienceWorld JVM on the machine, or only those started (through any
    number of processes) by the process `under`, or only those whose environment holds
    RUN_TAG=`tag` (they outlive the process that started them): other tests' and other
    jobs' JVMs do not count."""
    out = set()
    mine = set(descendant_pids(under)) if under is not None else None
    marker = f"{RUN_TAG}={tag}".encode() if tag is not None else None
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (mine is None or int(entry.name) in mine):
            try:
                cmdline = (entry / "cmdline").read_bytes()
                if not (b"java" in cmdline and b"scienceworld" in cmdline):
                    continue
                if marker is not None and marker not in (entry / "environ").read_bytes().split(b"\0"):
                    continue
            except OSError:
                continue
            out.add(int(entry.name))
    return out


def test_splits(bench):
    step18 = bench.instances("step18")
    assert len(step18) == 89
    assert len({i.metadata["task_id"] for i in step18}) == 18
    assert {i.metadata["task_id"] for i in step18} == set(STEP18)
    assert sum(i.metadata["task_name"] == "identify-life-stages-2" for i in step18) == 4
    v1 = bench.instances("step18-v1")
    assert [i.instance_id for i in v1] == [i.instance_id for i in step18
                                          if i.instance_id in {j.instance_id for j in v1}]
    assert len(v1) == 18
    for split in ("test", "dev"):
        instances = bench.instances(split)
        assert len({i.metadata["task_id"] for i in instances}) == 30
    boil = next(i for i in step18 if i.metadata["task_name"] == "boil")
    assert boil.instance_id == f"boil:{boil.metadata['variation']}"
    assert boil.metadata["task_id"] == "1-1" and boil.metadata["length"] == "long"
    assert boil.metadata["gold_length"] > 10
    budgets = {i.metadata["task_id"]: bench.budget(i) for i in step18}
    assert budgets["2-1"] == 37 and budgets["1-1"] == 70
    assert sorted(set(budgets.values())) == [37, 70]


def play(env, actions):
    obs = env.reset()
    steps = []
    for action in actions:
        steps.append(env.step(action))
        if steps[-1].done:
            break
    return obs, steps


def test_oracle_and_lazy_queries(bench):
    instance = next(i for i in bench.instances("step18-v1") if i.metadata["task_id"] == "2-1")
    env = bench.make_env(instance, 0)
    oracle = bench.oracle(env)
    obs = env.reset()
    assert obs.text.startswith("Task Description:") and "This room is called" in obs.text
    assert "thermometer" in env.query("task")
    assert env.query("look").startswith("This room is called")
    assert "inventory" in env.query("inventory").lower()
    valid = env.valid_actions()
    assert "look around" in valid and len(valid) > 20
    with pytest.raises(ValueError):
        env.query("score")
    for _ in range(bench.budget(instance)):
        step = env.step(oracle.next_action(obs))
        obs = step.observation
        if step.done:
            break
    assert step.success and step.score == 100.0
    assert env.episode_extra() == {"raw_score": 100, "best_score": 100}


def test_shortened_oracle_paths_win_within_the_budget(bench):
    """Every instance whose gold path exceeds its budget has a shortened path that wins
    within it (step18-v1's six here; `shorten.py` checked the rest of step18 when it wrote
    them); under another preset the oracle falls back to the simulator's gold path."""
    from lifebench.benchmarks.scienceworld.oracle_paths import oracle_path

    over = [i for i in bench.instances("step18-v1")
            if i.metadata["gold_length"] > bench.budget(i)]
    assert len(over) == 6
    for instance in over:
        path = oracle_path(instance.instance_id, "easy")
        assert 0 < len(path) <= bench.budget(instance), instance.instance_id
        env = bench.make_env(instance, 0)
        oracle = bench.oracle(env)
        obs = env.reset()
        for _ in range(bench.budget(instance)):
            step = env.step(oracle.next_action(obs))
            obs = step.observation
            if step.done:
                break
        assert step.success and step.score == 100.0, instance.instance_id
    assert oracle_path(over[0].instance_id, "openDoors") == []


def test_the_oracle_replays_the_same_path_after_any_other_task(bench):
    """The simulator's live gold path depends on what its JVM loaded before (README:
    pinned gold paths): every instance of the step18 splits replays a stored path, and it
    wins whatever the JVM played first."""
    from lifebench.benchmarks.scienceworld.oracle_paths import oracle_path
    from lifebench.benchmarks.scienceworld.pin_gold import PINNED_SPLITS

    for split in PINNED_SPLITS:
        assert all(oracle_path(i.instance_id, "easy") for i in bench.instances(split)), split
    paint = bench.instance("step18-train", "chemistry-mix-paint-secondary-color:2")
    for before in ("boil:0", "find-living-thing:2"):
        env = bench.make_env(bench.instance("step18-train", before), 0)
        env.reset()
        env.close()
        env = bench.make_env(paint, 0)
        oracle = bench.oracle(env)
        obs, played = env.reset(), []
        for _ in range(bench.budget(paint)):
            played.append(oracle.next_action(obs))
            step = env.step(played[-1])
            obs = step.observation
            if step.done:
                break
        env.close()
        assert step.success and played == oracle_path(paint.instance_id, "easy"), before


def test_wrong_focus_is_fatal_and_keeps_the_best_score(bench):
    instance = next(i for i in bench.instances("step18-v1") if i.metadata["task_id"] == "2-1")
    env = bench.make_env(instance, 0)
    oracle = bench.oracle(env)
    obs = env.reset()
    best = 0.0
    for _ in range(6):  # the gold path's first steps earn partial score
        step = env.step(oracle.next_action(obs))
        obs = step.observation
        best = max(best, step.score)
    assert 0 < best < 100
    step = env.step("focus on agent")
    assert step.done and not step.success
    assert step.score == best
    extra = env.episode_extra()
    assert extra["fatal"] is True and extra["raw_score"] == -100


def test_heap_is_capped(bench):
    instance = bench.instances("step18-v1")[0]
    env = bench.make_env(instance, 0)
    env.reset()
    pid = jvm.java_process(jvm.simulator()).pid
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    options = next(e for e in environ if e.startswith(b"JAVA_TOOL_OPTIONS="))
    flags = options.partition(b"=")[2].split()
    assert b"-Xmx768m" in flags and b"-XX:hashCode=2" in flags


def test_episodes_do_not_depend_on_the_jvm_or_its_history(bench):
    """Identity hashes order the simulator's sets: with the default (random) hashes the
    same actions gave different outcomes from JVM to JVM."""
    first, second = bench.instances("step18-v1")[:2]

    def play(instance, steps: int) -> list:
        env = bench.make_env(instance, 0)
        oracle = bench.oracle(env)
        observation = env.reset()
        seen = [observation.text]
        for _ in range(steps):
            step = env.step(oracle.next_action(observation))
            observation = step.observation
            seen.append((observation.text, step.score))
        seen.append(env.valid_actions()[:50])  # in order: random agents draw by position
        env.close()
        return seen

    jvm.discard()
    fresh = play(second, 12)
    play(first, 20)  # another task first, in the same JVM
    assert play(second, 12) == fresh
    jvm.discard()
    assert play(second, 12) == fresh  # and a new JVM


def test_one_jvm_reused_across_episodes(bench):
    first = jvm.simulator()
    for instance in bench.instances("step18-v1")[:3]:
        env = bench.make_env(instance, 0)
        env.reset()
        env.step("look around")
        env.close()
    assert jvm.simulator() is first


def test_greenlet_streams_each_have_their_simulator(bench):
    """Streams as greenlets of one thread (--scheduler greenlets) interleave their episodes
    where they wait: each has its own simulator, and plays as it would alone."""
    from lifebench.api import cooperative
    from lifebench.api.cooperative import Hub

    instances = bench.instances("step18-v1")[:2]
    actions = ["look around", "open door to kitchen", "go to kitchen", "look around"]

    def play(instance, out):
        env = bench.make_env(instance, 0)
        texts = [env.reset().text]
        for action in actions:
            cooperative.sleep(0.01)  # the other stream steps meanwhile
            texts.append(env.step(action).observation.text)
        out.append((jvm.simulator(), texts))
        env.close()

    alone = {}
    for instance in instances:
        played = []
        play(instance, played)
        alone[instance.instance_id] = played[0][1]
    together = {i.instance_id: [] for i in instances}
    hub = Hub()
    for instance in instances:
        hub.spawn(play, instance, together[instance.instance_id])
    hub.run()
    simulators = {id(played[0][0]) for played in together.values()}
    assert len(simulators) == 2, "one simulator per greenlet stream"
    assert {iid: played[0][1] for iid, played in together.items()} == alone


def run_faulty(cli, out, instances, method_args):
    """The `faulty` method on ScienceWorld short tasks, one worker; its JVMs are tagged
    with `out` (`java_pids(tag=str(out))`)."""
    return cli("run", "--no-progress", "--benchmark", "scienceworld", "--split", "step18-v1",
               "--method", "faulty", "--workers", "1", "--out", str(out),
               "--instances", ",".join(instances), *method_args, env={RUN_TAG: str(out)})


def test_killed_jvm_is_restarted_and_episode_retried(cli, tmp_path, faulty):
    out = tmp_path / "out"
    result = run_faulty(cli, out, ["find-non-living-thing:225", "chemistry-mix-paint-secondary-color:27",
                                   "lifespan-longest-lived:93"], faulty("kill_jvm", "1"))
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    assert [(r["episode_index"], r["status"]) for r in records] == \
        [(0, "ok"), (1, "env_error"), (1, "ok"), (2, "ok")]
    assert "ScienceWorld simulator failed" in records[1]["error"]
    assert all(r["success"] for r in records if r["status"] == "ok")
    assert not java_pids(tag=str(out)), "a JVM outlived the run"


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT])
def test_interrupted_run_leaves_no_jvm(plugin_path, tmp_path, how):
    out = tmp_path / "out"
    env = {**os.environ, **plugin_env(plugin_path)}
    with running([sys.executable, "-m", "lifebench.cli", "run", "--no-progress",
                  "--benchmark", "scienceworld", "--split", "step18",
                  "--method", "oracle", "--workers", "2", "--out", str(out)],
                 cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        deadline = time.time() + 120
        while time.time() < deadline and not (
                (out / "episodes.jsonl").exists() and (out / "episodes.jsonl").stat().st_size
                and len(java_pids(under=proc.pid)) == 2):
            time.sleep(0.1)
        jvms = java_pids(under=proc.pid)
        assert len(jvms) == 2, "each of the 2 workers should run a JVM"
        stderr = interrupt(proc, how)
    assert proc.returncode == 130
    assert b"interrupted; rerun the same command to resume" in stderr
    deadline = time.time() + 20
    while time.time() < deadline and alive(jvms):
        time.sleep(0.2)
    assert not alive(jvms), "a JVM outlived the interrupted run"
    assert read_records(out), "what was recorded before the interrupt is kept"


def test_crashed_worker_takes_its_jvm_with_it(cli, tmp_path, faulty):
    """A worker that dies mid-episode (here: os._exit) leaves no JVM behind, and the
    episode is retried on a new worker with a new JVM."""
    out = tmp_path / "out"
    result = run_faulty(cli, out, ["find-non-living-thing:225", "lifespan-longest-lived:93"],
                        faulty("crash", "0"))
    assert result.returncode == 0, result.stderr
    assert [(r["episode_index"], r["status"]) for r in read_records(out)] == \
        [(0, "env_error"), (0, "ok"), (1, "ok")]
    deadline = time.time() + 20
    while time.time() < deadline and java_pids(tag=str(out)):
        time.sleep(0.2)
    assert not java_pids(tag=str(out)), "the crashed worker's JVM outlived it"


def test_a_worker_reuses_one_jvm_across_its_units(plugin_path, tmp_path):
    """Each unit plays in a thread of its own; the JVM of a finished unit's thread is handed
    to the next one instead of starting (and keeping) another."""
    env = {**os.environ, **plugin_env(plugin_path)}
    proc = subprocess.Popen([sys.executable, "-m", "lifebench.cli", "run", "--no-progress",
                             "--benchmark", "scienceworld", "--split", "step18", "--limit", "6",
                             "--method", "oracle", "--workers", "1", "--max-steps", "3",
                             "--out", str(tmp_path / "out")], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    most = 0
    try:
        while proc.poll() is None:
            most = max(most, len(java_pids(under=proc.pid)))
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, proc.stderr.read()
    assert len(read_records(tmp_path / "out")) == 6  # in 3 units of 2 (stateless: sharded)
    assert most == 1
