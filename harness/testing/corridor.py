"""`corridor`: a tiny deterministic text benchmark for tests (lifebench's and plugins').

An instance is a corridor of `length` cells; the agent starts in cell 0 and succeeds on
reaching the exit, cell `length`. Actions: `right`, `left`, `look` (the no-op). The score is
the furthest cell reached over the length (in [0, 1]). The oracle always goes right, so an
oracle episode succeeds in exactly `length` steps. Nothing is random and nothing is read
from disk: the splits are made in code, so the benchmark needs no data and no extra.

It is registered as `corridor` in group `lifebench.benchmarks` (lifebench's own
pyproject), loadable by name but never listed (`lifebench list benchmarks`, `make bench`):
see `lifebench.registry`. Splits: `tiny` (lengths 2, 3, 4) and `small` (lengths 2 to 9).
"""

from __future__ import annotations

import random
from typing import Any

from lifebench.api import Benchmark, Instance, Observation, Step
from lifebench.api.errors import UserError

ACTIONS = ("right", "left", "look")
SPLITS = {"tiny": (2, 3, 4), "small": tuple(range(2, 10))}

MANUAL = """You are in a corridor of numbered cells. You start in cell 0; the exit is the last cell.
Answer with exactly one action per turn:
- right: move one cell towards the exit
- left: move one cell back
- look: describe where you are (changes nothing)
You succeed when you reach the exit."""


class CorridorEnv:
    """One episode in a corridor of `length` cells."""

    def __init__(self, length: int) -> None:
        self.length = length
        self.position = 0
        self.furthest = 0

    def _observation(self, note: str = "") -> Observation:
        text = (f"{note}You are in cell {self.position} of a corridor; the exit is cell "
                f"{self.length}.")
        return Observation(text=text, data={"position": self.position, "length": self.length})

    def reset(self) -> Observation:
        self.position = self.furthest = 0
        return self._observation()

    def step(self, action: str) -> Step:
        action = action.strip().lower()
        note = ""
        if action == "right":
            self.position += 1
        elif action == "left":
            self.position = max(0, self.position - 1)
        elif action != "look":
            note = f"Unknown action {action!r}; use right, left or look. "
        self.furthest = max(self.furthest, self.position)
        success = self.position >= self.length
        return Step(observation=self._observation(note), reward=float(success), done=success,
                    score=self.furthest / self.length, success=success)

    def valid_actions(self) -> list[str]:
        return list(ACTIONS)

    def sample_action(self, rng: random.Random) -> str:
        return rng.choice(ACTIONS)

    def close(self) -> None:
        pass


class CorridorOracle:
    """Always right: the shortest way out."""

    def __init__(self, length: int) -> None:
        self.length = length

    def next_action(self, observation: Observation) -> str:
        return "right"

    def sequence(self) -> list[str]:  # the plan a teacher explains
        return ["right"] * self.length


class CorridorBenchmark(Benchmark):
    name = "corridor"
    default_budget = 12
    default_splits = ("tiny",)
    task_family_key = "length"
    score_range = (0.0, 1.0)

    @property
    def instructions(self) -> str:
        return MANUAL

    def splits(self) -> list[str]:
        return list(SPLITS)

    def load_instances(self, split: str) -> list[Instance]:
        if split not in SPLITS:
            self.check_split(split)
            raise UserError(f"no split {split!r} of corridor")
        return [Instance(instance_id=f"corridor-{n}", metadata={"length": n}) for n in SPLITS[split]]

    def make_env(self, instance: Instance, seed: int) -> Any:
        return CorridorEnv(int(instance.metadata["length"]))

    def oracle(self, env: Any) -> CorridorOracle:
        return CorridorOracle(env.length)

    def gold_length(self, instance: Instance) -> int:
        return int(instance.metadata["length"])
