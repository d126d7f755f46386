"""Episodes a method plays on its own, outside the harness's scored loop: the oracle's
winning transcripts of support instances (few-shot examples, RAP's memory, InstructRAG's
instruction paths) and the training episodes of methods that learn before testing
(InstructRAG's meta-training). Nothing played here is scored or recorded as an episode."""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Optional, TypeVar

from lifebench.api import Benchmark, Instance, Observation
from lifebench.api.context import step_counted


@dataclass(frozen=True)
class Rollout:
    """One played episode: the first observation, then (action, observation) per step."""

    instance_id: str
    first: str
    transitions: tuple[tuple[str, str], ...]
    success: bool
    score: float

    @property
    def actions(self) -> list[str]:
        return [action for action, _ in self.transitions]

    def transcript(self) -> str:
        """Observation/Action lines, as prompting methods show examples."""
        lines = [f"Observation: {self.first}"]
        for action, observation in self.transitions:
            lines += [f"Action: {action}", f"Observation: {observation}"]
        return "\n".join(lines)


def play(benchmark: Benchmark, instance: Instance, policy: Callable[[Observation], str],
         max_steps: int, seed: int = 0) -> Rollout:
    """Plays `policy` on a fresh env of `instance` until the episode ends or `max_steps`
    steps (counted as the harness counts them) are used."""
    env: Any = benchmark.make_env(instance, seed)
    try:
        observation = env.reset()
        first, transitions = observation.text, []
        success, score, used = False, 0.0, 0
        while used < max_steps:
            action = policy(observation)
            step, steps = step_counted(env, action, max_steps - used)
            used += steps
            observation = step.observation
            transitions.append((action, observation.text))
            success, score = bool(step.success), float(step.score)
            if step.done:
                break
        return Rollout(instance.instance_id, first, tuple(transitions), success, score)
    finally:
        env.close()


T = TypeVar("T")


class PerBenchmark:
    """What is worked out once per benchmark object and shared by every stream of the
    process (the registry gives one benchmark object per config): a value is made by the
    first stream that asks, under a lock of its own key, while the others wait for it
    rather than repeat the work. Only for values that are pure functions of the benchmark
    and the key, and are never mutated."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: "weakref.WeakKeyDictionary[Any, dict[Hashable, Any]]" = weakref.WeakKeyDictionary()
        self._making: dict[tuple[int, Hashable], threading.Lock] = {}

    def get(self, benchmark: Benchmark, key: Hashable, make: Callable[[], T]) -> T:
        try:
            with self._lock:
                values = self._values.setdefault(benchmark, {})
        except TypeError:  # a benchmark that is not hashable is not shared
            return make()
        if key in values:
            return values[key]
        with self._lock:
            making = self._making.setdefault((id(benchmark), key), threading.Lock())
        with making:
            if key not in values:
                values[key] = make()
            with self._lock:
                self._making.pop((id(benchmark), key), None)
            return values[key]


_ORACLE_ROLLOUTS = PerBenchmark()


def oracle_rollout(benchmark: Benchmark, instance: Instance, max_steps: int) -> Optional[Rollout]:
    """The benchmark's oracle played on `instance`; None unless it wins within `max_steps`.
    Played once per process: the oracle is deterministic, every stream gets the same one."""
    return _ORACLE_ROLLOUTS.get(benchmark, (instance.instance_id, max_steps),
                                lambda: _play_oracle(benchmark, instance, max_steps))


def _play_oracle(benchmark: Benchmark, instance: Instance, max_steps: int) -> Optional[Rollout]:
    env: Any = benchmark.make_env(instance, 0)
    try:
        oracle = benchmark.oracle(env)
        observation = env.reset()
        first, transitions, used = observation.text, [], 0
        while used < max_steps:
            action = oracle.next_action(observation)
            step, steps = step_counted(env, action, max_steps - used)
            used += steps
            observation = step.observation
            transitions.append((action, observation.text))
            if step.done:
                if not step.success:
                    return None
                return Rollout(instance.instance_id, first, tuple(transitions), True,
                               float(step.score))
        return None
    finally:
        env.close()
