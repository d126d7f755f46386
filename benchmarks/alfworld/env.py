"""An ALFWorld game (text mode) on textworld's PDDL engine, with engines reused per worker.

Building an engine copies and loads fast-downward's 33 MB library; loading a game parses
its grammar and translates its PDDL. A worker keeps a few engines (`EnginePool`) and the
translations (`speedups`), so a new game costs a load (~0.3 s) and a replayed game (trials,
seeds, methods) only a reset (~0.1 s). The harness counts steps and budgets; the engine
has no step limit of its own.

The observation at reset is the game's intro without its banner line: the room, then
"Your task is to: ...". Success = the game is won (the PDDL goal holds). The engine
computes the admissible commands on every step (it needs them to parse a command); they
reach a method only through `valid_actions()`.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Optional

from lifebench.api import Observation, Step

from lifebench.benchmarks.alfworld import speedups
from lifebench.benchmarks.engine_pool import EnginePool, PooledEngineEnv

speedups.enable()

BANNER = "-= Welcome to TextWorld, ALFRED! =-"


def _new_engine() -> Any:
    import textworld
    from alfworld.agents.environment.alfred_tw_env import AlfredDemangler
    from textworld.envs.pddl import PddlEnv

    # The demangler names objects "mug 1", "mug 2"; unshuffled, as alfworld evaluates.
    return AlfredDemangler(shuffle=False)(PddlEnv(textworld.EnvInfos(won=True)))


def _load_game(engine: Any, game_file: str) -> None:
    engine.load(game_file)


_pool: EnginePool = EnginePool(_new_engine, _load_game, max_idle=3)
# textworld's grammar and logic parsers are shared module state: streams playing in
# threads of one worker take turns on the engines (a step is ~15 ms, an LLM call ~1 s).
_engine_lock = threading.RLock()


def strip_banner(text: str) -> str:
    return text.replace(BANNER, "", 1).lstrip("\n") if text.startswith(BANNER) else text


class AlfworldEnv(PooledEngineEnv):
    engine_lock = _engine_lock

    def __init__(self, game_file: Path, extra: Optional[dict[str, Any]] = None) -> None:
        self.game_file = str(game_file)
        self.extra = dict(extra or {})
        self._engine: Any = None
        self._state: Any = None
        self._start: Any = None  # the state at the last reset

    # -- protocol
    def reset(self) -> Observation:
        def reset() -> Any:
            if self._engine is None:
                self._engine = _pool.acquire(self.game_file)
            return self._engine.reset()

        self._state = self._start = self._call(reset)
        text = strip_banner(self._state.feedback)
        return Observation(text, data={"task": text.rsplit("Your task is to: ", 1)[-1].strip()})

    def step(self, action: str) -> Step:
        engine = self._require()
        self._state, _, _ = self._call(lambda: engine.step(action))
        won = bool(self._state["won"])
        return Step(Observation(self._state.feedback), reward=float(won), done=won,
                    score=float(won), success=won)

    def valid_actions(self) -> list[str]:
        self._require()
        return list(self._state["admissible_commands"])

    def walkthrough(self) -> list[str]:
        """The game file's walkthrough, or (data without one) the PDDL planner's plan from
        the initial state. Call right after reset."""
        engine = self._require()
        if engine.walkthrough:
            return list(engine.walkthrough)
        # Never silent: the planner's plan is not the walkthrough the split was made with.
        self.extra["walkthrough"] = "missing: the PDDL planner's plan was used"

        def plan() -> list[str]:
            speedups.load_planner_task(engine._pddl_state)
            return list(engine._pddl_state.replan(engine._entity_infos))

        return self._call(plan)

    def start_facts(self) -> tuple[list[Any], dict[str, Any]]:
        """The PDDL facts of the game's initial state and its entities (`EntityInfo` by
        PDDL id; `.name` is the name the game prints, e.g. "mug 2"). Privileged: the
        instance's ground truth for contexts (`context.py`), never shown to a method."""
        if self._start is None:
            raise RuntimeError("call reset() before asking for the game's initial facts")
        return list(self._start["_facts"]), dict(self._start["_entity_infos"])

    def close(self) -> None:
        if self._engine is not None:
            _pool.release(self.game_file, self._engine)
            self._engine = None

    def episode_extra(self) -> dict[str, Any]:
        return dict(self.extra)

    def engine_failure(self) -> str:
        return f"ALFWorld engine failed on {Path(self.game_file).parent.name}"
