"""The contracts between the harness and its plugins: Benchmark, Env, Method.

A benchmark plugin subclasses `Benchmark`; a method plugin subclasses `Method`. Both are
registered through entry points (`lifebench.benchmarks`, `lifebench.methods`), the
built-ins included. The harness owns the episode loop: it counts actions, enforces
budgets and timeouts, and records trajectories; plugins never do.

What a plugin declares (the class attributes below) is checked when its class is made:
an attribute the contract does not know (a typo such as `trial_agregation`) or a value
out of range is a TypeError, reported when the plugin loads.
"""

from __future__ import annotations

import abc
import random
import re
from dataclasses import dataclass
from typing import (TYPE_CHECKING, Any, Callable, ClassVar, Optional, Protocol,
                    runtime_checkable)

from lifebench.api.budget import Budget
from lifebench.api.declarations import (check_declarations, is_instance as _is, metrics as _metrics,
                                        names as _names, one_of as _one_of, value_range as _range,
                                        tables as _tables, version_text)
from lifebench.api.errors import UserError, unknown_name
from lifebench.api.evaluation import EvaluationProtocol
from lifebench.api.llm import ChatModel
from lifebench.api.records import EpisodeOutcome, Instance, Observation, Step, TaskInfo
from lifebench.api.reporting import PER_TASK_METRICS, TRIAL_AGGREGATIONS, Metric, TableMaker
from lifebench.api.scripted import ScriptedReply, ScriptedRequest
from lifebench.api.teaching import PlanStep, Teacher, TeacherPlan, remaining_sequence

if TYPE_CHECKING:
    from lifebench.api.context import ContextSchema, InstanceFacts
    from lifebench.api.data import RemoteData
    from lifebench.api.jobs import Jobs

# A split in recipe-dependency order (How²'s curriculum ablation) is named after the split
# it reorders: "val" -> "val.curriculum".
CURRICULUM_SUFFIX = ".curriculum"


def curriculum_split(split: str) -> str:
    return f"{split}{CURRICULUM_SUFFIX}"


def is_curriculum_split(split: str) -> bool:
    return split.endswith(CURRICULUM_SUFFIX)


def base_split(split: str) -> str:
    """The split a curriculum split reorders (the split itself otherwise)."""
    return split[: -len(CURRICULUM_SUFFIX)] if is_curriculum_split(split) else split


# A split partitioned for methods that adapt to a test task before testing it (InstructRAG's
# few-shot stage): "valid_unseen.support" holds the first few instances of every task family
# of "valid_unseen" (never scored), "valid_unseen.query" the rest (what is scored).
FEW_SHOT_SUPPORT_SUFFIX = ".support"
FEW_SHOT_QUERY_SUFFIX = ".query"


def few_shot_splits(split: str) -> tuple[str, str]:
    """The (support, query) partition names of `split`."""
    return f"{split}{FEW_SHOT_SUPPORT_SUFFIX}", f"{split}{FEW_SHOT_QUERY_SUFFIX}"


def few_shot_base(split: str) -> Optional[str]:
    """The split a partition name partitions, or None for a split that is not one."""
    for suffix in (FEW_SHOT_SUPPORT_SUFFIX, FEW_SHOT_QUERY_SUFFIX):
        if split.endswith(suffix):
            return split[: -len(suffix)]
    return None


def partition_few_shot(instances: list[Instance], family: Callable[[Instance], Optional[str]],
                       per_family: int) -> tuple[list[Instance], list[Instance]]:
    """(support, query): the first `per_family` instances of each family in the split's
    fixed order go to support, the rest to query; both keep the split's order."""
    seen: dict[Optional[str], int] = {}
    support, query = [], []
    for instance in instances:
        kind = family(instance)
        seen[kind] = seen.get(kind, 0) + 1
        (support if seen[kind] <= per_family else query).append(instance)
    return support, query


@runtime_checkable
class Env(Protocol):
    """One environment per episode, in the spirit of gymnasium's reset/step.

    Optional extras an env may define, which the harness uses when present:
    `snapshot() -> object` and `restore(snapshot)` (otherwise the harness falls back to
    reset-and-replay), `sample_action(rng) -> str` (a uniform draw from `valid_actions()`
    without building the list), `query(name) -> str` (free information: "look",
    "inventory"), `render()` (an image), `episode_extra() -> dict` (fields for the
    record's `extra`) and `step_within(action, actions_left) -> Step` (for an env with
    macro actions: a step that plays at most `actions_left` of the game's moves and says
    how many in `Step.actions`; the harness then calls it instead of `step` and counts
    those moves against the budget).
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


@dataclass(frozen=True)
class NoConfig:
    """Config of a plugin that takes no arguments."""


def _patterns(value: Any) -> Optional[str]:
    """None, or a tuple of regular expressions that compile (`outcome_signals`)."""
    if value is None:
        return None
    if not isinstance(value, tuple) or not all(isinstance(p, str) for p in value):
        return f"must be None or a tuple of regular expressions, got {value!r}"
    for pattern in value:
        try:
            re.compile(pattern, re.M)
        except re.error as exc:
            return f"has a pattern that does not compile ({pattern!r}: {exc})"
    return None


class Benchmark(abc.ABC):
    """A benchmark adapter. One instance per process and config; it may cache loaded data.

    `Config` (a frozen dataclass) holds options that change the benchmark itself, set with
    `--benchmark-arg KEY=VALUE`; a non-default config is part of every record's key.
    """

    name: ClassVar[str]
    Config: ClassVar[type] = NoConfig
    default_budget: ClassVar[int]
    # The splits `make bench` and a bare `lifebench run --benchmark X` use.
    default_splits: ClassVar[tuple[str, ...]] = ()
    # The split that is the benchmark's column of `lifebench grid`; None: the first default.
    headline_split: ClassVar[Optional[str]] = None
    # The split that methods which learn before testing (`needs.support`) learn from.
    support_split: ClassVar[Optional[str]] = None
    # Distributions whose versions the run manifest records.
    packages: ClassVar[tuple[str, ...]] = ()
    # Kinds of split this benchmark can generate (`lifebench splits make KIND --n N --seed S`).
    split_generators: ClassVar[tuple[str, ...]] = ()
    # The instance metadata key naming an instance's task family (ScienceWorld's task,
    # ALFWorld's task type, Plancraft's target): records carry it as `task_family`, and
    # the leaderboard makes per-task tables by it.
    task_family_key: ClassVar[Optional[str]] = None
    # What a comparison generalises to (`lifebench.api.comparison`): "instances" (the
    # families, if any, are the benchmark's fixed design, as ALFWorld's six task types), or
    # "families" (they are a sample: tests and intervals are then made per family).
    population: ClassVar[str] = "instances"
    # What one stream needs from a Ray cluster (`--executor ray`): CPUs, and memory in bytes
    # for benchmarks that start a simulator (ScienceWorld's JVM).
    ray_resources: ClassVar[dict[str, float]] = {"num_cpus": 1}
    # Environment variables the benchmark reads (where its data is, its simulator's
    # options): the workers of a Ray instance started by a run get them from the driver.
    environment: ClassVar[tuple[str, ...]] = ()
    # An action that changes nothing and is always accepted (methods that must spend a
    # step without acting, e.g. How² after too many non-environment actions).
    noop_action: ClassVar[str] = "look"
    # Prefixes of actions a method must play only when it names them, never as the nearest
    # match of other text (ScienceWorld's `focus on`, which ends the task when wrong).
    guarded_actions: ClassVar[tuple[str, ...]] = ()
    # What in an observation reveals reward or the episode's end: regular expressions (`^`
    # and `$` per line) for the text to cut (TextWorld's "Your score has just gone up by one
    # point."). An instance-context build never reads it (`without_outcome`), nor a step's
    # reward, score or success; a method's own exploration does (IGE keeps the score).
    # `()` declares that the observations have none; None (the default) declares nothing.
    outcome_signals: ClassVar[Optional[tuple[str, ...]]] = None
    # -- reporting (see lifebench.api.reporting)
    # Leaderboard columns of this benchmark's table, beyond success, score and steps.
    metrics: ClassVar[tuple[Metric, ...]] = ()
    # Further tables from this benchmark's result records.
    tables: ClassVar[tuple[TableMaker, ...]] = ()
    # How an instance's trials count by default (`lifebench leaderboard --trials` overrides).
    trial_aggregation: ClassVar[str] = "all"
    # What the per-task table shows: "success" (a rate) or "score" (a mean).
    per_task_metric: ClassVar[str] = "success"
    # The number of this benchmark's column in the grid table; None: `per_task_metric`.
    primary_metric: ClassVar[Optional[str]] = None
    # The range of `score` (its intervals stay inside it); None: unbounded, or bounded
    # per instance (TextWorld's points), and then the score gets a t interval.
    score_range: ClassVar[Optional[tuple[float, float]]] = None
    # Whether success is reaching a goal at some step (then success under smaller budgets
    # follows from the step of success); Crafter's success is surviving to the end.
    budget_curves: ClassVar[bool] = True
    # What success means where a reader of the grid might not guess it (its notes say so).
    success_note: ClassVar[Optional[str]] = None

    _DECLARED: ClassVar[dict[str, Callable[[Any], Optional[str]]]] = {
        "name": _is(str), "default_budget": _is(int), "default_splits": _names,
        "headline_split": _is(str, type(None)),
        "support_split": _is(str, type(None)), "packages": _names,
        "split_generators": _names, "task_family_key": _is(str, type(None)),
        "population": _one_of(("instances", "families")),
        "ray_resources": _is(dict), "environment": _names, "noop_action": _is(str),
        "guarded_actions": _names, "outcome_signals": _patterns, "metrics": _metrics,
        "tables": _tables, "trial_aggregation": _one_of(TRIAL_AGGREGATIONS),
        "per_task_metric": _one_of(PER_TASK_METRICS), "budget_curves": _is(bool),
        "primary_metric": lambda v: None if v is None else _one_of(PER_TASK_METRICS)(v),
        "score_range": _range, "success_note": _is(str, type(None)),
    }

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        check_declarations(cls, "benchmark", Benchmark._DECLARED)

    def __init__(self, config: Any = None) -> None:
        self.config = config if config is not None else self.Config()
        self._loaded: dict[str, list[Instance]] = {}
        self._by_id: dict[str, dict[str, Instance]] = {}

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

    @property
    def headline(self) -> Optional[str]:
        """The split of this benchmark's grid column."""
        return self.headline_split or next(iter(self.default_splits), None)

    def generate_split(self, kind: str, n: int, seed: int) -> str:
        """Generate a split of `n` instances from `seed`; returns its name."""
        raise UserError(f"benchmark {self.name!r} generates no splits")

    def instances(self, split: str) -> list[Instance]:
        """The split's instances in their fixed order, loaded once per process."""
        if split not in self._loaded:
            self._loaded[split] = self.load_instances(split)
        return self._loaded[split]

    def ordered_instances(self, split: str, seed: int) -> list[Instance]:
        """The split's instances in the order a stream of `seed` plays them: the split's
        fixed order, unless the split's order is drawn per seed (How²'s curriculum splits
        break the recipe graph's cycles at random, per seed)."""
        return self.instances(split)

    def instance(self, split: str, instance_id: str) -> Instance:
        """One instance of a split, by id (KeyError for an id the split does not have)."""
        if split not in self._by_id:
            self._by_id[split] = {i.instance_id: i for i in self.instances(split)}
        return self._by_id[split][instance_id]

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

    def teacher_plan(self, env: Env, played: tuple[str, ...], oracle: OraclePolicy,
                     item: Optional[str] = None) -> TeacherPlan:
        """The plan a teacher explains, from the env's current state, given the actions
        played so far in the episode and the episode's oracle (made before reset), for
        `item` (what a question asks about) where the benchmark has item-level plans. By
        default the part of the oracle's fixed sequence (walkthrough, gold path) not yet
        followed, for the task whatever the item (`about="task"`); a benchmark with a
        planner overrides this to plan from the actual state, and for the item."""
        sequence = getattr(oracle, "sequence", None)
        if sequence is None:
            raise UserError(f"benchmark {self.name!r} has no teacher: its oracle gives no plan")
        rest = remaining_sequence(sequence(), played)
        return TeacherPlan(steps=tuple(PlanStep(a, a, a) for a in rest))

    def task_text(self, first_observation: str) -> str:
        """The part of an episode's first observation that states its task (what retrieval
        methods key their memory by): the whole observation unless the benchmark knows
        better."""
        return first_observation.strip()

    def task_statement(self, first_observation: str) -> Optional[str]:
        """The text of an episode's first observation that states the instance's task, where
        its observations state one (ALFWorld's "Your task is to: ..." line), else None. An
        instance-context build never sees it: a context is task-agnostic."""
        return None

    def without_task(self, text: str, first_observation: str) -> str:
        """`text` without the task's statement of the episode that began with
        `first_observation` (`task_statement`), its blank lines closed up: what a part of a
        method that must not know the task (a context build, STEP's Executor) may read."""
        return cut_statement(text, self.task_statement(first_observation))

    def without_outcome(self, text: str) -> str:
        """`text` without what reveals reward or the episode's end (`outcome_signals`), its
        emptied lines closed up: what an instance-context build may read."""
        return cut_signals(text, self.outcome_signals)

    def few_shot_support(self, split: str) -> Optional[str]:
        """The split a method may adapt on before it is tested on `split` (the same task
        families, never scored with it): a query partition's support partition."""
        base = few_shot_base(split)
        if base is None or not split.endswith(FEW_SHOT_QUERY_SUFFIX):
            return None
        support = few_shot_splits(base)[0]
        return support if support in self.splits() else None

    def task_family(self, instance: Instance) -> Optional[str]:
        if self.task_family_key is None or instance.metadata.get(self.task_family_key) is None:
            return None
        return str(instance.metadata[self.task_family_key])

    def budget(self, instance: Instance) -> int:
        """The default step budget of an instance (the protocol's, when it varies by task)."""
        return self.default_budget

    def gold_length(self, instance: Instance) -> Optional[int]:
        """The length of the instance's reference solution when it is known without
        playing (ScienceWorld's gold path, Plancraft's optimal path), else None.
        Privileged: a method uses it only behind an option that says so (CLIN's gold_stop)."""
        return None

    def check_available(self) -> None:
        """Raise UserError (naming the fix) when the benchmark's package or data is missing."""

    def context_schema(self) -> Optional["ContextSchema"]:
        """What an instance context of this benchmark holds (see lifebench.api.context);
        None: context providers that need a schema refuse the benchmark."""
        return None

    def instance_facts(self, env: Env) -> Optional["InstanceFacts"]:
        """The ground truth of the instance `env` plays (called after its first reset), for
        measuring contexts' coverage; None when the benchmark does not know it."""
        return None

    def remote_data(self) -> Optional["RemoteData"]:
        """The files this benchmark needs that no package registry ships, each pinned by its
        sha256 with where it comes from (`lifebench data` fetches and checks them); None:
        its package holds all it needs."""
        return None


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
    # For methods with `needs.restore`: a point of this episode to come back to, and the
    # return to it (the env's native restore, or a reset and a replay whose actions are
    # steps of the episode); restore returns the observation there.
    snapshot: Optional[Callable[[], Any]] = None
    restore: Optional[Callable[[Any], Observation]] = None
    # For methods with `needs.restore`: whether the last step ended the game without
    # success (the branch is over: the next `act` must restore, or the episode ends).
    branch_over: Optional[Callable[[], bool]] = None


@dataclass(frozen=True)
class MethodNeeds:
    llm: bool = False
    oracle: bool = False
    support: bool = False
    teacher: bool = False  # `ctx.teacher` (answers from the benchmark's oracle)
    # Returns to earlier states of its episode (Go-Explore): gets tools.snapshot/restore,
    # and a step that ends the game without success ends only that branch; the episode ends
    # when the method acts again without restoring.
    restore: bool = False
    # Offers the model tools (`ctx.llm.chat(..., tools=...)`): `--llm-tool-protocol` is
    # then part of its streams' identity (for other methods it changes nothing).
    tools: bool = False


@dataclass(frozen=True)
class StreamContext:
    """What a method learns once per stream, in `setup`."""

    benchmark: Benchmark
    split: str
    seed: int
    budget: Budget  # as asked; each episode's steps are in TaskInfo.budget_steps
    model: Optional[str]
    llm: Optional[ChatModel] = None  # for methods with needs.llm
    teacher: Optional[Teacher] = None  # for methods with needs.teacher
    # Another benchmark by name (a method trained on one benchmark and tested on another,
    # e.g. InstructRAG's ALFWorld -> ScienceWorld transfer); raises UserError for unknown names.
    benchmark_named: Optional[Callable[[str], "Benchmark"]] = None
    # The run lets model-written code run where the OS cannot confine it (rlimits only):
    # `--allow-unconfined-code`, recorded in the manifest.
    allow_unconfined_code: bool = False
    # Runs a preparation's independent jobs on the run's workers (`lifebench.api.jobs`:
    # call `run_jobs(ctx, function, payloads)`, which runs them here when this is None).
    jobs: Optional["Jobs"] = None



REPLAYED_FIELDS = ("success", "score", "steps", "llm_calls", "tokens_in", "tokens_out", "explore_steps",
                   "extra.training_curves")


def _replay_tolerance(value: Any) -> Optional[str]:
    ok = isinstance(value, dict) and all(
        k in REPLAYED_FIELDS and isinstance(v, (int, float)) and 0 <= v < 1 for k, v in value.items())
    return None if ok else (f"must map record fields ({', '.join(REPLAYED_FIELDS)}) to a "
                            f"relative tolerance from 0 to below 1, got {value!r}")


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
    # -- reporting (see lifebench.api.reporting): columns for the tables of the
    # benchmarks it runs on, and tables of its own from its result records.
    metrics: ClassVar[tuple[Metric, ...]] = ()
    tables: ClassVar[tuple[TableMaker, ...]] = ()
    # Other methods (by name) whose result records, on the benchmark splits this method's
    # records ran on, its `tables` get too, after its own: for tables that set it beside
    # its paper's baselines. Empty: its tables see its own records only.
    table_peers: ClassVar[tuple[str, ...]] = ()
    # Where the method puts an instance context (`--context`, given in `TaskInfo.context`),
    # in one line; None: it cannot use one, and runs asking it to are refused.
    context_use: ClassVar[Optional[str]] = None
    # The method's behaviour version: bump it when a change alters what the method does
    # (prompts, parsing, calls, memory). It is part of every record's key, so records of
    # two versions are never pooled in one table row nor resumed into each other.
    version: ClassVar[str] = "1"
    # What of its records is not bit-reproducible across machines (float sums in its
    # training, say): record field -> the relative difference a replay may show there
    # (`lifebench verify` then says "replayed within tolerance", naming the fields). Empty:
    # a replay from the same answers reproduces its records exactly.
    replay_tolerance: ClassVar[dict[str, float]] = {}

    _DECLARED: ClassVar[dict[str, Callable[[Any], Optional[str]]]] = {
        "name": _is(str), "needs": _is(MethodNeeds), "stateless": _is(bool),
        "metrics": _metrics, "tables": _tables, "table_peers": _names,
        "context_use": _is(str, type(None)),
        "version": version_text, "replay_tolerance": _replay_tolerance,
    }

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        check_declarations(cls, "method", Method._DECLARED)

    def __init__(self, config: Any = None) -> None:
        self.config = config if config is not None else self.Config()

    @classmethod
    def protocol(cls, benchmark: Benchmark) -> EvaluationProtocol:
        """How this method is evaluated on `benchmark` as its paper did (trials, the scored
        trial, arguments, smoke scale); any benchmark, a third party's too, gets an answer."""
        return EvaluationProtocol()

    @classmethod
    def stream_problem(cls, config: Any, benchmark: Benchmark, split: str) -> Optional[str]:
        """Why this config cannot run on this benchmark split (a grid skips the pair, a
        single request fails with it); None when it can."""
        return None

    def setup(self, ctx: StreamContext) -> None:
        self.ctx = ctx

    def prepare(self, support: list[Instance]) -> None:
        """Learn before the stream starts (methods with `needs.support`): `support` is the
        benchmark's support split, empty when it has none."""

    def explore(self, env: Env, budget_steps: int) -> None:
        """Explore an instance before its episode (IGE, AutoContext). Called when the
        method's config has a positive `explore_steps`, on a separate env of the same
        instance with `snapshot()/restore()`; stepping past the budget ends exploration."""

    def begin_episode(self, task: TaskInfo, tools: EpisodeTools) -> None:
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

    @classmethod
    def scripted_reply(cls, request: ScriptedRequest) -> Optional[ScriptedReply]:
        """The scripted model's reply to one of this method's requests (see
        `lifebench.api.scripted`): well-formed for the request's role, acting through
        `request.act`. None: the generic reply."""
        return None

    def episode_extra(self) -> dict[str, Any]:
        """Method-specific fields for the record's `extra` (e.g. teacher interventions)."""
        return {}


def episode_rng(seed: int, *parts: Any) -> random.Random:
    """A RNG seeded from the stream seed and the episode identity (not from run order),
    so a sharded or resumed stream draws exactly what an uninterrupted one draws."""
    return random.Random("/".join(str(p) for p in (seed, *parts)))


def cut_statement(text: str, statement: Optional[str]) -> str:
    """`text` without `statement` (None or blank: unchanged), its blank lines closed up."""
    statement = (statement or "").strip()
    if not statement or statement not in text:
        return text
    return re.sub(r"\n{3,}", "\n\n", text.replace(statement, "")).strip()


def cut_signals(text: str, patterns: Optional[tuple[str, ...]]) -> str:
    """`text` without every match of `patterns` (`^` and `$` per line), its emptied lines
    and blank runs closed up; unchanged where nothing matches."""
    cut = text
    for pattern in patterns or ():
        cut = re.sub(pattern, "", cut, flags=re.M)
    if cut == text:
        return text
    return re.sub(r"\n(?:[ \t]*\n)+", "\n\n", cut).strip()
