"""AutoManual's building and formulating phases, run in `prepare` on the support split.

Building, one epoch per support task (task types in turn; at most `tasks_per_type` of a
type, and a type is left once its last `stop_after_successes` tasks all succeeded; at most
`build_tasks` in all):
1. the Planner plays the task on a real env of the support instance (`PlanTrial`: up to
   `build_attempts` plans, `max_actions` actions), shown the rules and its type's skill;
2. its conclusion: a direct success (the first plan won) gives the type's skill; an
   indirect one is followed by a request for clean code, which becomes the skill; a failure
   by a reflection, kept when the type has nothing better;
3. the Builder, with the prompt of the epoch's case, answers operations on the rules;
4. while there are more than `max_rules` rules, the consolidator merges or deletes some.
Formulating: the Formulator sorts the rules into categories and the manual is made from its
Markdown (rules.RuleSystem.formulate).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from lifebench.api import (Benchmark, ChatModel, Instance, LLMError, RoleParams, filled,
                           split_history, tag_calls)

from lifebench.methods.automanual import prompts
from lifebench.methods.automanual.api import ActionApi
from lifebench.methods.automanual.bounds import shorten
from lifebench.methods.automanual.rules import (OperationError, RuleSystem, Skill, SkillBank,
                                                parse_operations)
from lifebench.methods.automanual.sandbox import SandboxLimits, SandboxUnavailable
from lifebench.methods.automanual.trial import PlanTrial, TrialOver, helper_sources, split_reply

# The roles under which each part's LLM calls are counted.
BUILD_PLANNER, BUILDER, CONSOLIDATOR, FORMULATOR, PLANNER = (
    "build_planner", "builder", "consolidator", "formulator", "planner")
EPOCH_CHARS = 3_000  # of an epoch's trajectory shown to the consolidator when it asks


def round_robin(instances: list[Instance], family: Callable[[Instance], str]) -> list[Instance]:
    """The instances a family at a time in turn (the first of every family, then the
    second, ...), each family's in the split's order."""
    groups: dict[str, list[Instance]] = {}
    for instance in instances:
        groups.setdefault(family(instance), []).append(instance)
    out: list[Instance] = []
    depth = 0
    while len(out) < len(instances):
        for group in groups.values():
            if depth < len(group):
                out.append(group[depth])
        depth += 1
    return out


def planner_system(manual: str, api: ActionApi, helpers: list[str], max_actions: int,
                   attempts: int) -> str:
    names = []
    for source in list(api.helpers) + helpers:
        match = re.match(r"\s*def\s+(\w+)\s*\(", source)
        if match and match.group(1) not in names:
            names.append(match.group(1))
    return prompts.PLANNER_SYSTEM.format(
        manual=manual.strip(), api=api.describe(), max_actions=max_actions, attempts=attempts,
        helpers=", ".join(names) if names else "none yet", demonstration=api.demonstration)


def skill_block(skill: Optional[Skill]) -> str:
    if skill is None:
        return ""
    if skill.kind == "failure":
        return prompts.SKILL_FAILURE.format(task=skill.task, reflection=skill.reflection.strip())
    return prompts.SKILL_CODE.format(task=skill.task, code=skill.code.strip())


def skill_helpers(rules: RuleSystem, skill: Optional[Skill]) -> list[str]:
    """Functions defined before a plan runs: those of the rules' examples and of the
    skill's code (as the authors' code extracts them)."""
    codes = [r.example for r in rules.rules if r.example]
    if skill is not None and skill.code:
        codes.append(skill.code)
    return helper_sources(*codes)


@dataclass
class BuildSettings:
    build_tasks: int
    tasks_per_type: int
    stop_after_successes: int
    build_attempts: int
    max_actions: int
    max_rules: int
    builder_retries: int
    consolidation_rounds: int
    history_chars: int
    formulate: bool
    limits: SandboxLimits


class BuildingPhase:
    def __init__(self, llm: ChatModel, params: RoleParams, benchmark: Benchmark, seed: int,
                 api: ActionApi, rules: RuleSystem, skills: SkillBank, settings: BuildSettings) -> None:
        self.llm = llm
        self.params = params
        self.benchmark = benchmark
        self.seed = seed
        self.api = api
        self.rules = rules
        self.skills = skills
        self.settings = settings
        self.epochs: list[dict[str, Any]] = []
        self.transcripts: dict[str, str] = {}
        self.counters = {"builder_ops_applied": 0, "builder_ops_refused": 0,
                         "builder_unreadable": 0, "consolidation_calls": 0,
                         "code_attempts": 0, "build_actions": 0, "code_refused": 0,
                         "code_errors": 0, "env_failures": 0}

    def family(self, instance: Instance) -> str:
        return self.benchmark.task_family(instance) or self.benchmark.name

    # -- the phases
    def run(self, support: list[Instance]) -> dict[str, Any]:
        started = time.perf_counter()
        settings = self.settings
        counts: dict[str, int] = {}
        outcomes: dict[str, list[str]] = {}
        for instance in round_robin(support, self.family):
            if len(self.epochs) >= settings.build_tasks:
                break
            kind = self.family(instance)
            recent = outcomes.get(kind, [])[-settings.stop_after_successes:]
            if counts.get(kind, 0) >= settings.tasks_per_type or (
                    len(recent) == settings.stop_after_successes
                    and all(o != "failure" for o in recent)):
                continue
            counts[kind] = counts.get(kind, 0) + 1
            epoch = self.epoch(instance, kind)
            if epoch is not None:
                outcomes.setdefault(kind, []).append(epoch["outcome"])
        build_s = time.perf_counter() - started
        started = time.perf_counter()
        formulated = self.formulate() if settings.formulate else False
        return self.report(outcomes, build_s, time.perf_counter() - started, formulated)

    def epoch(self, instance: Instance, kind: str) -> Optional[dict[str, Any]]:
        name = f"epoch_{len(self.epochs)}"
        skill = self.skills.skills.get(kind)
        helpers = skill_helpers(self.rules, skill)
        max_actions = min(self.settings.max_actions, self.benchmark.budget(instance))
        trial = PlanTrial(self.llm, BUILD_PLANNER, self.params,
                          planner_system(self.benchmark.instructions, self.api, helpers,
                                         max_actions, self.settings.build_attempts),
                          self.rules.for_planner(), skill_block(skill), self.api,
                          self.settings.build_attempts, max_actions, self.settings.limits, helpers)
        success, end = False, ""
        env: Any = None
        tag_calls(self.llm, instance=instance.instance_id, split=self.benchmark.support_split)
        try:
            env = self.benchmark.make_env(instance, self.seed)
            observation = env.reset().text
            while True:
                try:
                    command = trial.advance(observation)
                except TrialOver as over:
                    end = over.reason
                    break
                step = env.step(command)
                observation = step.observation.text
                if step.done:
                    success = bool(step.success)
                    end = "the task is finished" if success else "the task ended without success"
                    trial.finish(observation, end)
                    break
        except (LLMError, SandboxUnavailable):
            raise  # the endpoint's or the machine's failure, not the env's: prepare fails
        except Exception as exc:  # noqa: BLE001 (an env that fails skips its epoch)
            self.counters["env_failures"] += 1
            self.epochs.append({"epoch": name, "instance_id": instance.instance_id,
                                "task_type": kind, "outcome": "skipped",
                                "end": f"{type(exc).__name__}: {exc}"})
            return None
        finally:
            tag_calls(self.llm, instance=None, split=None)
            trial.close()
            if env is not None:
                env.close()
        attempts = len(trial.attempts)
        self.counters["code_attempts"] += attempts
        self.counters["build_actions"] += len(trial.log)
        self.counters["code_refused"] += trial.refused
        self.counters["code_errors"] += trial.errors
        task = self.benchmark.task_text(trial.first or "")
        conclusion = ""
        if success and attempts == 1:
            outcome = "direct"
            self.skills.offer(Skill(kind, "direct", task, code=trial.attempts[0].code, epoch=name))
        elif success:
            outcome = "indirect"
            conclusion = trial.ask(prompts.INDIRECT_SUMMARY.format(attempts=attempts), BUILD_PLANNER)
            code = split_reply(conclusion)[1] or trial.attempts[-1].code
            self.skills.offer(Skill(kind, "indirect", task, code=code, epoch=name))
        else:
            outcome = "failure"
            conclusion = trial.ask(prompts.FAILURE_REFLECTION.format(reason=end), BUILD_PLANNER)
            self.skills.offer(Skill(kind, "failure", task, reflection=conclusion, epoch=name))
        verdict = {"direct": "SUCCESS at the first code", "indirect": f"SUCCESS after {attempts} codes",
                   "failure": f"FAILURE ({end})"}[outcome]
        transcript = f"{trial.transcript()}\n\nOutcome: {verdict}."
        if conclusion:
            transcript += f"\n\nThe Planner's conclusion:\n{conclusion.strip()}"
        transcript = shorten(transcript, self.settings.history_chars)
        self.transcripts[name] = transcript
        applied, refused = self.build(name, outcome, attempts, transcript)
        consolidations = self.consolidate(name)
        record = {"epoch": name, "instance_id": instance.instance_id, "task_type": kind,
                  "outcome": outcome, "attempts": attempts, "actions": len(trial.log),
                  "end": end, "ops_applied": applied, "ops_refused": refused,
                  "consolidation_calls": consolidations, "rules_after": len(self.rules)}
        self.epochs.append(record)
        return record

    def build(self, epoch: str, outcome: str, attempts: int, transcript: str) -> tuple[int, int]:
        """The Builder's operations on the rules; (applied, refused)."""
        template = {"direct": prompts.BUILDER_DIRECT, "indirect": prompts.BUILDER_INDIRECT,
                    "failure": prompts.BUILDER_FAILURE}[outcome]
        # the task first and the last plan with the outcome kept; the plans and results
        # between them are what a small context window drops, earliest first
        request = filled(template, "trajectory", split_history(transcript, r"\n\n--- ").parts,
                         epoch=epoch, attempts=attempts)
        system = prompts.BUILDER_SYSTEM.format(types=", ".join(prompts.RULE_TYPES),
                                               max_rules=self.settings.max_rules,
                                               rules=self.rules.listing(validation=True))
        messages = [{"role": "system", "content": system}, {"role": "user", "content": request}]
        operations, _ = self._operations(messages, BUILDER)
        if operations is None:
            return 0, 0
        report = self.rules.apply(operations, epoch, success=outcome != "failure")
        self.counters["builder_ops_applied"] += len(report.applied)
        self.counters["builder_ops_refused"] += len(report.refused)
        return len(report.applied), len(report.refused)

    def _operations(self, messages: list[dict[str, Any]], role: str
                    ) -> tuple[Optional[list[Any]], list[dict[str, Any]]]:
        """The operations of the model's answer (asked again, up to `builder_retries`
        times, when none can be read), and the conversation with its last answer."""
        for turn in range(self.settings.builder_retries + 1):
            reply = self.llm.chat(messages, role=role, params=self.params).text
            messages = messages + [{"role": "assistant", "content": reply}]
            try:
                operations, problems = parse_operations(reply)
                self.counters["builder_ops_refused"] += len(problems)
                return operations, messages
            except OperationError as exc:
                self.counters["builder_unreadable"] += 1
                messages = messages + [{"role": "user",
                                        "content": prompts.BUILDER_RETRY.format(error=exc)}]
        return None, messages

    def consolidate(self, epoch: str) -> int:
        """Merge or delete rules while there are more than `max_rules`; the calls made."""
        calls, stalled = 0, 0
        while len(self.rules) > self.settings.max_rules and calls < self.settings.consolidation_rounds:
            before = len(self.rules)
            epochs = "\n".join(f"{e['epoch']}: {e['task_type']}, {e['outcome']}"
                               for e in self.epochs if e["epoch"] in self.transcripts) or "(none)"
            system = prompts.CONSOLIDATOR_SYSTEM.format(
                count=before, max_rules=self.settings.max_rules,
                rules=self.rules.listing(validation=True), epochs=epochs)
            messages: list[dict[str, Any]] = [{"role": "system", "content": system},
                                              {"role": "user", "content": "Consolidate the rules."}]
            calls += 1
            operations, messages = self._operations(messages, CONSOLIDATOR)
            wanted = [e for op in operations or [] if op.op == "get_interactions" for e in op.epochs]
            if wanted and calls < self.settings.consolidation_rounds:
                shown = "\n\n".join(f"== {e}\n{shorten(self.transcripts[e], EPOCH_CHARS)}"
                                    for e in wanted[:2] if e in self.transcripts) or "(none found)"
                messages = messages + [{"role": "user", "content": prompts.CONSOLIDATOR_INTERACTIONS.format(
                    interactions=shown)}]
                calls += 1
                operations, messages = self._operations(messages, CONSOLIDATOR)
            operations = operations or []
            report = self.rules.apply(operations, epoch, success=True)
            self.counters["builder_ops_applied"] += len(report.applied)
            self.counters["builder_ops_refused"] += len(report.refused)
            stalled = stalled + 1 if len(self.rules) >= before else 0
            if stalled >= 2:
                break
        self.counters["consolidation_calls"] += calls
        return calls

    def formulate(self) -> bool:
        if not self.rules.rules:
            self.rules.manual = ""
            return False
        system = prompts.FORMULATOR_SYSTEM.format(benchmark=self.benchmark.name,
                                                  rules=self.rules.listing())
        messages = [{"role": "system", "content": system},
                    {"role": "user", "content": "Write the manual."}]
        reply = self.llm.chat(messages, role=FORMULATOR, params=self.params).text
        return self.rules.formulate(reply)

    def report(self, outcomes: dict[str, list[str]], build_s: float, formulate_s: float,
               formulated: bool) -> dict[str, Any]:
        played = [e for e in self.epochs if e["outcome"] != "skipped"]
        return {
            "epochs": len(played),
            "direct": sum(e["outcome"] == "direct" for e in played),
            "indirect": sum(e["outcome"] == "indirect" for e in played),
            "failures": sum(e["outcome"] == "failure" for e in played),
            "per_type": outcomes,
            "rules": len(self.rules), "rule_types": self.rules.type_counts(),
            "manual_chars": len(self.rules.manual), "formulated": formulated,
            "skills": {k: s.kind for k, s in sorted(self.skills.skills.items())},
            **self.counters,
            "build_s": round(build_s, 3), "formulate_s": round(formulate_s, 3),
            "epoch_log": self.epochs,
        }
