"""Typed records that cross lifebench's boundaries.

Going in: `Instance`, `TaskInfo`, `Observation`; coming back: `Step`; at the end of an
episode one `EpisodeOutcome` (what the method is told, and what the record is made of);
on disk one `EpisodeRecord` per episode (`episodes.jsonl`), its typed trajectory
(`EpisodeTrajectory` of `TrajectoryStep`s, in `trajectories/<stream>.jsonl`) and one
`RunManifest` per invocation (`manifest.json`).

Records outlive the code that wrote them: a field keeps its name and meaning once
released; new fields come with a new `SCHEMA_VERSION`, and `EpisodeRecord.from_dict`
upgrades older records when it reads them.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
from dataclasses import dataclass, field
from typing import Any, Optional

from lifebench.api.budget import Budget

# 1: the first release (harness-owned values in `extra`);
# 2: those values as typed fields (budget, attempt, error, task_family, success_step,
#    llm_usage, llm_call_tokens, cost_usd, explore_steps, benchmark_config);
# 3: instance contexts: `context` and `context_config_hash` (part of the key; "" for an
#    episode played without one), and `extra.context` describing the one used.
# 4: `method_version`, the method's declared behaviour version (part of the key); records
#    of older schemas were written before methods declared one and read as version "1".
# 5: real servers: the status `context_overflow`; `llm_calls_cut` (calls cut at their
#    max_tokens) and `llm_calls_trimmed` (prompts fitted to the context window); per call
#    (`llm_call_tokens`) its `finish`, `max_tokens`, `reasoning_tokens` and `trimmed`.
#    Older records read with 0, "" and None.
# 6: replayable runs: per call (`llm_call_tokens`) its `key`, the response cache's key of
#    its request, under which the results directory's answers file keeps its answer.
#    Older records read with "" (their answers were not kept).
# 7: per call its `tokens_fitted`, the prompt's tokens as the harness counted them to fit the
#    context window (beside `tokens_in`, the server's count). Older records read with None.
SCHEMA_VERSION = 7


class Status(str, enum.Enum):
    """How an episode ended. `ok`, `budget_exhausted` and `context_overflow` are the
    method's results; the others are infrastructure failures: recorded, retried (all but `agent_error`), and
    never counted as the method's failure."""

    OK = "ok"
    BUDGET_EXHAUSTED = "budget_exhausted"
    AGENT_ERROR = "agent_error"
    ENV_ERROR = "env_error"
    LLM_ERROR = "llm_error"
    TIMEOUT = "timeout"
    # schema 5: a prompt over the model's context window ended the episode; the method's
    # failure (a result), shown apart, never retried
    CONTEXT_OVERFLOW = "context_overflow"

    @property
    def is_result(self) -> bool:
        return self in (Status.OK, Status.BUDGET_EXHAUSTED, Status.CONTEXT_OVERFLOW)

    @property
    def is_retried(self) -> bool:
        """Failures worth another attempt: a method's own error would only repeat."""
        return self in (Status.ENV_ERROR, Status.LLM_ERROR, Status.TIMEOUT)

    def __str__(self) -> str:
        return self.value


RESULT_STATUSES = tuple(s for s in Status if s.is_result)
FAILURE_STATUSES = tuple(s for s in Status if not s.is_result)


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
    # The budget steps this step used: more than 1 for a macro action that plays several
    # of the game's moves (Crafter's `move to [x, y]`); see `Env.step_within`.
    actions: int = 1


CONTEXT_HEADING = "Facts about this environment instance, found by exploring it before the task:"


@dataclass(frozen=True)
class InstanceContext:
    """Knowledge about one instance found by exploring it before its tasks (see
    lifebench.api.context): what a method receives in `TaskInfo.context`."""

    provider: str
    key: str  # identifies the build (see the results directory's contexts.jsonl)
    text: str
    explore_steps: int = 0
    llm_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    coverage: dict[str, float] = field(default_factory=dict)

    def prompt_block(self) -> str:
        """The context as a prompt puts it: after the manual, under a fixed heading."""
        return f"{CONTEXT_HEADING}\n{self.text.strip()}"


@dataclass(frozen=True)
class TaskInfo:
    """What a method is told when an episode begins."""

    benchmark: str
    split: str
    instance: Instance
    seed: int
    trial: int
    episode_index: int
    budget_steps: int  # the steps this episode may take
    instructions: str
    # An action that changes nothing and is always accepted (for a method that must spend
    # a step without acting).
    noop_action: str = "look"
    # Knowledge about this instance found by exploring it before the task (`--context`).
    context: Optional[InstanceContext] = None

    def manual(self) -> str:
        """The instructions followed by the instance context, when there is one: what a
        method that uses contexts puts where its prompts have the benchmark's manual."""
        if self.context is None:
            return self.instructions
        return f"{self.instructions.strip()}\n\n{self.context.prompt_block()}"


@dataclass(frozen=True)
class TrajectoryStep:
    """One entry of a trajectory: the first is the observation after reset (no action); a
    later entry with no action is a return to an earlier state (methods with
    `needs.restore`), followed by the actions the harness replayed, if any."""

    observation: str
    action: Optional[str] = None
    reward: Optional[float] = None
    # what a reasoning model reasoned before choosing `action` (its calls in that act)
    reasoning: Optional[str] = None

    def to_dict(self) -> dict[str, Any]:
        if self.action is None:
            return {"observation": self.observation}
        out = {"action": self.action, "observation": self.observation, "reward": self.reward}
        if self.reasoning:
            out["reasoning"] = self.reasoning
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TrajectoryStep":
        return cls(observation=data["observation"], action=data.get("action"),
                   reward=data.get("reward"), reasoning=data.get("reasoning"))


@dataclass(frozen=True)
class EpisodeTrajectory:
    """One line of `trajectories/<stream>.jsonl`: an episode's steps, attempt by attempt."""

    episode_index: int
    instance_id: str
    trial: int
    attempt: int
    status: Status
    steps: tuple[TrajectoryStep, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"episode_index": self.episode_index, "instance_id": self.instance_id,
                "trial": self.trial, "attempt": self.attempt, "status": self.status.value,
                "steps": [s.to_dict() for s in self.steps]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "EpisodeTrajectory":
        return cls(episode_index=data["episode_index"], instance_id=data["instance_id"],
                   trial=data["trial"], attempt=data.get("attempt", 0),
                   status=Status(data["status"]),
                   steps=tuple(TrajectoryStep.from_dict(s) for s in data["steps"]))


@dataclass(frozen=True)
class EpisodeOutcome:
    """How an episode ended: what `Method.end_episode` is told (before its own extras are
    known) and what the episode's record is made of."""

    task: TaskInfo
    status: Status
    success: bool = False
    score: float = 0.0
    steps: int = 0
    # The step at which the episode succeeded (then success under any budget >= it).
    success_step: Optional[int] = None
    final_observation: Optional[Observation] = None
    trajectory: tuple[TrajectoryStep, ...] = ()
    # Steps taken by the method's own exploration before the episode (IGE, AutoContext).
    explore_steps: Optional[int] = None
    error: Optional[str] = None
    wall_s: float = 0.0
    # The env's and the method's own fields (`episode_extra`).
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def transitions(self) -> list[tuple[str, str]]:
        """(action, observation) of every step taken, in order."""
        return [(s.action, s.observation) for s in self.trajectory if s.action is not None]


@dataclass
class RoleUsage:
    """LLM usage of one role (actor, teacher, ...) in one episode (the client counts into it)."""

    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cached: int = 0


@dataclass(frozen=True)
class CallTokens:
    """One LLM call's tokens, in the order the calls were made."""

    role: str
    tokens_in: int
    tokens_out: int
    cached: bool
    # schema 5: the server's finish_reason ("length": cut at the cap), the cap sent, and
    # the completion tokens spent reasoning (the server's count, else 4 characters a token)
    finish: str = ""
    max_tokens: Optional[int] = None
    reasoning_tokens: int = 0
    # history items left out of the prompt to fit the model's context window
    trimmed: int = 0
    # schema 6: the request's cache key (`lifebench.llm.cache.body_and_key`): its answer is
    # the results directory's answers file's entry of that key
    key: str = ""
    # schema 7: the prompt's tokens as the harness counted them to fit the context window
    # (None: no window was known, nothing was fitted); `tokens_in` is the server's count
    tokens_fitted: Optional[int] = None


@dataclass(frozen=True, order=True)
class RecordKey:
    """Identity of an episode for resume and deduplication: built here and nowhere else.

    The budget used is part of the key, so that one results directory can hold a budget grid.
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
    context: str = ""
    context_config_hash: str = ""
    method_version: str = "1"


KEY_FIELDS = tuple(f.name for f in dataclasses.fields(RecordKey))

# Fields that schema 1 kept in `extra`, with their value when absent.
_MOVED_FROM_EXTRA: dict[str, Any] = {
    "attempt": 0, "error": None, "task_family": None, "success_step": None,
    "llm_usage": {}, "llm_call_tokens": [], "cost_usd": None, "explore_steps": None,
    "benchmark_config": None,
}


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
    budget_steps: int  # the budget the episode had, in steps
    steps: int
    success: bool
    score: float
    status: Status
    llm_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    wall_s: float = 0.0
    harness_version: str = ""
    # What plugins add (the env's and the method's `episode_extra`).
    extra: dict[str, Any] = field(default_factory=dict)
    # Set when the benchmark ran with a non-default config (--benchmark-arg); part of the key.
    benchmark_config_hash: str = ""
    # -- schema 2
    schema_version: int = SCHEMA_VERSION
    # The budget asked: a number of steps, or None for the benchmark's default.
    budget: Optional[int] = None
    attempt: int = 0  # retries before this record (0: the first attempt)
    error: Optional[str] = None  # what failed, for failure statuses
    task_family: Optional[str] = None  # ScienceWorld's task, ALFWorld's type, ...
    success_step: Optional[int] = None
    llm_usage: dict[str, RoleUsage] = field(default_factory=dict)
    llm_call_tokens: list[CallTokens] = field(default_factory=list)
    cost_usd: Optional[float] = None
    explore_steps: Optional[int] = None
    benchmark_config: Optional[dict[str, Any]] = None
    # -- schema 3: the instance context provider the episode was given ("" for none) and
    # its config's hash (every field, use-time ones included).
    context: str = ""
    context_config_hash: str = ""
    # -- schema 4: the method's behaviour version (`Method.version`).
    method_version: str = "1"
    # -- schema 5: LLM calls whose reply was cut at its max_tokens (finish_reason "length"),
    # and calls whose prompt was fitted to the model's context window (items left out).
    llm_calls_cut: int = 0
    llm_calls_trimmed: int = 0

    def __post_init__(self) -> None:
        try:
            self.status = Status(self.status)
        except ValueError:
            raise ValueError(f"unknown status {self.status!r}; expected one of "
                             f"{', '.join(s.value for s in Status)}") from None

    @property
    def key(self) -> RecordKey:
        return RecordKey(**{name: getattr(self, name) for name in KEY_FIELDS})

    @property
    def is_result(self) -> bool:
        return self.status.is_result

    @property
    def budget_asked(self) -> Budget:
        return Budget(self.budget)

    def value(self, name: str) -> Any:
        """A field, or `extra.KEY`: a plugin's value, or (for records read by older
        commands) a field that schema 1 kept in `extra`."""
        if name.startswith("extra."):
            key = name[len("extra."):]
            if key in self.extra:
                return self.extra[key]
            return getattr(self, key) if key in _MOVED_FROM_EXTRA else None
        return getattr(self, name)

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["status"] = self.status.value
        return data

    def to_json(self) -> str:
        # The same text as json.dumps(self.to_dict()), without its deep copy of every
        # field: nested records (usage, call tokens) are turned into dicts as they are met.
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data["status"] = self.status.value
        return json.dumps(data, sort_keys=True, separators=(",", ":"), default=_record_as_dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "EpisodeRecord":
        """A record of any schema version; raises ValueError (or TypeError) for one that
        is not a record."""
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, got {type(data).__name__}")
        data = upgrade(data)
        names = {f.name for f in dataclasses.fields(cls)}
        missing = [f.name for f in dataclasses.fields(cls)
                   if f.name not in data and f.default is dataclasses.MISSING
                   and f.default_factory is dataclasses.MISSING]  # type: ignore[misc]
        if missing:
            raise ValueError(f"missing fields: {', '.join(missing)}")
        values = {k: v for k, v in data.items() if k in names}
        values["llm_usage"] = {role: RoleUsage(**u) for role, u in (values.get("llm_usage") or {}).items()}
        values["llm_call_tokens"] = [CallTokens(**c) for c in values.get("llm_call_tokens") or []]
        record = cls(**values)
        _check_types(record)
        return record


def upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """A record's JSON in the current schema (a copy when it changes anything)."""
    version = data.get("schema_version", 1)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise ValueError(f"schema_version {version!r} is newer than this lifebench reads "
                         f"({SCHEMA_VERSION}); upgrade lifebench")
    if version == 1:
        data = dict(data)
        extra = data.get("extra") or {}
        if not isinstance(extra, dict):
            raise ValueError(f"field 'extra' is {extra!r}, expected dict")
        extra = dict(extra)
        asked = extra.pop("budget", None)
        data["budget"] = None if asked == "default" else data.get("budget_steps")
        for name, absent in _MOVED_FROM_EXTRA.items():
            data[name] = extra.pop(name, absent)
        data["extra"] = extra
        data["schema_version"] = 2
    if data["schema_version"] == 2:
        data = {**data, "context": "", "context_config_hash": "", "schema_version": 3}
    if data["schema_version"] == 3:
        data = {**data, "method_version": "1", "schema_version": 4}
    if data["schema_version"] == 4:  # no call was known to be cut
        data = {**data, "llm_calls_cut": 0, "llm_calls_trimmed": 0, "schema_version": 5}
    if data["schema_version"] == 5:  # the calls' keys were not kept (CallTokens.key "")
        data = {**data, "schema_version": 6}
    if data["schema_version"] == 6:  # no call's fitted count was kept (tokens_fitted None)
        data = {**data, "schema_version": 7}
    return data


_TYPES: dict[str, tuple[type, ...]] = {
    "run_id": (str,), "benchmark": (str,), "split": (str,), "instance_id": (str,),
    "method": (str,), "method_config_hash": (str,), "model": (str, type(None)),
    "seed": (int,), "trial": (int,), "episode_index": (int,), "budget_steps": (int,),
    "steps": (int,), "success": (bool,), "score": (int, float), "llm_calls": (int,),
    "tokens_in": (int,), "tokens_out": (int,), "wall_s": (int, float),
    "harness_version": (str,), "extra": (dict,), "benchmark_config_hash": (str,),
    "budget": (int, type(None)), "attempt": (int,), "error": (str, type(None)),
    "task_family": (str, type(None)), "success_step": (int, type(None)),
    "cost_usd": (int, float, type(None)), "explore_steps": (int, type(None)),
    "benchmark_config": (dict, type(None)), "context": (str,), "context_config_hash": (str,),
    "method_version": (str,), "llm_calls_cut": (int,), "llm_calls_trimmed": (int,),
}


def _record_as_dict(value: Any) -> Any:
    """json's fallback for the records inside a record: their fields, one level (json comes
    back here for any record nested deeper), as `dataclasses.asdict` would give them."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _check_types(record: EpisodeRecord) -> None:
    for name, types in _TYPES.items():
        value = getattr(record, name)
        wrong = not isinstance(value, types) or (
            isinstance(value, bool) and bool not in types)  # True is an int, not a count
        if wrong:
            raise ValueError(f"field {name!r} is {value!r}, expected "
                             f"{' or '.join('null' if t is type(None) else t.__name__ for t in types)}")
    for name in ("score", "wall_s"):  # a NaN would blank a table's mean without a word
        value = getattr(record, name)
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"field {name!r} is {value!r}, expected a finite number")


@dataclass(frozen=True)
class RunManifest:
    """One entry of `manifest.json`: what one invocation ran, with what."""

    run_id: str
    config: dict[str, Any]  # the run's config as asked (RunConfig, as JSON)
    argv: list[str]
    executor: str
    workers: int
    concurrency: int
    streams: list[str]
    episodes_total: int
    episodes_already_done: int
    started_utc: str
    packages: dict[str, Optional[str]]
    git_revision: Optional[str]
    git_dirty: Optional[bool]
    python: str
    platform: str
    cpu_count: Optional[int]
    # the model's endpoint as the run found it: served, its context window and where from,
    # and (set when the run ends) what the clients sent otherwise than asked ("adapted")
    llm_endpoint: Optional[dict[str, Any]] = None
    # the grid's cells that did not run, each {method, benchmark, split, reason, context}
    refused: Optional[list[dict[str, str]]] = None
    # per cell (method config on a benchmark split, context, model): its trials, scored
    # trial and whether it ran at smoke scale (`lifebench.runner.streams.cell_protocols`)
    cells: Optional[list[dict[str, Any]]] = None
    # what floating-point results may depend on: the CPU architecture, Python, numpy and
    # torch versions (`lifebench verify` names them where a replay is only within tolerance)
    numerics: Optional[dict[str, Optional[str]]] = None

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["spec"] = data.pop("config")  # the manifest's key since the first release
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunManifest":
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, got {type(data).__name__}")
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            key = "spec" if f.name == "config" else f.name
            values[f.name] = data.get(key)
        return cls(**values)
