"""Episodes a method plays on its own, outside the harness's scored loop: the oracle's
winning transcripts of support instances (few-shot examples, RAP's memory, InstructRAG's
instruction paths) and the training episodes of methods that learn before testing
(InstructRAG's meta-training). Nothing played here is scored or recorded as an episode."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from lifebench.api import Benchmark, Instance, Observation


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
    """Plays `policy` on a fresh env of `instance` until the episode ends or `max_steps`."""
    env: Any = benchmark.make_env(instance, seed)
    try:
        observation = env.reset()
        first, transitions = observation.text, []
        success, score = False, 0.0
        for _ in range(max_steps):
            action = policy(observation)
            step = env.step(action)
            observation = step.observation
            transitions.append((action, observation.text))
            success, score = bool(step.success), float(step.score)
            if step.done:
                break
        return Rollout(instance.instance_id, first, tuple(transitions), success, score)
    finally:
        env.close()


def oracle_rollout(benchmark: Benchmark, instance: Instance, max_steps: int) -> Optional[Rollout]:
    """The benchmark's oracle played on `instance`; None unless it wins within `max_steps`."""
    env: Any = benchmark.make_env(instance, 0)
    try:
        oracle = benchmark.oracle(env)
        observation = env.reset()
        first, transitions = observation.text, []
        for _ in range(max_steps):
            action = oracle.next_action(observation)
            step = env.step(action)
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
