"""TextWorld cooking on the real jericho/textworld engine: IGE's games, the walkthrough
oracle, lazy state tracking, determinism, and generated splits."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
import textworld

from lifebench.benchmarks.textworld import TextWorldBenchmark
from lifebench.benchmarks.textworld import generate
from lifebench.benchmarks.textworld.env import COMMANDS, PLAIN, POLICY, jericho_seed
from conftest import read_records, without_timings
from lifebench.api import EnvError

DATA = Path(os.environ.get("LIFEBENCH_DATA", "../shared/data")).resolve() / "textworld"
needs_ige = pytest.mark.skipif(not (DATA / "ige_cooking").is_dir(),
                               reason="IGE's cooking games not found (set LIFEBENCH_DATA)")


@pytest.fixture(scope="module")
def bench():
    return TextWorldBenchmark()


@needs_ige
def test_ige_split(bench):
    instances = bench.instances("ige-cooking")
    assert len(instances) == 25
    assert all(i.metadata["max_score"] == 17 and i.metadata["ingredients"] == 5 for i in instances)
    assert instances[0].instance_id == "cooking_item5_seed_10980"
    assert bench.budget(instances[0]) == 80


@needs_ige
def test_observations_are_clean_and_the_oracle_wins(bench):
    instance = bench.instances("ige-cooking")[0]
    env = bench.make_env(instance, 0)
    oracle = bench.oracle(env)
    obs = env.reset()
    assert obs.text.startswith("You are hungry! Let's cook a delicious meal.")
    assert "$$" not in obs.text and not obs.text.rstrip().endswith(">")
    step = env.step("inventory")
    assert step.observation.text == "You are carrying nothing."
    obs = env.reset()
    total = 0.0
    while True:
        step = env.step(oracle.next_action(obs))
        obs, total = step.observation, total + step.reward
        if step.done:
            break
    assert step.success and step.score == 17 and total == 17
    assert env.episode_extra() == {"max_score": 17, "normalized_score": 1.0}


@needs_ige
def test_a_lost_game_ends_the_episode(bench):
    env = bench.make_env(bench.instances("ige-cooking")[0], 0)
    env.reset()
    walk = env.walkthrough()
    for action in walk[:walk.index("take orange bell pepper") + 1]:
        env.step(action)
    step = env.step("eat orange bell pepper")
    assert step.done and not step.success and step.info == {"lost": True}
    assert env.episode_extra()["lost"] is True


@needs_ige
@pytest.mark.filterwarnings("ignore:.*is not fully supported")
def test_admissible_commands_switch_on_tracking_without_changing_the_game(bench):
    instance = bench.instances("ige-cooking")[2]
    untracked = bench.make_env(instance, 0)
    untracked.reset()
    walk = untracked.walkthrough()
    plain = [untracked.step(a).observation.text for a in walk]
    untracked.close()

    tracked = bench.make_env(instance, 0)
    tracked.reset()
    # textworld tracking from the start: the admissible commands and policies to expect
    reference = textworld.start(str(instance.payload), textworld.EnvInfos(
        admissible_commands=True, policy_commands=True))
    reference.seed(jericho_seed(0))
    reference.reset()
    expected, policies, seen = {}, {}, []
    for k, action in enumerate(walk):
        if k < 10:
            assert tracked._mode == PLAIN
        elif k == 12:
            # the policy mid-episode: replayed again, on an engine tracking the quests too
            assert tracked.policy() == policies[k - 1] and tracked._mode == POLICY
        elif k % 5 == 0:
            # at k == 10: the 10 actions so far are replayed on an engine tracking the state
            # (not the quests: the policy is not asked for yet)
            assert tracked.valid_actions() == expected[k - 1]
            assert tracked._mode == (COMMANDS if k < 12 else POLICY)
        seen.append(tracked.step(action).observation.text)
        state = reference.step(action)[0]
        expected[k], policies[k] = state["admissible_commands"], state["policy_commands"]
    assert seen == plain


@needs_ige
@pytest.mark.slow(reason="the assertion is about every game: the oracle and the walkthrough "
                         "are played on all 25 ige-cooking games")
def test_oracle_on_all_games_and_determinism(cli, tmp_path):
    """The oracle (TextWorld's winning policy) wins all 25 games within IGE's horizon (80
    steps, the default budget); the walkthrough, an option, needs up to 90. Random is
    deterministic (25 steps: each of its steps asks for the admissible commands, which
    tracks the game's state, ~8x a plain step)."""
    out = tmp_path / "policy"
    result = cli("run", "--no-progress", "--benchmark", "textworld", "--method", "oracle",
                 "--workers", "2", "--out", str(out))
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    assert len(records) == 25 and all(r["success"] and r["score"] == 17 for r in records)
    assert all(r["budget_steps"] == 80 for r in records) and max(r["steps"] for r in records) <= 58
    [row] = csv.DictReader(io.StringIO(cli("leaderboard", str(out), "--format", "csv").stdout))
    assert row["normalized score"] == "1.000" and row["mean score"] == "17.000"
    walk = tmp_path / "walkthrough"
    result = cli("run", "--no-progress", "--benchmark", "textworld", "--method", "oracle",
                 "--benchmark-arg", "oracle=walkthrough", "--budget", "90", "--workers", "2",
                 "--out", str(walk))
    assert result.returncode == 0, result.stderr
    walked = read_records(walk)
    assert all(r["success"] for r in walked) and max(r["steps"] for r in walked) > 80
    assert walked[0]["benchmark_config"] == {"oracle": "walkthrough"}

    runs = []
    for name, hash_seed in (("a", "1"), ("b", "2")):
        out = tmp_path / name
        result = cli("run", "--no-progress", "--benchmark", "textworld", "--method",
                     "random,oracle", "--limit", "6", "--max-steps", "25", "--workers", "2",
                     "--out", str(out), env={"PYTHONHASHSEED": hash_seed})
        assert result.returncode == 0, result.stderr
        runs.append(sorted((without_timings(r) for r in read_records(out)),
                           key=lambda r: (r["method"], r["instance_id"])))
    assert runs[0] == runs[1]  # (the oracle's wins are asserted above, at its budget)
    assert any(r["method"] == "random" and r["score"] > 0 for r in runs[0])


@needs_ige
def test_a_broken_engine_is_an_env_error_and_is_not_reused(bench):
    instance = bench.instances("ige-cooking")[1]
    env = bench.make_env(instance, 0)
    env.reset()
    broken = env._engine
    broken.close()  # the Z-machine is gone under the episode
    with pytest.raises(EnvError, match="TextWorld failed"):
        env.step("look")
    env.close()
    again = bench.make_env(instance, 0)
    assert again.reset().text.startswith("You are hungry")
    assert again._engine is not broken
    again.close()


@needs_ige
def test_missing_games_are_one_clear_line(cli, tmp_path):
    result = cli("run", "--no-progress", "--benchmark", "textworld", "--method", "random",
                 "--out", str(tmp_path / "out"),
                 env={"LIFEBENCH_DATA": str(tmp_path), "LIFEBENCH_IGE_COOKING": ""})
    assert result.returncode == 2
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1
    assert "LIFEBENCH_DATA" in message and "LIFEBENCH_IGE_COOKING" in message


def make_at_once(cache: Path, count: int) -> list[float]:
    """`count` processes making the same split into `cache` at once; each one's CPU seconds
    (its own and its tw-make's)."""
    env = {**os.environ, "LIFEBENCH_CACHE": str(cache)}
    makers = [subprocess.Popen([sys.executable, "-m", "lifebench.cli", "splits", "make",
                                "textworld-cooking", "--n", "1", "--seed", "7"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(count)]
    cpu = []
    for maker in makers:
        _, status, usage = os.wait4(maker.pid, 0)
        maker.returncode = os.waitstatus_to_exitcode(status)
        out, err = maker.stdout.read().decode(), maker.stderr.read().decode()
        assert maker.returncode == 0, err
        assert "textworld:textworld-cooking-1-s7: 1 instances" in out
        cpu.append(usage.ru_utime + usage.ru_stime)
    return cpu


def test_generated_split_is_byte_identical_and_runs(cli, tmp_path):
    # two makers at once: one makes the split, the other waits for it and finds it made
    # (its CPU: its start only; a second maker would spend as much as the first)
    waiter, maker = sorted(make_at_once(tmp_path / "first", 2))
    assert waiter < 0.5 * maker, (waiter, maker)
    make_at_once(tmp_path / "second", 1)
    files = []
    for name in ("first", "second"):
        folder = tmp_path / name / "textworld" / "textworld-cooking-1-s7"
        files.append({p.name: p.read_bytes() for p in sorted(folder.iterdir())})
    assert files[0] == files[1]
    assert sorted(files[0]) == sorted(["manifest.json"] + [
        f"cooking_seed_{s}{suffix}" for s in generate.game_seeds(1, 7)
        for suffix in (".json", ".ni", ".z8")])
    z8 = next(data for name, data in files[0].items() if name.endswith(".z8"))
    assert z8[18:24] == b"000000", "the compile date is not in the game"
    assert generate.game_seeds(3, 7)[:2] == generate.game_seeds(2, 7)
    assert generate.game_seeds(2, 7)[:1] == generate.game_seeds(1, 7)

    cache = {"LIFEBENCH_CACHE": str(tmp_path / "first")}
    listed = cli("list", "splits", "--benchmark", "textworld", env=cache)
    assert "textworld:textworld-cooking-1-s7" in listed.stdout
    out = tmp_path / "out"
    result = cli("run", "--no-progress", "--benchmark", "textworld", "--split",
                 "textworld-cooking-1-s7", "--method", "oracle", "--max-steps", "200",
                 "--out", str(out), env=cache)
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    assert len(records) == 1 and all(r["success"] for r in records)

    # A split not generated here, and a generated file that was altered, are refused.
    result = cli("run", "--no-progress", "--benchmark", "textworld", "--split",
                 "textworld-cooking-3-s7", "--method", "oracle", "--out", str(out), env=cache)
    assert result.returncode == 2
    assert "lifebench splits make textworld-cooking --n 3 --seed 7" in result.stderr
    game = next((tmp_path / "first" / "textworld" / "textworld-cooking-1-s7").glob("*.json"))
    game.write_text(game.read_text().replace("kitchen", "kitchem", 1))
    result = cli("run", "--no-progress", "--benchmark", "textworld", "--split",
                 "textworld-cooking-1-s7", "--method", "oracle", "--out", str(out), env=cache)
    assert result.returncode == 2 and "rm -rf" in result.stderr
    assert len(read_records(out)) == 1, "what was recorded is kept"


def test_bad_generation_requests(cli, tmp_path):
    env = {"LIFEBENCH_CACHE": str(tmp_path)}
    result = cli("splits", "make", "textworld-cookin", "--n", "2", env=env)
    assert result.returncode == 2 and "did you mean 'textworld-cooking'" in result.stderr
    result = cli("splits", "make", "textworld-cooking", "--n", "0", env=env)
    assert result.returncode == 2 and "--n" in result.stderr
    result = cli("splits", "make", "textworld-cooking", "--n", "two", env=env)
    assert result.returncode == 2 and "--n: expected an integer" in result.stderr
