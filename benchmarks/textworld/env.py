"""A TextWorld cooking game on jericho, with engines reused per worker and the game-state
tracker switched on only when a method asks for admissible commands or the policy.

TextWorld can track the game's state (its logic replayed beside the Z-machine) to list the
admissible commands, and track its quests too to give the winning policy from the current
state; a step tracking the state costs ~2.4x a plain step, one tracking the quests ~8x.
An episode starts on a plain engine (`PLAIN`); the first `valid_actions()` call replays its
actions on an engine tracking the state (`COMMANDS`), the first `policy()` after an action
on one tracking quests too (`POLICY`): same game, same Z-machine seed, the same observation
checked, and the episode goes on there. The policy before any action (the oracle's one
question) is read on a `POLICY` engine that goes back to its pool at once. Methods that
never ask (most LLM agents) never pay for tracking.

The Z-machine's random generator is seeded from the episode seed (jericho's own default
draws on the clock). Observations drop the game's ASCII-art banner at reset and the
command prompt and status line after each answer. Success = won; the episode also ends
when the game is lost (`extra.lost`). `score` is the game's points; `extra.max_score`
and `extra.normalized_score` go with it.
"""

from __future__ import annotations

import re
import threading
import warnings
from pathlib import Path
from typing import Any

from lifebench.api import EnvError
from lifebench.api import Observation, Step

from lifebench.benchmarks.engine_pool import EnginePool, PooledEngineEnv

# The banner: the leading lines drawn with these characters only.
_ART = re.compile(r"[\s_|\\/$<>()'`.,-]*")
# After each answer: a line with the prompt, then the status line ("-= Kitchen =-0/3").
_PROMPT = re.compile(r"\n>[^\n]*\Z")
_BLANK_LINES = re.compile(r"\n(?:[ \t]*\n)+")


# What an engine tracks, cheapest first: each mode gives what the ones before it give.
PLAIN, COMMANDS, POLICY = "plain", "commands", "policy"
MODES = (PLAIN, COMMANDS, POLICY)


def _new_engine(mode: str) -> Any:
    import textworld
    from textworld.envs import JerichoEnv
    from textworld.envs.wrappers.tw_inform7 import TWInform7

    infos = textworld.EnvInfos(score=True, max_score=True, won=True, lost=True,
                               admissible_commands=mode != PLAIN, policy_commands=mode == POLICY,
                               extras=["walkthrough"])
    return TWInform7(JerichoEnv(infos))


def _load_game(engine: Any, game_file: str) -> None:
    with warnings.catch_warnings():
        # jericho knows no TextWorld game; TextWorld itself tracks score and the end.
        warnings.filterwarnings("ignore", message=".*is not fully supported")
        engine.load(game_file)


def _close(engine: Any) -> None:
    engine.close()


# textworld's state tracker parses with shared tatsu parsers: streams playing in threads
# of one worker take turns on the engines (a step is a few ms, an LLM call ~1 s).
_engine_lock = threading.RLock()
_pools = {mode: EnginePool(lambda m=mode: _new_engine(m), _load_game, _close, max_idle=3)
          for mode in MODES}


def clean_text(text: str) -> str:
    # Tracking strips the game's event tags, leaving fewer blank lines: normalise them, so
    # the observation does not depend on whether tracking is on.
    return _BLANK_LINES.sub("\n\n", _PROMPT.sub("", text)).strip()


def clean_intro(text: str) -> str:
    lines = text.split("\n")
    while lines and _ART.fullmatch(lines[0]):
        lines.pop(0)
    return clean_text("\n".join(lines))


def jericho_seed(seed: int) -> int:
    # jericho treats 0 as "no seed" (clock-based): shift by one.
    return seed + 1


class CookingEnv(PooledEngineEnv):
    engine_lock = _engine_lock

    def __init__(self, game_file: Path, seed: int) -> None:
        self.game_file = str(game_file)
        self.seed = seed
        self._engine: Any = None
        self._mode = PLAIN
        self._state: Any = None
        self._actions: list[str] = []
        self._score = 0

    # -- protocol
    def reset(self) -> Observation:
        self._release()
        self._state = self._start(PLAIN)
        self._actions = []
        self._score = 0
        return Observation(clean_intro(self._state.feedback),
                           data={"score": 0, "max_score": self.max_score})

    def step(self, action: str) -> Step:
        engine = self._require()
        self._state, score, _ = self._call(lambda: engine.step(action))
        self._actions.append(action)
        won, lost = bool(self._state["won"]), bool(self._state["lost"])
        reward, self._score = score - self._score, score
        return Step(Observation(clean_text(self._state.feedback),
                                data={"score": score, "max_score": self.max_score}),
                    reward=float(reward), done=won or lost, score=float(score), success=won,
                    info={"lost": True} if lost else {})

    def valid_actions(self) -> list[str]:
        self._require()
        self._track_at_least(COMMANDS)
        return list(self._state["admissible_commands"])

    def walkthrough(self) -> list[str]:
        self._require()
        return list(self._state["extra.walkthrough"])

    def policy(self) -> list[str]:
        """TextWorld's winning policy from the current state (its quest logic's shortest
        plan; the walkthrough revisits rooms): needs the state tracker."""
        self._require()
        if self._mode != POLICY and not self._actions:
            return self._policy_at_start()
        self._track_at_least(POLICY)
        return list(self._state["policy_commands"])

    def game(self) -> Any:
        """The textworld `Game` the engine loaded (the game's .json: its world and entity
        infos). Privileged: the instance's ground truth for contexts (`context.py`), never
        shown to a method."""
        return self._require()._game

    def close(self) -> None:
        self._release()

    def episode_extra(self) -> dict[str, Any]:
        extra: dict[str, Any] = {"max_score": self.max_score,
                                 "normalized_score": self._score / self.max_score}
        if self._state is not None and self._state["lost"]:
            extra["lost"] = True
        return extra

    @property
    def max_score(self) -> int:
        return int(self._state["max_score"])

    # -- helpers
    def _start(self, mode: str) -> Any:
        def start() -> Any:
            self._engine = _pools[mode].acquire(self.game_file)
            self._mode = mode
            self._engine.seed(jericho_seed(self.seed))
            return self._engine.reset()

        return self._call(start)

    def _policy_at_start(self) -> list[str]:
        """The policy before any action, read on a `POLICY` engine that goes straight back to
        its pool: the episode plays on as it was (the oracle asks once, at the start, and
        would otherwise pay for tracking quests on every step)."""

        def read() -> list[str]:
            engine = _pools[POLICY].acquire(self.game_file)
            engine.seed(jericho_seed(self.seed))
            commands = list(engine.reset()["policy_commands"])
            _pools[POLICY].release(self.game_file, engine)
            return commands

        return self._call(read)

    def _track_at_least(self, mode: str) -> None:
        """Go on on an engine of `mode` (or one tracking more already): the episode's actions
        are replayed there, and it must reach the same observation."""
        if MODES.index(self._mode) >= MODES.index(mode):
            return
        previous, previous_mode, current = self._engine, self._mode, self._state
        self._engine = None
        state = self._start(mode)
        engine = self._engine
        for action in self._actions:
            state, _, _ = self._call(lambda a=action: engine.step(a))
        if clean_text(state.feedback) != clean_text(current.feedback):
            raise EnvError(f"replaying {len(self._actions)} actions on {Path(self.game_file).name} "
                           f"with state tracking gave another observation")
        _pools[previous_mode].release(self.game_file, previous)
        self._state = state

    def _release(self) -> None:
        if self._engine is not None:
            _pools[self._mode].release(self.game_file, self._engine)
            self._engine = None

    def engine_failure(self) -> str:
        return f"TextWorld failed on {Path(self.game_file).name}"
