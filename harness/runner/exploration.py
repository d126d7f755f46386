"""The env an explorer plays (a method's `explore`, a context provider's `build`): its own
env of the instance, a step counter it cannot pass, snapshots, and nothing else of the env
(what `lifebench.api.ExplorationEnv` declares, and `sample_action`).

A snapshot is the action prefix since reset, plus the env's native snapshot when it has
one. Restoring uses the native snapshot, or resets and replays the prefix; replayed actions
are env steps like any other, so they count against the exploration budget.

A context build plays it blind (`blind=` its benchmark): observations without the text that
states the instance's task (`Benchmark.task_statement`) or reveals reward or the episode's
end (`Benchmark.outcome_signals`), nor the env's structured data; steps that say only
whether the episode ended. A context is task-agnostic, and must not record how its test
task is scored. A method's own exploration sees the env as its episodes do.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from lifebench.api.context import ExplorationBudgetExhausted, step_counted
from lifebench.api.errors import EnvError, LLMError
from lifebench.api.protocols import Benchmark, cut_statement
from lifebench.api.records import Observation, Step


class ExplorationTimeout(Exception):
    """The exploration ran past its wall-clock deadline."""


@dataclass(frozen=True)
class ExplorationSnapshot:
    actions: tuple[str, ...]
    native: Any = None  # the env's own snapshot, when it has one


class CountedExplorationEnv:
    """An instance's env as an explorer plays it: counted steps and snapshots; with `blind`
    (a context build's benchmark), observations and steps as a build may read them."""

    def __init__(self, env: Any, budget: int, replay_only: bool = False,
                 deadline: Optional[float] = None, blind: Optional[Benchmark] = None) -> None:
        self._env = env
        self._blind = blind
        self._statement: Optional[str] = None  # the task's, found at the first reset
        self._deadline = deadline
        self.budget = budget
        self.steps = 0
        self._actions: list[str] = []
        self.native = not replay_only and callable(getattr(env, "snapshot", None)) and \
            callable(getattr(env, "restore", None))

    def reset(self) -> Observation:
        self._actions = []
        observation = self._env_call(self._env.reset)
        if self._blind is not None and self._statement is None:
            self._statement = (self._blind.task_statement(observation.text) or "").strip() or None
        return self._seen(observation)

    def step(self, action: str) -> Step:
        if self.steps >= self.budget:
            raise ExplorationBudgetExhausted(f"exploration budget of {self.budget} steps used")
        if self._deadline is not None and time.monotonic() > self._deadline:
            raise ExplorationTimeout(f"exploration passed its deadline after {self.steps} steps")
        step, used = self._env_call(step_counted, self._env, action, self.budget - self.steps)
        self.steps += used
        self._actions.append(action)
        if self._blind is None:
            return step
        # whether it ended stays: nothing can be played after the end
        return Step(self._seen(step.observation), done=step.done, actions=step.actions)

    def valid_actions(self) -> list[str]:
        return list(self._env_call(self._env.valid_actions))

    def sample_action(self, rng: random.Random) -> str:
        """A draw from the valid actions (the env's own sampler when it has one): no step."""
        sample = getattr(self._env, "sample_action", None)
        if sample is None:
            return rng.choice(self.valid_actions())
        return self._env_call(sample, rng)

    def snapshot(self) -> ExplorationSnapshot:
        return ExplorationSnapshot(tuple(self._actions),
                                   self._env_call(self._env.snapshot) if self.native else None)

    def restore(self, snapshot: ExplorationSnapshot) -> Observation:
        if not isinstance(snapshot, ExplorationSnapshot):
            raise TypeError(f"restore() takes what snapshot() returned, not {type(snapshot).__name__}")
        if self.native:
            self._actions = list(snapshot.actions)
            return self._seen(self._env_call(self._env.restore, snapshot.native))
        observation = self.reset()
        for action in snapshot.actions:
            observation = self.step(action).observation
        return observation

    def close(self) -> None:
        self._env.close()

    def _seen(self, observation: Observation) -> Observation:
        """The observation as the explorer gets it: blind, its text without the task's
        statement and the outcome's signals (blank lines closed up), and no structured data
        (TextWorld's points, ALFWorld's task are there)."""
        if self._blind is None:
            return observation
        text = self._blind.without_outcome(cut_statement(observation.text, self._statement))
        return Observation(text, image=observation.image)

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
