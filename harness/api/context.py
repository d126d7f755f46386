"""Instance contexts: knowledge about one environment instance, found by exploring it before
its tasks and handed to any method (AutoContext's "+ AutoContext" switch).

A `ContextProvider` plugin (entry-point group `lifebench.contexts`) explores an instance on
its own env, within its own step budget, and returns a document. The harness builds each
context once per (instance, provider, build config, model, context seed), stores it in the
results directory, and gives it to every episode of that instance through
`TaskInfo.context`; a method that can use it says where in `Method.context_use`.

A benchmark may describe what a document about its instances holds (`ContextSchema`, from
`Benchmark.context_schema()`) and give the ground truth the harness measures a document's
coverage against (`InstanceFacts`, from `Benchmark.instance_facts(env)`): privileged, never
shown to a method.
"""

from __future__ import annotations

import abc
import random
import re
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Optional, Protocol

from lifebench.api.llm import ChatModel
from lifebench.api.declarations import check_declarations, is_instance, names, tables, version_text
from lifebench.api.errors import EnvError
from lifebench.api.records import CONTEXT_HEADING, InstanceContext, Observation, Step
from lifebench.api.scripted import ScriptedReply, ScriptedRequest

# The part of the document format every benchmark shares (AutoContext's Action Rules).
ACTION_RULES_SCHEMA = """#### Action Rules
One entry per action that was tried, with what it needs and what it does:
- action: [the exact command syntax, with placeholders for objects]
  - requirements: [what must hold before it succeeds] / Unknown
  - key_result: [what changes when it succeeds] / Unknown
  - note: [anything else learnt about it, e.g. the wording that fails]"""

CONTEXT_MODES = ("action", "agent")


@dataclass(frozen=True)
class ContextSchema:
    """The shape of a benchmark's instance document: a benchmark-specific Observations
    section and the shared Action Rules section. Attributes not observed yet hold `unknown`:
    those are the gaps an explorer aims at."""

    observations: str
    action_rules: str = ACTION_RULES_SCHEMA
    unknown: str = "Unknown"
    # "action": exploration tries primitive actions; "agent": it hands sub-goals to a
    # sub-agent (Crafter, where one action reveals little).
    mode: str = "action"
    # Observations that mean an action failed (no LLM is asked to summarise them).
    failure_patterns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in CONTEXT_MODES:
            raise ValueError(f"mode must be one of {', '.join(CONTEXT_MODES)}, got {self.mode!r}")

    def text(self) -> str:
        return f"{self.observations.strip()}\n\n{self.action_rules.strip()}"

    def is_failure(self, observation: str) -> bool:
        return any(re.search(p, observation.strip()) for p in self.failure_patterns)


_ARTICLES = re.compile(r"\b(a|an|the|some)\b")


def normalise_name(name: str) -> str:
    """A name as coverage compares it: lower case, no articles or punctuation, single spaces
    ("The Kitchen" and "kitchen" match; "mug 1" stays "mug 1")."""
    text = re.sub(r"[^a-z0-9 ]+", " ", name.lower())
    return " ".join(_ARTICLES.sub(" ", text).split())


@dataclass(frozen=True)
class InstanceFacts:
    """Ground truth of an instance, for coverage only: its locations and its objects."""

    locations: frozenset[str] = frozenset()
    objects: frozenset[str] = frozenset()


def coverage(document: str, facts: InstanceFacts) -> dict[str, float]:
    """The fraction of the instance's locations, of its objects, and of both, that the
    document names (as whole words, after `normalise_name`; no fuzzy matching)."""
    text = f" {normalise_name(document)} "

    def share(names: frozenset[str]) -> Optional[float]:
        wanted = {normalise_name(n) for n in names} - {""}
        if not wanted:
            return None
        return sum(f" {n} " in text for n in wanted) / len(wanted)

    out = {"locations": share(facts.locations), "objects": share(facts.objects),
           "all": share(facts.locations | facts.objects)}
    return {k: round(v, 4) for k, v in out.items() if v is not None}


class ExplorationBudgetExhausted(Exception):
    """Raised by an exploration env when its explorer steps past the exploration budget."""


def step_counted(env: Any, action: str, actions_left: int) -> tuple[Step, int]:
    """One step of `env` and the budget steps it used, as the harness counts them: 1, or
    for an env with macro actions (`Env.step_within`: Crafter's `move to [x, y]`) the
    game's moves it played, at most `actions_left`."""
    within = getattr(env, "step_within", None)
    if within is None:
        return env.step(action), 1
    step = within(action, actions_left)
    used = step.actions
    if not isinstance(used, int) or isinstance(used, bool) or not 1 <= used <= actions_left:
        raise EnvError(f"the environment said a step used {used!r} actions; expected 1 to "
                       f"{actions_left}")
    return step, used


class ExplorationEnv(Protocol):
    """The env an explorer plays: its own env of the instance, with snapshots (native, or
    reset and replay, whose steps count) and a budget it cannot pass, and nothing else of
    the env. A context build's is blind: its observations are text (and image) without the
    task's statement (`Benchmark.task_statement`) and what reveals reward or the episode's
    end (`Benchmark.outcome_signals`), and its steps say only whether the episode ended."""

    steps: int  # actions sent so far, replays included
    budget: int

    def reset(self) -> Observation: ...

    def step(self, action: str) -> Step: ...

    def snapshot(self) -> Any: ...

    def restore(self, snapshot: Any) -> Observation: ...

    def valid_actions(self) -> list[str]: ...


@dataclass
class ContextTools:
    """What a provider gets beside its env: what a build needs, never the benchmark, the
    instance's metadata or the env's queries (ScienceWorld's `query("task")`)."""

    schema: Optional[ContextSchema]
    instructions: str  # the benchmark's manual
    llm: Optional[ChatModel]
    budget_steps: int
    rng: random.Random
    sample_action: Callable[[random.Random], str]  # a draw from the valid actions: no step
    # Records the document as it stands now (the coverage curve's next point).
    report: Callable[[str], None] = lambda document: None
    # What the provider wants kept with its context besides the document (e.g. its TODO
    # forest): JSON values, stored in contexts/<key>.json.
    artefacts: dict[str, Any] = field(default_factory=dict)


class ContextProvider(abc.ABC):
    """A context plugin: builds one instance's document by exploring it.

    `Config` is a frozen dataclass (`--context-arg KEY=VALUE`); it must have an int field
    `explore_steps`, the exploration budget. Fields named in `use_fields` change only how
    methods are shown the document, not how it is built: they are left out of the build's
    identity, so one build serves every value.
    """

    name: ClassVar[str]
    Config: ClassVar[type]
    needs_llm: ClassVar[bool] = True
    use_fields: ClassVar[tuple[str, ...]] = ()
    tables: ClassVar[tuple[Callable[..., Any], ...]] = ()
    # The build's behaviour version: bump it when a change alters what a build does (its
    # prompts, what it reads), so that contexts built before are not reused (it is part of
    # every context's key from version "2" on).
    version: ClassVar[str] = "1"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        check_declarations(cls, "context provider", {
            "name": is_instance(str), "needs_llm": is_instance(bool), "use_fields": names,
            "tables": tables, "version": version_text})

    def __init__(self, config: Any = None) -> None:
        self.config = config if config is not None else self.Config()

    @classmethod
    def problem(cls, config: Any, benchmark: Any) -> Optional[str]:
        """Why this config cannot build contexts on this benchmark; None when it can."""
        return None

    @classmethod
    def scripted_reply(cls, request: "ScriptedRequest") -> Optional["ScriptedReply"]:
        """The scripted model's reply to one of this provider's build requests (see
        `lifebench.api.scripted`); None: the generic reply."""
        return None

    @classmethod
    def explore_budget(cls, config: Any) -> int:
        return int(config.explore_steps)

    @classmethod
    def context_seed(cls, config: Any, stream_seed: int) -> int:
        """The seed a stream's contexts are built with: one context per instance, shared by
        every stream seed, unless the config asks for one per seed (`per_seed`)."""
        return stream_seed if getattr(config, "per_seed", False) else 0

    def prompt_text(self, document: str) -> str:
        """The part of the document methods are shown (a `use_fields` option may cut it)."""
        return document

    @abc.abstractmethod
    def build(self, env: ExplorationEnv, tools: ContextTools) -> str:
        """Explore `env` (reset it first) and return the document. Running out of the
        exploration budget raises ExplorationBudgetExhausted from `env.step`; a provider
        that lets it through gets its last `tools.report`ed document used."""
