"""Crafter's instance contexts on the real game: the schema and the failure text the env
prints, the player's position in the observation, native snapshots that replay exactly, and
the world's ground truth, which a walk over the world sees in full."""

from __future__ import annotations

import collections
import random
import re

import numpy as np
import pytest

from lifebench.api import ContextSchema, coverage, normalise_name
from lifebench.runner.exploration import CountedExplorationEnv
from lifebench.benchmarks.crafter import CrafterBenchmark
from lifebench.benchmarks.crafter.context import instance_facts
from lifebench.benchmarks.crafter.env import CrafterEnv, CrafterSnapshot
from lifebench.benchmarks.crafter.text import ACTION_NAMES, VIEW_COLUMNS, VIEW_ROWS, VITALS

HALF_X, HALF_Y = VIEW_COLUMNS // 2, VIEW_ROWS // 2
MOVES = {(1, 0): "move east", (-1, 0): "move west", (0, 1): "move south", (0, -1): "move north"}
WALKABLE = ("grass", "sand", "path")
POSITION = re.compile(r"^Position: \[(\d+), (\d+)\] \(x grows east, y grows south; "
                      r"the view spans x (-?\d+)\.\.(-?\d+), y (-?\d+)\.\.(-?\d+)\)\.$", re.M)


def random_actions(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(ACTION_NAMES) for _ in range(n)]


def play(env: CrafterEnv, actions: list[str]) -> list[str]:
    texts = []
    for action in actions:
        step = env.step(action)
        texts.append(step.observation.text)
        if step.done:
            break
    return texts


def test_schema_and_the_failure_text_the_game_prints():
    schema = CrafterBenchmark().context_schema()
    assert isinstance(schema, ContextSchema) and schema.mode == "agent"
    text = schema.text()
    assert "Unknown" in text and "#### Observations" in text and "#### Action Rules" in text
    assert "Position [x, y]: can see" in text
    env = CrafterEnv(0, 10000)
    assert not schema.is_failure(env.reset().text)
    bad = env.step("dance around").observation.text
    assert bad.startswith('Your action "dance around" names no action of the game; it was played as noop.')
    assert schema.is_failure(bad)
    for action in ("move north", "do", "noop", "Move_Left"):
        assert not schema.is_failure(env.step(action).observation.text), action
    # A real action whose requirements do not hold changes nothing, silently (Crafter has
    # no message for it): not a failure the text can show.
    assert not schema.is_failure(env.step("place table").observation.text)
    assert env.episode_extra()["invalid_actions"] == 1


def test_the_observation_states_the_players_position_and_the_view_matches_the_map():
    env = CrafterEnv(4, 10000)
    texts = [env.reset().text] + play(env, [random.Random(1).choice(list(MOVES.values()))
                                            for _ in range(120)])
    player, world = env._env._player, env._env._world
    x, y, x0, x1, y0, y1 = map(int, POSITION.search(texts[-1]).groups())
    assert [x, y] == player.pos.tolist() and (x0, x1, y0, y1) == (x - 4, x + 4, y - 3, y + 3)
    positions = {tuple(map(int, POSITION.search(t).groups()[:2])) for t in texts}
    assert len(positions) > 10, "the walk moved"
    # The grid row r, column c is the cell [x - 4 + c, y - 3 + r]: x grows east, y south.
    grid = [row.split() for row in texts[-1].splitlines()[1:1 + VIEW_ROWS]]
    checked = 0
    for r, row in enumerate(grid):
        for c, cell in enumerate(row):
            cx, cy = x - HALF_X + c, y - HALF_Y + r
            if 0 <= cx < 64 and 0 <= cy < 64 and world._obj_map[cx, cy] == 0:
                assert cell == world[(cx, cy)][0], (r, c)
                checked += 1
    assert checked > 40


def test_restore_then_the_same_actions_give_the_same_observations():
    # After the snapshot the random player lives 242 more steps (creatures move and spawn,
    # night falls) and dies: all of it drawn from the world's random generators.
    prefix, suffix = random_actions(7, 40) + ["jump"], random_actions(10, 400)
    env = CrafterEnv(5, 10000)
    env.reset()
    at_snapshot = play(env, prefix)[-1]
    snapshot = env.snapshot()
    assert isinstance(snapshot, CrafterSnapshot) and snapshot.step == len(prefix)
    first = play(env, suffix)
    first_extra = env.episode_extra()
    assert len(first) == 242 and first_extra["dead"]

    for _ in range(2):  # a snapshot serves any number of restores
        play(env, random_actions(9, 50))  # somewhere else first
        restored = env.restore(snapshot)
        # the note about the unparsed "jump" belongs to the step, not to the state
        assert restored.text == at_snapshot.split("\n", 1)[1]
        assert env.episode_extra()["invalid_actions"] == 1 and env.episode_extra()["length"] == len(prefix)
        assert play(env, suffix) == first
        assert env.episode_extra() == first_extra

    # and the same as a fresh episode that replays the whole prefix (another env object)
    replay = CrafterEnv(5, 10000)
    replay.reset()
    play(replay, prefix)
    assert play(replay, suffix) == first and replay.episode_extra() == first_extra


def test_native_restore_and_the_harness_replay_agree_played_in_turns():
    """The harness's exploration env restores natively (no step) where the replay fallback
    resets and replays; the two envs share this thread's crafter engine, played in turns,
    and each plays as an env played alone."""
    actions = random_actions(11, 60)
    alone = CrafterEnv(3, 10000)
    alone.reset()
    expected = play(alone, actions)
    assert len(expected) == 60
    native = CountedExplorationEnv(CrafterEnv(3, 10000), budget=200)
    replay = CountedExplorationEnv(CrafterEnv(3, 10000), budget=200, replay_only=True)
    assert native.native and not replay.native
    for env in (native, replay):
        env.reset()
    for action, text in zip(actions[:30], expected):
        assert native.step(action).observation.text == replay.step(action).observation.text == text
    snaps = (native.snapshot(), replay.snapshot())
    for action, text in zip(actions[30:], expected[30:]):
        assert native.step(action).observation.text == replay.step(action).observation.text == text
    assert native.restore(snaps[0]).text == replay.restore(snaps[1]).text == expected[29]
    assert [native.step(a).observation.text for a in actions[30:40]] == expected[30:40]
    assert [replay.step(a).observation.text for a in actions[30:40]] == expected[30:40]
    assert native.steps == 70 and replay.steps == 100  # a replayed action is a step too


def test_restore_refuses_what_is_not_its_snapshot():
    env = CrafterEnv(5, 10000)
    env.reset()
    snapshot = env.snapshot()
    with pytest.raises(TypeError):
        env.restore(("world", "player"))
    with pytest.raises(ValueError, match="world 5"):
        CrafterEnv(6, 10000).restore(snapshot)
    with pytest.raises(ValueError, match="length 10000"):
        CrafterEnv(5, 100).restore(snapshot)


# -- a scripted walk: privileged (it reads the map to plan), the game played for real


def _window(mask: np.ndarray, x: int, y: int) -> np.ndarray:
    return mask[max(0, x - HALF_X):x + HALF_X + 1, max(0, y - HALF_Y):y + HALF_Y + 1]


def _walkable(world) -> np.ndarray:
    return np.isin(world._mat_map, [world._mat_ids[m] for m in WALKABLE])


def _neighbours(cell, area):
    for d in MOVES:
        n = (cell[0] + d[0], cell[1] + d[1])
        if 0 <= n[0] < area[0] and 0 <= n[1] < area[1]:
            yield d, n


def _path_to_news(world, start, unseen, avoid_creatures: bool):
    """Moves to the nearest walkable cell from which an unseen cell is in view."""
    free = _walkable(world) & ((world._obj_map == 0) if avoid_creatures else True)
    came = {start: None}
    queue = collections.deque([start])
    while queue:
        cell = queue.popleft()
        if _window(unseen, *cell).any():
            moves = []
            while came[cell] is not None:
                d, cell = came[cell]
                moves.append(d)
            return moves[::-1]
        for d, n in _neighbours(cell, world.area):
            if n not in came and free[n]:
                came[n] = (d, cell)
                queue.append(n)
    return None


def walk_the_world(env: CrafterEnv, max_steps: int) -> tuple[list[str], int]:
    """Walk (grass, sand, path; no lava) until every cell in view of a cell walkable from
    the start has been in view, hitting creatures in the way. The vitals are topped up
    before each step: staying alive is not what this walk is about."""
    texts = [env.reset().text]
    world, player = env._env._world, env._env._player
    start = tuple(player.pos.tolist())
    reach, walkable, queue = {start}, _walkable(world), collections.deque([start])
    while queue:
        for _, n in _neighbours(queue.popleft(), world.area):
            if n not in reach and walkable[n]:
                reach.add(n)
                queue.append(n)
    unseen = np.zeros(world.area, bool)
    for cell in reach:
        _window(unseen, *cell)[...] = True
    _window(unseen, *start)[...] = False
    steps = 0
    while steps < max_steps:
        here = tuple(player.pos.tolist())
        moves = _path_to_news(world, here, unseen, True) or _path_to_news(world, here, unseen, False)
        if not moves:
            break
        for d in moves:
            for vital in VITALS:
                player.inventory[vital] = 9
            texts.append(env.step(MOVES[d]).observation.text)
            steps += 1
            now = tuple(player.pos.tolist())
            _window(unseen, *now)[...] = False
            if now != (here[0] + d[0], here[1] + d[1]):
                if now == here and steps < max_steps:  # a creature in the way
                    texts.append(env.step("do").observation.text)
                    steps += 1
                break
            here = now
    assert not unseen.any(), "the walk saw everything it could"
    return texts, steps


def named_in(text: str, name: str) -> bool:
    return f" {normalise_name(name)} " in f" {normalise_name(text)} "


# World 10 has no diamond.
@pytest.mark.parametrize("world_seed", [0, 10])
def test_instance_facts_are_what_a_walk_over_the_world_sees(world_seed):
    env = CrafterEnv(world_seed, 10000)
    with pytest.raises(RuntimeError):
        instance_facts(env)
    env.reset()
    facts = CrafterBenchmark().instance_facts(env)
    assert facts.locations == frozenset()
    assert {"grass", "tree", "water", "stone", "coal", "iron", "cow"} <= facts.objects
    assert not facts.objects & {"you", "edge", "unknown", "table", "furnace", "arrow"}
    assert ("diamond" in facts.objects) == (world_seed != 10)

    texts, steps = walk_the_world(env, 3000)
    assert steps < 3000
    for name in facts.objects:
        assert any(named_in(text, name) for text in texts), name
    document = "\n\n".join(texts)
    assert coverage(document, facts) == {"objects": 1.0, "all": 1.0}
    assert coverage("", facts) == {"objects": 0.0, "all": 0.0}
    # the ground truth is the world as generated, whatever was played since
    assert CrafterBenchmark().instance_facts(env) == facts
    # a short look around sees only part of it
    partial = coverage("\n\n".join(texts[:20]), facts)["all"]
    assert 0.0 < partial < 1.0
