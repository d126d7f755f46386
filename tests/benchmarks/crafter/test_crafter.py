"""Crafter as text on the real crafter 1.8.3: determinism (within a process, across
processes, with and without rendering), the text observation, actions, records, the
official score."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import crafter
from lifebench.benchmarks.crafter.env import CrafterEnv, _fresh_worlds
from lifebench.benchmarks.crafter.text import ACTION_NAMES, parse_action
from conftest import ROOT, read_records, without_timings
from lifebench.api import EpisodeRecord
from lifebench.benchmarks.crafter.reporting import ACHIEVEMENTS, bootstrap_interval, crafter_score, score_of_rates

STEPS = 600


def stock_trajectory(seed: int, actions: list[int], render: bool) -> str:
    """A fingerprint of crafter's own Env played with `actions` from its first reset."""
    env = crafter.Env(seed=seed)
    if not render:
        env._obs = lambda: None
    env.reset()
    lines = []
    for action in actions:
        _, reward, done, info = env.step(action)
        lines.append(f"{info['player_pos'].tolist()} {reward:.2f} {info['inventory']} "
                     f"{info['semantic'].sum()} {len(env._world.objects)}")
        if done:
            break
    return "\n".join(lines)


def action_plan(seed: int = 0, n: int = STEPS) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(17) for _ in range(n)]


TRAJECTORY_SCRIPT = """
import sys, json
sys.path[:0] = {paths!r}
from lifebench.benchmarks.crafter import determinism
from test_crafter import stock_trajectory
determinism.{switch}()
print(json.dumps(stock_trajectory({seed}, {actions}, {render})))
"""


def trajectory_in_process(hash_seed: str, seed: int, actions: list[int], render: bool,
                          switch: str = "enable") -> str:
    here = str(Path(__file__).resolve().parent)
    code = TRAJECTORY_SCRIPT.format(paths=[str(ROOT / "tests"), here], seed=seed,
                                    actions=actions, render=render, switch=switch)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONHASHSEED": hash_seed, "PATH": "/usr/bin:/bin"}, check=True)
    return json.loads(out.stdout)


def test_same_seed_same_game_within_across_processes_and_with_rendering():
    actions = action_plan()
    reference = stock_trajectory(7, actions, render=False)
    assert reference == stock_trajectory(7, actions, render=False)
    assert reference == stock_trajectory(7, actions, render=True), "rendering changed the game"
    for hash_seed in ("1", "2"):
        assert trajectory_in_process(hash_seed, 7, actions, render=hash_seed == "2") == reference
    assert reference != stock_trajectory(8, actions, render=False)


def test_the_package_as_shipped_is_not_deterministic():
    """The reason for `determinism`: without it, rendering or the process changes the game."""
    actions = action_plan(1, 2000)
    runs = {trajectory_in_process(h, 3, actions, render=r, switch="disable")
            for h, r in (("1", False), ("2", False), ("1", True), ("3", True))}
    assert len(runs) > 1


def test_images_are_reproducible():
    frames = []
    for _ in range(2):
        env = crafter.Env(seed=5)
        env.reset()
        for action in action_plan(2, 250):  # past dusk: the night noise is drawn
            image, *_ = env.step(action)
        frames.append(image)
    assert np.array_equal(frames[0], frames[1])


def test_cached_world_plays_like_a_freshly_generated_one():
    plan = [ACTION_NAMES[a] for a in action_plan(3, 400)]

    def play() -> list[str]:
        env = CrafterEnv(11, 10000)
        texts = [env.reset().text]
        for action in plan:
            step = env.step(action)
            texts.append(step.observation.text)
            if step.done:
                break
        return texts + [json.dumps(env.episode_extra(), sort_keys=True)]

    _fresh_worlds.pop(11, None)
    fresh = play()
    assert 11 in _fresh_worlds
    assert play() == fresh


def test_text_observation_and_actions():
    env = CrafterEnv(0, 10000)
    text = env.reset().text
    lines = text.splitlines()
    assert lines[0].startswith("Your view (9 columns x 7 rows")
    grid = lines[1:8]
    assert len(grid) == 7 and all(len(row.split()) == 9 for row in grid)
    assert grid[3].split()[4] == "you"
    assert "Nearest of each kind: " in text and "Vitals: health 9/9, food 9/9" in text
    assert "Inventory: nothing." in text and "You are awake." in text
    assert len(ACTION_NAMES) == 17
    assert parse_action("Move West") == parse_action("move_left") == parse_action("move left") == 1
    assert parse_action("  MAKE wood-pickaxe. ") == 11
    assert parse_action("jump") is None
    env.step("dance")
    env.step("do")
    assert env.episode_extra()["invalid_actions"] == 1


def test_view_is_padded_at_the_world_edge():
    env = CrafterEnv(0, 10000)
    env.reset()
    player = env._env._player
    world = env._env._world
    assert world[(1, 1)][1] is None, "world 0 is deterministic: its corner cell is free"
    world.move(player, (1, 1))
    from lifebench.benchmarks.crafter.text import observe

    grid = observe(env._env._world, player, player.achievements).splitlines()[1:8]
    assert grid[0].split() == ["edge"] * 9
    assert [row.split()[0] for row in grid] == ["edge"] * 7
    assert grid[3].split()[4] == "you"


def test_records_and_leaderboard_score(cli, tmp_path):
    outs = []
    for name, hash_seed in (("a", "1"), ("b", "2")):
        out = tmp_path / name
        result = cli("run", "--no-progress", "--benchmark", "crafter", "--method", "random",
                     "--limit", "4", "--max-steps", "300", "--workers", "2", "--out", str(out),
                     env={"PYTHONHASHSEED": hash_seed})
        assert result.returncode == 0, result.stderr
        outs.append(sorted((without_timings(r) for r in read_records(out)),
                           key=lambda r: r["instance_id"]))
    assert outs[0] == outs[1]
    for record in outs[0]:
        extra = record["extra"]
        assert sorted(extra["achievements"]) == sorted(ACHIEVEMENTS)
        assert extra["length"] == record["steps"] <= 300
        assert record["score"] == sum(v > 0 for v in extra["achievements"].values())
        assert record["success"] == (not extra.get("dead", False))
    table = cli("leaderboard", str(tmp_path / "a")).stdout
    assert "Crafter score" in table and "success rate per achievement" in table
    assert "| collect_wood" in table


def test_episode_length_is_a_benchmark_argument(cli, tmp_path):
    out = tmp_path / "out"
    result = cli("run", "--no-progress", "--benchmark", "crafter", "--method", "random",
                 "--instances", "world-3", "--benchmark-arg", "crafter.length=5",
                 "--workers", "0", "--out", str(out))
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    assert record["steps"] == 5 and record["budget_steps"] == 5 and record["status"] == "ok"
    assert record["benchmark_config_hash"]


def record(achievements: dict[str, int], instance: str = "i", seed: int = 0) -> EpisodeRecord:
    return EpisodeRecord(run_id="r", benchmark="crafter", split="s", instance_id=instance,
                         method="m", method_config_hash="h", model=None, seed=seed, trial=0,
                         episode_index=0, budget_steps=1, steps=1, success=True, score=0.0,
                         status="ok", extra={"achievements": achievements})


def test_official_score_formula():
    # Two episodes: collect_wood in both (100%), wake_up in one (50%), the rest never.
    records = [record({"collect_wood": 1, "wake_up": 2}), record({"collect_wood": 3})]
    rates = np.zeros(len(ACHIEVEMENTS))
    rates[ACHIEVEMENTS.index("collect_wood")] = 100
    rates[ACHIEVEMENTS.index("wake_up")] = 50
    expected = np.exp(np.mean(np.log(1 + rates))) - 1
    assert crafter_score(records) == pytest.approx(expected)
    assert score_of_rates(np.full(22, 100.0)) == pytest.approx(100.0)
    assert score_of_rates(np.zeros(22)) == pytest.approx(0.0)
    many = [record({"collect_wood": 1, "wake_up": int(i % 2 == 0)}, f"w{i}") for i in range(200)]
    low, high = bootstrap_interval(many)
    assert low < crafter_score(many) < high
    assert bootstrap_interval(many) == (low, high), "the interval is seeded"
    # three seeds that replay each world: the instances are resampled, the interval is theirs
    replayed = [record(r.extra["achievements"], r.instance_id, seed) for r in many for seed in range(3)]
    assert crafter_score(replayed) == crafter_score(many)
    assert bootstrap_interval(replayed) == pytest.approx((low, high), abs=0.05)


WORLD_SCRIPT = """
import sys, hashlib
if {without_numba}:
    sys.modules["numba"] = None  # opensimplex falls back to its pure-Python noise
import crafter
h = hashlib.sha256()
for seed in (0, 1):
    env = crafter.Env(seed=seed)
    env._obs = lambda: None
    env.reset()
    h.update(env._world._mat_map.tobytes())
    h.update(repr([(type(o).__name__, o.pos.tolist()) for o in env._world.objects]).encode())
print(h.hexdigest())
"""


def test_compiled_noise_generates_the_same_worlds():
    """numba (in the crafter extra) only makes world generation faster."""
    digests = {subprocess.run([sys.executable, "-c", WORLD_SCRIPT.format(without_numba=flag)],
                              capture_output=True, text=True, check=True).stdout
               for flag in (True, False)}
    assert len(digests) == 1


def test_leaderboard_compares_random_with_the_published_random_agent(cli, tmp_path):
    """Crafter's own tables in the leaderboard: the rate of every achievement per cell and,
    for `random` at full length, the published random agent beside it, read from a score
    file in the Crafter repository's format (runs with `xs` and per-episode
    `achievement_<name>` counts) under $LIFEBENCH_DATA/crafter/."""
    out = tmp_path / "out"
    result = cli("run", "--no-progress", "--benchmark", "crafter", "--method", "random",
                 "--limit", "3", "--workers", "0", "--out", str(out))
    assert result.returncode == 0, result.stderr
    data = tmp_path / "data"
    (data / "crafter").mkdir(parents=True)
    runs = [{"xs": [100, 300, 2_000_000],
             **{f"achievement_{a}": [1 if a == "collect_wood" else 0, seed, 5] for a in ACHIEVEMENTS}}
            for seed in (0, 1)]
    (data / "crafter" / "crafter_noreward-random.json").write_text(json.dumps(runs))
    board = cli("leaderboard", str(out), "--no-plots", env={"LIFEBENCH_DATA": str(data)})
    assert board.returncode == 0, board.stderr
    assert "Crafter: success rate per achievement" in board.stdout
    section = board.stdout.split("vs the published random agent")[1].split("\n\n")[1]
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in section.splitlines()[2:]}
    # the third episode ends past 1e6 steps and is left out; per seed, then the mean:
    # collect_wood [1, 0] 50% and [1, 1] 100% -> 75%; eat_cow [0, 0] 0% and [0, 1] 50% -> 25%
    assert rows["collect_wood"][2] == "75.00" and rows["eat_cow"][2] == "25.00"
    assert rows["published score (paper)"][0] == "1.60"
    (data / "crafter" / "crafter_noreward-random.json").write_text("{}")
    bad = cli("leaderboard", str(out), "--no-plots", env={"LIFEBENCH_DATA": str(data)})
    assert bad.returncode == 2 and "not a Crafter score file" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_oracle_methods_skip_a_benchmark_without_an_oracle(cli, tmp_path):
    alone = cli("run", "--no-progress", "--benchmark", "crafter", "--method", "oracle",
                "--out", str(tmp_path / "alone"))
    assert alone.returncode == 2 and "has no oracle" in alone.stderr
    out = tmp_path / "grid"
    grid = cli("run", "--no-progress", "--benchmark", "crafter", "--method", "random,oracle",
               "--limit", "1", "--max-steps", "5", "--workers", "0", "--out", str(out))
    assert grid.returncode == 0, grid.stderr
    assert "skipping oracle on crafter:seeds-100: crafter has no oracle" in grid.stderr
    assert [r["method"] for r in read_records(out)] == ["random"]


def test_minimal_prompting_is_the_action_list_alone_and_keys_its_own_streams():
    from lifebench import registry
    from lifebench.benchmarks.crafter import CrafterConfig
    from lifebench.config.plugins import benchmark_config_hash, short_hash

    minimal = registry.get_benchmark("crafter", CrafterConfig(manual="minimal")).instructions
    full = registry.get_benchmark("crafter").instructions
    assert "make wood pickaxe" in minimal and "place table" in minimal
    assert "survival" in full and "survival" not in minimal and "zombies" not in minimal
    # a field added at its default leaves the hashes earlier records carry as they were
    assert benchmark_config_hash("crafter", CrafterConfig(length=2000)) == \
        short_hash({"name": "crafter", "config": {"length": 2000}})
    assert benchmark_config_hash("crafter", CrafterConfig(length=2000, manual="minimal")) not in \
        ("", benchmark_config_hash("crafter", CrafterConfig(length=2000)))


def test_move_to_walks_toward_a_position_and_counts_each_move(cli, llm_server, tmp_path):
    from lifebench import registry

    env = registry.get_benchmark("crafter").make_env(registry.get_benchmark("crafter").instance(
        "seeds-100", "world-0"), 0)
    env.reset()  # the player starts at [32, 32] of world 0; [35, 32] is stone
    step = env.step_within("Move To [36, 32]", 10)
    assert step.actions == 3 and step.observation.text.startswith(
        "Move to [36, 32]: 3 move(s), stopped at [34, 32]: the way is blocked.")
    step = env.step_within("move to [20, 40]", 3)  # no more moves than the budget has left
    assert step.actions == 3 and "stopped: no steps left" in step.observation.text
    assert env.step_within("move to [99, 3]", 5).actions == 1  # off the map: a noop, said so
    assert env.invalid_actions == 1
    # in a run, the moves are the episode's steps: 2 actions use the 8-step budget
    srv = llm_server(script=["Thought: walk.\nAction: move to [20, 40]"])
    out = tmp_path / "out"
    result = cli("run", "--no-progress", "--method", "react", "--benchmark", "crafter", "--split",
                 "seeds-100", "--limit", "1", "--max-steps", "8", "--model", "m", "--base-url",
                 srv.url, "--cache", "off", "--workers", "0", "--out", str(out))
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    assert record["steps"] == 8 and record["status"] == "budget_exhausted"
    assert record["llm_calls"] < 8 and record["extra"]["length"] == 8
