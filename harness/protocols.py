"""The contracts between the harness and its plugins: Benchmark, Env, Method.

A benchmark plugin subclasses `Benchmark`; a method plugin subclasses `Method`. Both are
registered through entry points (`lifebench.benchmarks`, `lifebench.methods`), the
built-ins included. The harness owns the episode loop: it counts actions, enforces
budgets and timeouts, and records trajectories; plugins never do.
"""

from __future__ import annotations

import abc
import dataclasses
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Optional, Protocol, runtime_checkable

from harness.errors import UserError, unknown_name
from harness.records import EpisodeOutcome, Instance, Observation, Step, TaskInfo

if TYPE_CHECKING:
    from harness.teacher import TeacherPlan


@runtime_checkable
class Env(Protocol):
    """One environment per episode, in the spirit of gymnasium's reset/step.

    Optional extras an env may define, which the harness uses when present:
    `snapshot() -> object` and `restore(snapshot)` (otherwise `harness.snapshots` falls
    back to reset-and-replay), `sample_action(rng) -> str` (a uniform draw from
    `valid_actions()` without building the list), and `episode_extra() -> dict` (fields
    for the record's `extra`).
    """

    def reset(self) -> Observation: ...

    def step(self, action: str) -> Step: ...

    def valid_actions(self) -> list[str]:
        """Well-formed actions in the current state. Computed only when asked."""
        ...

    def close(self) -> None: ...


class OraclePolicy(Protocol):
    """A benchmark's solver bound to one env: the next correct action for an observation."""

    def next_action(self, observation: Observation) -> str: ...


class Benchmark(abc.ABC):
    """A benchmark adapter. One instance per process and config; it may cache loaded data.

    `Config` (a frozen dataclass) holds options that change the benchmark itself, set with
    `--benchmark-arg KEY=VALUE`; a non-default config is part of every record's key.
    """

    name: ClassVar[str]
    Config: ClassVar[type] = None  # type: ignore[assignment]  # set below to NoConfig
    default_budget: ClassVar[int]
    # The splits `make bench` and a bare `lifebench run --benchmark X` use.
    default_splits: ClassVar[tuple[str, ...]] = ()
    # The split that methods which learn before testing (`needs.support`) learn from.
    support_split: ClassVar[Optional[str]] = None
    # Extra leaderboard metrics (names in `leaderboard.metrics.EXTRA_METRICS`).
    extra_metrics: ClassVar[tuple[str, ...]] = ()
    # Distributions whose versions the run manifest records.
    packages: ClassVar[tuple[str, ...]] = ()
    # Kinds of split this benchmark can generate (`lifebench splits make KIND --n N --seed S`).
    split_generators: ClassVar[tuple[str, ...]] = ()
    # The instance metadata key naming an instance's task family (ScienceWorld's task,
    # ALFWorld's task type, Plancraft's target): records carry it as `extra.task_family`, and
    # the leaderboard clusters intervals and makes per-task tables by it.
    task_family_key: ClassVar[Optional[str]] = None
    # What one stream needs from a Ray cluster (`--executor ray`): CPUs, and memory in bytes
    # for benchmarks that start a simulator (ScienceWorld's JVM).
    ray_resources: ClassVar[dict[str, float]] = {"num_cpus": 1}
    # Whether success is reaching a goal at some step (then success under smaller budgets
    # follows from the step of success); Crafter's success is surviving to the end.
    budget_curves: ClassVar[bool] = True
    # What the per-task table shows: "success" (a rate) or "score" (a mean).
    per_task_metric: ClassVar[str] = "success"
    # An action that changes nothing and is always accepted (methods that must spend a
    # step without acting, e.g. How² after too many non-environment actions).
    noop_action: ClassVar[str] = "look"

    def __init__(self, config: Any = None) -> None:
        self.config = config if config is not None else self.Config()
        self._loaded: dict[str, list[Instance]] = {}

    @property
    @abc.abstractmethod
    def instructions(self) -> str:
        """The manual an LLM agent is given: action syntax and rules."""

    @abc.abstractmethod
    def splits(self) -> list[str]: ...

    def has_split(self, split: str) -> bool:
        """Whether `split` names a split of this benchmark, generated yet or not."""
        return split in self.splits()

    def check_split(self, split: str) -> None:
        """Raise UserError (naming the choices, or the command that makes it) unless the
        split can be run here."""
        if split not in self.splits():
            raise unknown_name(f"split of {self.name}", split, self.splits())

    def generate_split(self, kind: str, n: int, seed: int) -> str:
        """Generate a split of `n` instances from `seed`; returns its name."""
        raise UserError(f"benchmark {self.name!r} generates no splits")

    def instances(self, split: str) -> list[Instance]:
        """The split's instances in their fixed order, loaded once per process."""
        if split not in self._loaded:
            self._loaded[split] = self.load_instances(split)
        return self._loaded[split]

    @abc.abstractmethod
    def load_instances(self, split: str) -> list[Instance]:
        """Read the split's instances. Raises UserError for bad splits or missing data."""

    @abc.abstractmethod
    def make_env(self, instance: Instance, seed: int) -> Env: ...

    def oracle(self, env: Env) -> OraclePolicy:
        raise UserError(f"benchmark {self.name!r} has no oracle; use a method that does not need one")

    @property
    def has_oracle(self) -> bool:
        return type(self).oracle is not Benchmark.oracle

    def teacher_plan(self, env: Env, played: tuple[str, ...], oracle: OraclePolicy) -> "TeacherPlan":
        """The plan a teacher (`harness.teacher`) explains, from the env's current state,
        given the actions played so far in the episode and the episode's oracle (made
        before reset). By default the part of the oracle's fixed sequence (walkthrough,
        gold path) not yet followed; a benchmark with a planner overrides this to plan from
        the actual state."""
        from harness.teacher import PlanStep, TeacherPlan, remaining_sequence

        sequence = getattr(oracle, "sequence", None)
        if sequence is None:
            raise UserError(f"benchmark {self.name!r} has no teacher: its oracle gives no plan")
        rest = remaining_sequence(sequence(), played)
        return TeacherPlan(steps=tuple(PlanStep(a, a, a) for a in rest))

    def task_family(self, instance: Instance) -> Optional[str]:
        if self.task_family_key is None or instance.metadata.get(self.task_family_key) is None:
            return None
        return str(instance.metadata[self.task_family_key])

    def budget(self, instance: Instance) -> int:
        """The default step budget of an instance (the protocol's, when it varies by task)."""
        return self.default_budget

    def check_available(self) -> None:
        """Raise UserError (naming the fix) when the benchmark's package or data is missing."""


@dataclass(frozen=True)
class EpisodeTools:
    """Per-episode handles a method may use; nothing here is computed until called."""

    valid_actions: Callable[[], list[str]]
    sample_action: Callable[[random.Random], str]
    # Free, env-specific information that costs no action (ScienceWorld: "look",
    # "inventory", "task"); raises ValueError for what the env does not answer.
    query: Callable[[str], str]
    oracle: Optional[OraclePolicy] = None
    # The env's image (e.g. Crafter's frame), drawn only when called; raises ValueError
    # for envs that have none.
    render: Optional[Callable[[], Any]] = None


@dataclass(frozen=True)
class MethodNeeds:
    llm: bool = False
    oracle: bool = False
    support: bool = False
    teacher: bool = False  # `ctx.teacher` (answers from the benchmark's oracle)


@dataclass(frozen=True)
class NoConfig:
    """Config of a plugin that takes no arguments."""


Benchmark.Config = NoConfig


@dataclass(frozen=True)
class StreamContext:
    """What a method learns once per stream, in `setup`."""

    benchmark: Benchmark
    split: str
    seed: int
    budget_steps: Optional[int]  # None: per instance, see TaskInfo.budget_steps
    model: Optional[str]
    llm: Any = None  # the LLM client, for methods with needs.llm
    teacher: Any = None  # a `harness.teacher.TeacherService`, for methods with needs.teacher


class Method(abc.ABC):
    """A method plugin. One object per stream: its memory lives for the whole stream.

    Every hook but `act` is optional. `state()`/`load_state()` make a lifelong method
    resumable: the runner saves `state()` after every finished episode and, on resume,
    builds a fresh method, calls `setup` and then `load_state` with what it saved.
    """

    name: ClassVar[str]
    Config: ClassVar[type] = NoConfig
    needs: ClassVar[MethodNeeds] = MethodNeeds()
    # Stateless methods keep nothing across episodes, so their streams may be sharded.
    stateless: ClassVar[bool] = False

    def __init__(self, config: Any = None) -> None:
        self.config = config if config is not None else self.Config()

    @classmethod
    def stream_problem(cls, config: Any, benchmark: Benchmark, split: str) -> Optional[str]:
        """Why this config cannot run on this benchmark split (a grid skips the pair, a
        single request fails with it); None when it can."""
        return None

    def setup(self, ctx: StreamContext) -> None:
        self.ctx = ctx

    def prepare(self, support: list[Instance]) -> None:
        """Learn from a support split before the stream starts."""

    def explore(self, env: Env, budget_steps: int) -> None:
        """Explore an instance before its episode (IGE, AutoContext). Called when the
        method's config has a positive `explore_steps`, on a separate env of the same
        instance with `snapshot()/restore()`; stepping past the budget ends exploration."""

    def begin_episode(self, task: TaskInfo, tools: "EpisodeTools") -> None:
        """Called before reset. `tools` gives this episode's valid actions on request, and
        the benchmark's oracle to methods with `needs.oracle`."""

    @abc.abstractmethod
    def act(self, observation: Observation) -> str: ...

    def end_episode(self, outcome: EpisodeOutcome) -> None:
        """Reflection and memory writes."""

    def state(self) -> Any:
        """JSON-serialisable memory for resume; None when the method keeps none."""
        return None

    def load_state(self, state: Any) -> None:
        """Restore what `state()` returned."""

    def episode_usage(self) -> dict[str, int]:
        """LLM accounting for the episode just played: llm_calls, tokens_in, tokens_out."""
        return {}

    def episode_extra(self) -> dict[str, Any]:
        """Method-specific fields for the record's `extra` (e.g. teacher interventions)."""
        return {}


def episode_rng(seed: int, *parts: Any) -> random.Random:
    """A RNG seeded from the stream seed and the episode identity (not from run order),
    so a sharded or resumed stream draws exactly what an uninterrupted one draws."""
    return random.Random("/".join(str(p) for p in (seed, *parts)))


def config_fields(config_cls: type) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(config_cls)}
