"""Typed records that cross the harness's boundaries.

Everything a benchmark, a method, the runner or the leaderboard hands to another part is
one of these: instances and observations going in, steps and outcomes coming back, and
one `EpisodeRecord` per episode written to `episodes.jsonl`.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Optional

# Statuses that are results of the method. Everything else is an infrastructure failure:
# retried, recorded, and never counted as the method's failure.
RESULT_STATUSES = ("ok", "budget_exhausted")
FAILURE_STATUSES = ("agent_error", "env_error", "llm_error", "timeout")
STATUSES = RESULT_STATUSES + FAILURE_STATUSES
RETRIED_STATUSES = ("env_error", "llm_error", "timeout")


@dataclass(frozen=True)
class Instance:
    """One task of a benchmark split. `instance_id` is stable across versions of lifebench."""

    instance_id: str
    metadata: dict[str, Any] = field(default_factory=dict)
    # Benchmark-private payload (e.g. the parsed example); never written to results.
    payload: Any = field(default=None, compare=False, repr=False)


@dataclass
class Observation:
    """What the agent sees. `data` holds structured state for oracles and non-text agents."""

    text: str
    data: Optional[dict[str, Any]] = None
    image: Any = None


@dataclass
class Step:
    """Result of one `Env.step`."""

    observation: Observation
    reward: float = 0.0
    done: bool = False
    score: float = 0.0
    success: bool = False
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TaskInfo:
    """What a method is told when an episode begins."""

    benchmark: str
    split: str
    instance: Instance
    seed: int
    trial: int
    episode_index: int
    budget_steps: int
    instructions: str


@dataclass(frozen=True)
class EpisodeOutcome:
    """What a method is told when an episode ends (for reflection and memory writes)."""

    task: TaskInfo
    status: str
    success: bool
    score: float
    steps: int
    final_observation: Optional[Observation]
    trajectory: tuple[tuple[str, str], ...]  # (action, observation text) pairs


@dataclass
class EpisodeRecord:
    """One line of `episodes.jsonl`: the unit the leaderboard aggregates."""

    run_id: str
    benchmark: str
    split: str
    instance_id: str
    method: str
    method_config_hash: str
    model: Optional[str]
    seed: int
    trial: int
    episode_index: int
    budget_steps: int
    steps: int
    success: bool
    score: float
    status: str
    llm_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    wall_s: float = 0.0
    harness_version: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    # Set when the benchmark ran with a non-default config (--benchmark-arg); part of the key.
    benchmark_config_hash: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}; expected one of {', '.join(STATUSES)}")

    @property
    def key(self) -> "RecordKey":
        return RecordKey(
            self.benchmark, self.benchmark_config_hash, self.split, self.instance_id, self.method, self.method_config_hash,
            self.model, self.seed, self.trial, self.budget_steps,
        )

    @property
    def is_result(self) -> bool:
        return self.status in RESULT_STATUSES

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "EpisodeRecord":
        names = {f.name for f in dataclasses.fields(cls)}
        missing = [f.name for f in dataclasses.fields(cls)
                   if f.name not in data and f.default is dataclasses.MISSING
                   and f.default_factory is dataclasses.MISSING]  # type: ignore[misc]
        if missing:
            raise ValueError(f"missing fields: {', '.join(missing)}")
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class RecordKey:
    """Identity of an episode for resume and deduplication.

    The budget is part of the key so that one results directory can hold a budget grid.
    """

    benchmark: str
    benchmark_config_hash: str
    split: str
    instance_id: str
    method: str
    method_config_hash: str
    model: Optional[str]
    seed: int
    trial: int
    budget_steps: int
