"""ALFWorld on the real textworld PDDL engine: splits, the walkthrough oracle, the speedups
(same game with and without them), data locations and their errors."""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import pytest

from lifebench.benchmarks.alfworld import AlfworldBenchmark, speedups
from lifebench.benchmarks.alfworld.data import TASK_TYPES
from conftest import read_records, without_timings
from lifebench.api import EnvError

DATA = Path(os.environ.get("LIFEBENCH_DATA", "../shared/data")).resolve() / "alfworld"
pytestmark = pytest.mark.skipif(not (DATA / "json_2.1.1").is_dir(),
                                reason="ALFWorld data not found (set LIFEBENCH_DATA)")


@pytest.fixture(scope="module")
def bench():
    return AlfworldBenchmark()


def one_per_type(bench, split="valid_unseen"):
    seen = {}
    for instance in bench.instances(split):
        seen.setdefault(instance.metadata["task_type"], instance)
    return list(seen.values())


def play(env, actions):
    """Observations and admissible commands along `actions` (from reset)."""
    obs = env.reset()
    seen = [(obs.text, tuple(env.valid_actions()))]
    for action in actions:
        step = env.step(action)
        seen.append((step.observation.text, tuple(env.valid_actions()), step.success))
        if step.done:
            break
    return seen


def test_splits(bench):
    sizes = {split: len(bench.instances(split)) for split in bench.splits()}
    assert sizes == {"valid_unseen": 134, "valid_seen": 140, "valid_train": 200,
                     "valid_unseen.support": 12, "valid_unseen.query": 122}
    # the few-shot partition: the first 2 games of each task type, disjoint from what is scored
    support, query = bench.instances("valid_unseen.support"), bench.instances("valid_unseen.query")
    assert sorted(i.metadata["task_type"] for i in support) == sorted(2 * list(TASK_TYPES.values()))
    assert {i.instance_id for i in support} | {i.instance_id for i in query} == \
        {i.instance_id for i in bench.instances("valid_unseen")}
    assert bench.few_shot_support("valid_unseen.query") == "valid_unseen.support"
    assert bench.few_shot_support("valid_unseen") is None
    unseen = bench.instances("valid_unseen")
    first = unseen[0]
    task_folder, trial = first.instance_id.split("/")
    assert trial.startswith("trial_T") and task_folder.startswith(first.metadata["alfred_task_type"])
    assert (DATA / "json_2.1.1" / "valid_unseen" / first.instance_id / "game.tw-pddl").is_file()
    assert {i.metadata["task_type"] for i in unseen} == set(TASK_TYPES.values())
    assert [i.instance_id for i in unseen] == sorted(i.instance_id for i in unseen)
    assert bench.budget(first) == 50 and bench.support_split == "valid_train"


def test_observation_actions_and_oracle_per_task_type(bench):
    for instance in one_per_type(bench):
        env = bench.make_env(instance, 0)
        oracle = bench.oracle(env)
        obs = env.reset()
        assert not obs.text.startswith("-= Welcome")
        assert obs.text.startswith("You are in the middle of a room")
        assert "Your task is to: " in obs.text and obs.data["task"] in obs.text
        assert env.step("jump around").observation.text == "Nothing happens."
        obs = env.reset()  # the failed command changed nothing, and reset starts over
        steps = 0
        while True:
            action = oracle.next_action(obs)
            assert action in env.valid_actions()
            step = env.step(action)
            obs, steps = step.observation, steps + 1
            if step.done:
                break
        assert step.success and step.score == 1.0, instance.instance_id
        assert steps == instance.metadata["walkthrough_length"]
        assert env.episode_extra() == {"task_type": instance.metadata["task_type"]}
        env.close()


def test_speedups_change_nothing(bench):
    """The same games, the walkthrough with random detours, with the speedups off and on:
    identical observations, admissible commands and outcomes."""
    games = one_per_type(bench, "valid_seen")[:3]
    rng = random.Random(0)
    plans = []
    for instance in games:
        walk = json.loads(instance.payload.read_text())["walkthrough"]
        detours = ["look", "inventory", "examine " + walk[0].removeprefix("go to "), "go to nowhere"]
        plans.append([a for step in walk for a in (rng.choice(detours), step)])
    try:
        speedups.disable()
        plain = [play(bench.make_env(i, 0), plan) for i, plan in zip(games, plans)]
    finally:
        speedups.enable()
    fast = [play(bench.make_env(i, 0), plan) for i, plan in zip(games, plans)]
    assert fast == plain
    assert all(run[-1][-1] is True for run in fast), "every plan ends in a win"


def test_engines_are_reused_within_a_worker(bench):
    instance = bench.instances("valid_unseen")[3]
    first = bench.make_env(instance, 0)
    first.reset()
    engine = first._engine
    first.close()
    second = bench.make_env(instance, 1)
    second.reset()
    assert second._engine is engine, "the same game reuses its loaded engine"
    second.close()


def test_runner_records_and_determinism(cli, tmp_path):
    outs = []
    for name, hash_seed in (("a", "1"), ("b", "2")):
        out = tmp_path / name
        result = cli("run", "--no-progress", "--benchmark", "alfworld", "--method",
                     "random,oracle", "--limit", "2", "--max-steps", "12", "--workers", "2",
                     "--out", str(out), env={"PYTHONHASHSEED": hash_seed})
        assert result.returncode == 0, result.stderr
        outs.append(sorted((without_timings(r) for r in read_records(out)),
                           key=lambda r: (r["method"], r["instance_id"])))
    assert outs[0] == outs[1], "same spec, same records"
    records = outs[0]
    assert len(records) == 4
    oracle = [r for r in records if r["method"] == "oracle"]
    assert all(r["success"] and r["extra"]["task_type"] == "examine" for r in oracle)
    random_steps = [r["steps"] for r in records if r["method"] == "random"]
    assert all(0 < s <= 12 for s in random_steps)


def test_a_broken_engine_is_an_env_error_and_is_not_reused(bench):
    instance = bench.instances("valid_unseen")[7]
    env = bench.make_env(instance, 0)
    env.reset()
    broken = env._engine
    broken.unwrapped._pddl_state = None  # the engine's game state is gone
    with pytest.raises(EnvError, match="ALFWorld engine failed"):
        env.step("look")
    env.close()
    again = bench.make_env(instance, 0)
    obs = again.reset()
    assert again._engine is not broken and "Your task is to" in obs.text
    again.close()


def test_a_crashed_worker_is_replaced_and_its_episode_retried(cli, tmp_path, faulty):
    out = tmp_path / "out"
    result = cli("run", "--no-progress", "--benchmark", "alfworld", "--method", "faulty",
                 "--limit", "3", "--workers", "1", "--out", str(out), *faulty("crash", "1"))
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    assert [(r["episode_index"], r["status"]) for r in records] == \
        [(0, "ok"), (1, "env_error"), (1, "ok"), (2, "ok")]
    assert all(r["success"] for r in records if r["status"] == "ok")


def test_missing_data_is_one_clear_line(cli, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = cli("run", "--no-progress", "--benchmark", "alfworld", "--method", "random",
                 "--out", str(tmp_path / "out"),
                 env={"LIFEBENCH_DATA": str(empty), "ALFWORLD_DATA": str(empty / "nope"),
                      "HOME": str(tmp_path)})
    assert result.returncode == 2
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1
    for word in ("LIFEBENCH_DATA", "ALFWORLD_DATA", "alfworld-download"):
        assert word in message
    assert not (tmp_path / "out" / "episodes.jsonl").exists()


def mirror_split(tmp_path: Path, split: str) -> Path:
    """A data folder in alfworld's layout whose split links to the real games."""
    root = tmp_path / "alfworld-data"
    target = root / "json_2.1.1" / split
    target.mkdir(parents=True)
    for task in (DATA / "json_2.1.1" / split).iterdir():
        (target / task.name).symlink_to(task)
    return root


def replace_game(root: Path, split: str, instance_id: str, edit) -> None:
    folder = root / "json_2.1.1" / split / instance_id.split("/")[0]
    real = folder.resolve()
    folder.unlink()
    shutil.copytree(real, folder)
    game_file = folder / instance_id.split("/")[1] / "game.tw-pddl"
    game_file.chmod(0o644)
    game = json.loads(game_file.read_text())
    edit(game)
    game_file.write_text(json.dumps(game))


def test_upstream_location_and_a_game_without_walkthrough(cli, tmp_path):
    """`ALFWORLD_DATA` alone works; a game file without a walkthrough is the same game,
    and the oracle falls back to the PDDL planner's plan."""
    root = mirror_split(tmp_path, "valid_unseen")
    instance = AlfworldBenchmark().instances("valid_unseen")[0]
    replace_game(root, "valid_unseen", instance.instance_id, lambda g: g.pop("walkthrough"))
    out = tmp_path / "out"
    # an empty LIFEBENCH_DATA means the per-user cache, read first: a fresh HOME has none
    environ = {"LIFEBENCH_DATA": "", "ALFWORLD_DATA": str(root), "HOME": str(tmp_path),
               "XDG_CACHE_HOME": ""}
    result = cli("run", "--no-progress", "--benchmark", "alfworld", "--method", "oracle",
                 "--instances", instance.instance_id, "--workers", "0", "--out", str(out),
                 env=environ)
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    assert record["success"] and record["status"] == "ok"


def test_a_different_game_is_refused(cli, tmp_path):
    root = mirror_split(tmp_path, "valid_unseen")
    instance = AlfworldBenchmark().instances("valid_unseen")[5]
    replace_game(root, "valid_unseen", instance.instance_id,
                 lambda g: g.update(pddl_problem=g["pddl_problem"].replace("(:init", "(:init ", 1)))
    result = cli("run", "--no-progress", "--benchmark", "alfworld", "--method", "oracle",
                 "--limit", "1", "--out", str(tmp_path / "out"),
                 env={"LIFEBENCH_DATA": "", "ALFWORLD_DATA": str(root), "HOME": str(tmp_path),
                      "XDG_CACHE_HOME": ""})
    assert result.returncode == 2
    assert instance.instance_id in result.stderr and "not the game" in result.stderr
