"""The env an explorer plays (a method's `explore`, a context provider's `build`): its own
env of the instance, a step counter it cannot pass, and snapshots.

A snapshot is the action prefix since reset, plus the env's native snapshot when it has
one. Restoring uses the native snapshot, or resets and replays the prefix; replayed actions
are env steps like any other, so they count against the exploration budget.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from lifebench.api.context import ExplorationBudgetExhausted
from lifebench.api.errors import EnvError, LLMError
from lifebench.api.protocols import cut_statement
from lifebench.api.records import Observation, Step


class ExplorationTimeout(Exception):
    """The exploration ran past its wall-clock deadline."""


@dataclass(frozen=True)
class ExplorationSnapshot:
    actions: tuple[str, ...]
    native: Any = None  # the env's own snapshot, when it has one


def step_counted(env: Any, action: str, actions_left: int) -> tuple[Step, int]:
    """One step of `env` and the budget steps it used: 1, or for an env with macro actions
    (`step_within`) the game's moves it played, at most `actions_left`."""
    within = getattr(env, "step_within", None)
    if within is None:
        return env.step(action), 1
    step = within(action, actions_left)
    used = step.actions
    if not isinstance(used, int) or isinstance(used, bool) or not 1 <= used <= actions_left:
        raise EnvError(f"the environment said a step used {used!r} actions; expected 1 to "
                       f"{actions_left}")
    return step, used


class CountedExplorationEnv:
    """An instance's env as an explorer plays it: counted steps, snapshots, and, with
    `task_statement` (the benchmark's hook), observations without the sentence that states
    the instance's task, so what an explorer builds cannot hold the test task."""

    def __init__(self, env: Any, budget: int, replay_only: bool = False,
                 deadline: Optional[float] = None,
                 task_statement: Optional[Callable[[str], Optional[str]]] = None) -> None:
        self.env = env
        self.task_statement = task_statement
        self.hidden: Optional[str] = None
        self.deadline = deadline
        self.budget = budget
        self.steps = 0
        self.actions: list[str] = []
        self.native = not replay_only and callable(getattr(env, "snapshot", None)) and \
            callable(getattr(env, "restore", None))
        self.last_observation: Optional[Observation] = None

    def reset(self) -> Observation:
        self.actions = []
        observation = self._env_call(self.env.reset)
        if self.task_statement is not None and self.hidden is None:
            self.hidden = (self.task_statement(observation.text) or "").strip() or None
        self.last_observation = self._blind(observation)
        return self.last_observation

    def step(self, action: str) -> Step:
        if self.steps >= self.budget:
            raise ExplorationBudgetExhausted(f"exploration budget of {self.budget} steps used")
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise ExplorationTimeout(f"exploration passed its deadline after {self.steps} steps")
        step, used = self._env_call(step_counted, self.env, action, self.budget - self.steps)
        self.steps += used
        self.actions.append(action)
        if self.hidden is not None:
            step = dataclasses.replace(step, observation=self._blind(step.observation))
        self.last_observation = step.observation
        return step

    def snapshot(self) -> ExplorationSnapshot:
        return ExplorationSnapshot(tuple(self.actions),
                                   self.env.snapshot() if self.native else None)

    def restore(self, snapshot: ExplorationSnapshot) -> Observation:
        if not isinstance(snapshot, ExplorationSnapshot):
            raise TypeError(f"restore() takes what snapshot() returned, not {type(snapshot).__name__}")
        if self.native:
            self.actions = list(snapshot.actions)
            self.last_observation = self._blind(self._env_call(self.env.restore, snapshot.native))
            return self.last_observation
        observation = self.reset()
        for action in snapshot.actions:
            observation = self.step(action).observation
        return observation

    def _blind(self, observation: Observation) -> Observation:
        """The observation without the task's statement (its blank lines closed up)."""
        if self.hidden is None or self.hidden not in observation.text:
            return observation
        return dataclasses.replace(observation, text=cut_statement(observation.text, self.hidden))

    @staticmethod
    def _env_call(call: Callable[..., Any], *args: Any) -> Any:
        """The env's failures are the env's, whoever called it (the explorer's code is
        between the harness and the env here)."""
        try:
            return call(*args)
        except (EnvError, LLMError):
            raise
        except Exception as exc:
            raise EnvError(f"{type(exc).__name__}: {exc}") from exc

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)
