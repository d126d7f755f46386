"""A Crafter episode as text, deterministic, with worlds generated once per worker.

The world of instance `world-S` is the one crafter's `Env(seed=S)` generates on its first
reset. Generating it runs simplex noise in pure Python for every cell (~1.4 s); the
steps after it cost well under a millisecond. Each worker keeps the freshly generated
worlds it has made (a deep copy of the world and player, the world's random generator
included) and restores a copy for the next episode on the same world, so trials, seeds
and methods on one world pay for it once. Images are not rendered unless asked for
(`render()`). See `determinism.py` for what makes the game reproducible.

Episode: the harness's budget counts actions; crafter ends the episode itself when the
player dies or after `length` steps (10000, Crafter's). Success = alive at the end;
score = the number of distinct achievements unlocked; `extra` holds the 22 achievement
counts, the length, the crafter reward, and how many actions could not be parsed (each
played as noop).
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from typing import Any

import crafter

from lifebench.api import Observation, Step

from lifebench.benchmarks.crafter import determinism
from lifebench.benchmarks.crafter.text import NOOP, observe, parse_action

determinism.enable()

_WORLDS_KEPT = 32
_fresh_worlds: "OrderedDict[int, tuple[Any, Any]]" = OrderedDict()
_worlds_lock = threading.Lock()
_local = threading.local()  # streams played at once in a worker each have their engines


def _engine(length: int) -> Any:
    """This thread's crafter Env for an episode length, rendering switched off."""
    _engines = _local.__dict__.setdefault("engines", {})
    if length not in _engines:
        env = crafter.Env(length=length)
        # step() and reset() would render an image, and step() a semantic map for its
        # info, on every call; the text observation needs neither.
        env._obs = lambda: None
        env._sem_view = lambda: None
        _engines[length] = env
    return _engines[length]


def _start_world(env: Any, world_seed: int) -> None:
    """Put `env` at the start of the world of `world_seed`, as `Env(seed=world_seed)`'s
    first reset would."""
    with _worlds_lock:
        fresh = _fresh_worlds.get(world_seed)
        if fresh is not None:
            _fresh_worlds.move_to_end(world_seed)
    if fresh is not None:
        world, player = copy.deepcopy(fresh)
        env._world = world
        env._local_view._world = world
        env._player = player
        env._step = 0
        env._update_time()
        env._last_health = player.health
        env._unlocked = set()
        return
    env._seed = world_seed
    env._episode = 0
    env.reset()
    snapshot = copy.deepcopy((env._world, env._player))
    with _worlds_lock:
        _fresh_worlds[world_seed] = snapshot
        while len(_fresh_worlds) > _WORLDS_KEPT:
            _fresh_worlds.popitem(last=False)


class CrafterEnv:
    def __init__(self, world_seed: int, length: int) -> None:
        self.world_seed = world_seed
        self.length = length
        self._env: Any = None
        self.invalid_actions = 0
        self.reward = 0.0
        self.dead = False

    # -- protocol
    def reset(self) -> Observation:
        self._env = _engine(self.length)
        _start_world(self._env, self.world_seed)
        self.invalid_actions, self.reward, self.dead = 0, 0.0, False
        return self._observation()

    def step(self, action: str) -> Step:
        env = self._require()
        index = parse_action(action)
        if index is None:
            self.invalid_actions += 1
            index = NOOP
        _, reward, done, _ = env.step(index)
        self.reward += reward
        self.dead = env._player.health <= 0
        return Step(self._observation(), reward=float(reward), done=bool(done),
                    score=float(self.unlocked), success=not self.dead,
                    info={"dead": True} if self.dead else {})

    def valid_actions(self) -> list[str]:
        from lifebench.benchmarks.crafter.text import ACTION_NAMES

        return list(ACTION_NAMES)

    def render(self) -> Any:
        """The image crafter would show (64x64 RGB), drawn only when asked."""
        return self._require().render()

    def close(self) -> None:
        self._env = None

    def episode_extra(self) -> dict[str, Any]:
        env = self._require()
        extra: dict[str, Any] = {"achievements": dict(env._player.achievements),
                                 "length": int(env._step), "reward": round(self.reward, 4),
                                 "invalid_actions": self.invalid_actions}
        if self.dead:
            extra["dead"] = True
        return extra

    # -- helpers
    @property
    def unlocked(self) -> int:
        return sum(1 for n in self._require()._player.achievements.values() if n > 0)

    def _observation(self) -> Observation:
        env = self._require()
        return Observation(observe(env._world, env._player, env._player.achievements),
                           data={"inventory": dict(env._player.inventory)})

    def _require(self) -> Any:
        if self._env is None:
            raise RuntimeError("call reset() before using the environment")
        return self._env
