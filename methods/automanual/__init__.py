"""AutoManual (Chen et al., NeurIPS 2024): an agent that writes its own manual. A Planner
acts by writing Python code against the environment; a Builder turns each built task into
rules (special mechanisms, success processes, helper methods, corrected and unresolved
errors) of a rule system, with a skill bank of code per task type; a Formulator turns the
rules into a Markdown manual; then the Planner is tested with the manual.

In lifebench: building and formulating run in `prepare`, on the benchmark's support split
(`building.py`: real envs of the support instances, at most `build_tasks` of them); testing
is the scored episodes. An episode is one `PlanTrial` (`trial.py`): `act` hands each
observation to the plan's sandbox process (`sandbox.py`, `child.py`), which runs the plan
to its next agent action and blocks there; `act` returns that action, the harness plays it
(every step is the harness's) and the next `act` brings its observation back. When a plan
ends without finishing the task the Planner writes the next one, up to `test_attempts`;
after that `act` raises EndEpisode. The rules, the manual and the skills are the method's
state, so a resumed stream tests with them without building again. See README.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from lifebench.api import (Benchmark, EndEpisode, EvaluationProtocol, EpisodeOutcome, EpisodeTools, Instance, Method,
                           MethodNeeds, Observation, RoleParams, StreamContext, TaskInfo,
                           UserError)
from lifebench.embeddings import DEFAULT_MODEL

from lifebench.methods.automanual.api import API_CHOICES, api_for
from lifebench.methods.automanual.building import (PLANNER, BuildingPhase, BuildSettings,
                                                   planner_system, skill_block, skill_helpers)
from lifebench.methods.automanual.rules import RuleSystem, Skill, SkillBank
from lifebench.methods.automanual import confine, scripted
from lifebench.methods.automanual.sandbox import SandboxLimits
from lifebench.methods.automanual.trial import PlanTrial, TrialOver

STATE_VERSION = 1


@dataclass(frozen=True)
class AutoManualConfig:
    # building (the authors' README: 6 tasks per type over ALFWorld's 6 types)
    build_tasks: int = 36            # support tasks built on, in all
    tasks_per_type: int = 6          # ... of one task type
    stop_after_successes: int = 3    # a type is left after this many successes in a row
    build_attempts: int = 3          # code replies per building task (MAX_REPLAN_STEP)
    test_attempts: int = 5           # ... per scored episode
    max_actions: int = 50            # env actions per task (MAX_ACTION_STEP)
    max_rules: int = 12              # more triggers consolidation (MAX_RULE_NUM)
    seed_rules: bool = True          # start from the benchmark's seed rules (ALFWorld: 3)
    formulate: bool = True           # make the manual (false: test with the rule list)
    skills_at_test: bool = True      # the retrieved skill is shown when tested (as the code)
    builder_retries: int = 1         # asks again when no operations can be read
    consolidation_rounds: int = 6    # consolidator calls per epoch, at most
    history_chars: int = 12_000      # of an epoch's trajectory shown to the Builder
    api: str = "auto"                # auto: the benchmark's own agent (ALFWorld) | generic
    code_timeout_s: float = 10.0     # longest a plan may compute between two actions
    sandbox_memory_mb: int = 1024
    sandbox_cpu_s: int = 120
    embedding_model: str = DEFAULT_MODEL  # skill retrieval by task type name
    temperature: float = 0.0
    max_tokens: int = 2000
    llm_seed: Optional[int] = None

    def __post_init__(self) -> None:
        positive = {"tasks_per_type": self.tasks_per_type, "stop_after_successes":
                    self.stop_after_successes, "build_attempts": self.build_attempts,
                    "test_attempts": self.test_attempts, "max_actions": self.max_actions,
                    "max_rules": self.max_rules, "history_chars": self.history_chars,
                    "sandbox_memory_mb": self.sandbox_memory_mb, "sandbox_cpu_s": self.sandbox_cpu_s,
                    "max_tokens": self.max_tokens}
        for name, value in positive.items():
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        for name in ("build_tasks", "builder_retries", "consolidation_rounds"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.code_timeout_s <= 0:
            raise ValueError(f"code_timeout_s must be > 0, got {self.code_timeout_s}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if self.api not in API_CHOICES:
            raise ValueError(f"api must be one of {', '.join(API_CHOICES)}, got {self.api!r}")


class AutoManualMethod(Method):
    name = "automanual"
    version = "2"  # bump when a change alters what it does (lifebench.api.Method.version)
    Config = AutoManualConfig
    needs = MethodNeeds(llm=True, support=True)
    context_use = "after the benchmark's manual in the planner's system message"

    # The scripted model's replies: one checked command per code reply (see scripted.py).
    scripted_reply = classmethod(lambda cls, request: scripted.scripted_reply(request))

    @classmethod
    def protocol(cls, benchmark: Benchmark) -> EvaluationProtocol:
        # smoke: a manual built on 3 support tasks, consolidated past 4 rules
        return EvaluationProtocol(smoke_args={"build_tasks": 3, "max_rules": 4},
                                  smoke_scale=12.0,  # 36 building tasks for 3
                                  source="AutoContext §5 (AutoManual as its baseline, one "
                                         "trial); the build's settings from AutoManual's code")

    @classmethod
    def stream_problem(cls, config: Any, benchmark: Benchmark, split: str) -> Optional[str]:
        if benchmark.support_split is None:
            return (f"automanual builds its manual on a support split and {benchmark.name} "
                    f"has none")
        return None

    def setup(self, ctx: StreamContext) -> None:
        super().setup(ctx)
        confinement = confine.probe()
        if not confinement.available and not ctx.allow_unconfined_code:
            raise UserError(f"automanual runs code the model writes, and this machine cannot "
                            f"confine it ({confinement.description}); give "
                            f"--allow-unconfined-code to run it under rlimits only")
        confine.say_once(confinement if confinement.available else None)
        config = self.config
        self.params = RoleParams(temperature=config.temperature, max_tokens=config.max_tokens,
                                 seed=config.llm_seed)
        self.api = api_for(ctx.benchmark.name, config.api)
        self.limits = SandboxLimits(config.code_timeout_s, config.sandbox_memory_mb,
                                    config.sandbox_cpu_s)
        self.rules = RuleSystem()
        self.skills = SkillBank()
        self.build_report: dict[str, Any] = {}
        self.reported = False
        self.trial: Optional[PlanTrial] = None
        self.extra: dict[str, Any] = {}
        self._embedder: Any = None

    # -- building and formulating
    def prepare(self, support: list[Instance]) -> None:
        assert self.ctx.llm is not None, "automanual needs an LLM"
        if self.config.seed_rules:
            self.rules.seed(self.api.seed_rules)
        config = self.config
        settings = BuildSettings(
            build_tasks=config.build_tasks, tasks_per_type=config.tasks_per_type,
            stop_after_successes=config.stop_after_successes,
            build_attempts=config.build_attempts, max_actions=config.max_actions,
            max_rules=config.max_rules, builder_retries=config.builder_retries,
            consolidation_rounds=config.consolidation_rounds, history_chars=config.history_chars,
            formulate=config.formulate, limits=self.limits)
        phase = BuildingPhase(self.ctx.llm, self.params, self.ctx.benchmark, self.ctx.seed,
                              self.api, self.rules, self.skills, settings)
        report = phase.run(support)
        self.build_report = {"support_split": self.ctx.benchmark.support_split,
                             "support_instances": len(support), "api": self.api.name, **report}

    # -- testing
    def begin_episode(self, task: TaskInfo, tools: EpisodeTools) -> None:
        if self.trial is not None:  # an episode that ended in a failure left it open
            self.trial.close()
        self.task = task
        kind = self.ctx.benchmark.task_family(task.instance) or self.ctx.benchmark.name
        skill, matched = self._skill(kind) if self.config.skills_at_test else (None, None)
        helpers = skill_helpers(self.rules, skill)
        max_actions = min(self.config.max_actions, task.budget_steps)
        assert self.ctx.llm is not None
        self.trial = PlanTrial(self.ctx.llm, PLANNER, self.params,
                               planner_system(task.manual(), self.api, helpers, max_actions,
                                              self.config.test_attempts),
                               self.rules.for_planner(), skill_block(skill), self.api,
                               self.config.test_attempts, max_actions, self.limits, helpers)
        self.extra = {"automanual_rules": len(self.rules),
                      "automanual_manual_chars": len(self.rules.manual),
                      "automanual_skill": matched, "automanual_skill_kind": skill.kind if skill else None,
                      "automanual_end": None}

    def act(self, observation: Observation) -> str:
        assert self.trial is not None, "begin_episode was not called"
        try:
            return self.trial.advance(observation.text)
        except TrialOver as over:
            self.extra["automanual_end"] = over.reason
            raise EndEpisode(over.reason) from None

    def end_episode(self, outcome: EpisodeOutcome) -> None:
        if self.trial is None:
            return
        trial = self.trial
        if trial.over is None:
            trial.finish(outcome.final_observation.text if outcome.final_observation else "",
                         "the episode is over")
        trial.close()
        self.extra.update({
            "automanual_code_attempts": len(trial.attempts),
            "automanual_code_actions": [a.actions for a in trial.attempts],
            "automanual_code_errors": trial.errors, "automanual_code_refused": trial.refused,
            "automanual_helper_errors": len(trial.helper_errors),
            "automanual_misbehaved": list(trial.misbehaved)})
        if self.extra.get("automanual_end") is None:
            self.extra["automanual_end"] = "success" if outcome.success else str(outcome.status)
        self.trial = None

    def episode_extra(self) -> dict[str, Any]:
        extra = dict(self.extra)
        if not self.reported and self.build_report:
            extra["automanual_build"] = self.build_report  # the first scored episode carries it
            self.reported = True
        return extra

    def _skill(self, kind: str) -> tuple[Optional[Skill], Optional[str]]:
        """The skill of the task type, else of the nearest type name (by embeddings)."""
        skills = self.skills.skills
        if kind in skills:
            return skills[kind], kind
        if not skills:
            return None, None
        if self._embedder is None:
            from lifebench.embeddings import get_embedder

            self._embedder = get_embedder(self.config.embedding_model)
        names = sorted(skills)
        best = self._embedder.nearest(kind, names)[0]
        return skills[best.text], best.text

    # -- memory
    def state(self) -> Any:
        return {"version": STATE_VERSION, "rules": self.rules.to_json(),
                "skills": self.skills.to_json(), "build": self.build_report,
                "reported": self.reported}

    def load_state(self, state: Any) -> None:
        if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
            raise ValueError(f"automanual state of version "
                             f"{state.get('version') if isinstance(state, dict) else None!r}, "
                             f"expected {STATE_VERSION}")
        self.rules = RuleSystem.from_json(state["rules"])
        self.skills = SkillBank.from_json(state["skills"])
        self.build_report = dict(state.get("build") or {})
        self.reported = bool(state.get("reported"))
