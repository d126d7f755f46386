"""A ScienceWorld episode on this process's shared simulator.

`step` calls the simulator's raw step and reads the score and completion only; the
package's `ScienceWorldEnv.step` also computes look, inventory, task description and the
valid actions on every call (~10x the raw step). Here they are computed when asked:
`valid_actions()` and `query("look" | "inventory" | "task" | "objects" | "action_templates")`.

Protocol (CLIN and STEP): the budget counts agent actions; a score below zero (focusing on
the wrong object) ends the episode, recorded as `extra.fatal`, `extra.raw_score` = the
simulator's score, and `score` = the best score reached before the mistake; success =
task completed.
"""

from __future__ import annotations

from typing import Any, Optional

from lifebench.api import EnvError
from lifebench.api import Observation, Step

from lifebench.benchmarks.scienceworld import jvm

QUERIES = ("look", "inventory", "task", "state", "objects", "action_templates")


def _py4j_errors() -> tuple[type, ...]:
    from py4j.protocol import Py4JError

    return (Py4JError, ConnectionError, OSError, EOFError)


class ScienceWorldTaskEnv:
    def __init__(self, task_name: str, variation: int, simplification: str) -> None:
        self.task_name = task_name
        self.variation = variation
        self.simplification = simplification
        self.want_gold = False  # set by the oracle before reset
        self.gold: list[str] = []
        self._sim: Optional[Any] = None
        self._start_tree: Optional[dict[str, Any]] = None  # the world at the last reset
        self.best_score = 0
        self.raw_score = 0
        self.fatal = False
        self.completed = False

    # -- protocol
    def reset(self) -> Observation:
        def load() -> Observation:
            sim = jvm.simulator()
            sim.load(self.task_name, self.variation, self.simplification,
                     generateGoldPath=self.want_gold)
            self.gold = list(sim.get_gold_action_sequence()) if self.want_gold else []
            sim.server.reset()
            first = sim.server.step("look around")  # the package's reset does the same
            # the world as the episode starts (~15 ms): contexts' ground truth (`start_world`)
            self._start_tree = sim.getObjectTree()
            self._sim = sim
            return Observation(f"{sim.server.freeActionTaskDesc()}\n\n{first}",
                               data={"task": self.task_name, "variation": self.variation})

        self.best_score = self.raw_score = 0
        self.fatal = self.completed = False
        self._start_tree = None
        return self._call(load)

    def step(self, action: str) -> Step:
        sim = self._require()

        def raw_step() -> tuple[str, int, bool]:
            text = sim.server.step(action)
            return text, int(round(100 * sim.server.getScore())), bool(sim.server.getCompleted())

        text, score, completed = self._call(raw_step)
        reward = score - self.raw_score
        self.raw_score = score
        if score < 0:
            self.fatal = True
            return Step(Observation(text), reward=float(reward), done=True,
                        score=float(self.best_score), success=False,
                        info={"reason": "fatal", "raw_score": score})
        self.best_score = max(self.best_score, score)
        self.completed = completed
        return Step(Observation(text), reward=float(reward), done=completed,
                    score=float(score), success=completed)

    def valid_actions(self) -> list[str]:
        sim = self._require()
        return self._call(lambda: list(sim.server.getValidActionObjectCombinations()))

    def query(self, name: str) -> str:
        """Free information that costs no action: the room, the inventory, the task,
        `state` (the room, then the inventory), and, a line each, the `objects` an action
        may name here and the `action_templates` ("open OBJ", ...), as CLIN's and STEP's
        executors were shown them."""
        if name == "state":
            return f"{self.query('look')}\n{self.query('inventory')}"
        sim = self._require()
        calls = {"look": sim.server.freeActionLook, "inventory": sim.server.freeActionInventory,
                 "task": sim.server.freeActionTaskDesc,
                 "objects": lambda: "\n".join(sim.server.getPossibleObjects()),
                 "action_templates": lambda: "\n".join(sim.server.getPossibleActions())}
        if name not in calls:
            raise ValueError(f"unknown query {name!r}; ScienceWorld answers {', '.join(QUERIES)}")
        return self._call(calls[name])

    def start_world(self) -> dict[str, Any]:
        """The simulator's object tree as the episode started (its JSON export: every
        object with its name, properties and contents, from the universe down). Privileged:
        the instance's ground truth for contexts (`context.py`), never shown to a method."""
        if self._start_tree is None:
            raise RuntimeError("call reset() before asking for the world's start")
        return self._start_tree

    def close(self) -> None:
        self._sim = None  # the simulator stays up for the worker's next episode

    def episode_extra(self) -> dict[str, Any]:
        extra: dict[str, Any] = {"raw_score": self.raw_score, "best_score": self.best_score}
        if self.fatal:
            extra["fatal"] = True
        return extra

    # -- helpers
    def _require(self) -> Any:
        if self._sim is None:
            raise RuntimeError("call reset() before using the environment")
        return self._sim

    def _call(self, fn):
        try:
            return fn()
        except _py4j_errors() as exc:
            # The JVM died or the gateway broke: drop it so the retry starts a fresh one.
            jvm.discard()
            self._sim = None
            raise EnvError(f"ScienceWorld simulator failed ({type(exc).__name__}: {exc}); "
                           f"it will be restarted") from exc
