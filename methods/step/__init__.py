"""STEP (Nguyen and Shareghi 2024, "One STEP at a time: Language Agents are Stepwise
Planners"): CLIN's learnings plus a Planner, an Executor that sees only its subtask, an
Evaluator, and a strategy written after each trial (Section 3, Algorithm 1).

Per subtask: the **Planner** (role `planner`) reads the task, the last trial's strategy,
the learnings, the subtasks done and the recent turns, and names the next subtask and the
learnings it relies on; when a subtask fails it **refines** it (role `refiner`) from the
attempts made. The **Executor** (role `actor`) sees only the subtask, the learnings the
Planner chose, the objects and action forms the env lists (`clin.world_vocabulary`) and
the last turns (no earlier rationales; never the main task: the first observation comes
without the task's statement, `Benchmark.without_task`), and proposes an action. The
**Evaluator** checks the proposal against the learnings that say what does NOT help (role
`rules`; up to `evaluator_tries` proposals, the last is kept), judges from the subtask's
first proposal on whether the subtask is done (role `subtask_check`; the action proposed
with a "done" verdict is still played, then the subtask ends), and maps the proposal to a
valid action: played as it is when it names one exactly, else chosen by the model among
the `choice_top` nearest valid actions by embedding similarity (role `chooser`; the last
try after the rule check's rejections gets the nearest, unasked); "none" is fed back to
the Executor without costing a step. Replies are read tolerantly (`clin.replies`); one
not in the form asked is counted in the record (`extra.format_failures`), and a Planner
reply that names no subtask gives the subtask "UNKNOWN", as the authors' code goes on. A
subtask is refined after `subtask_actions` actions or when the same proposal is
unplayable `unplayable_repeats` times. The episode ends (record's `extra.stopped`) when
the Planner says the task is complete, after more than `max_done_subtasks` done or
`max_failed_subtasks` refined subtasks, or, between subtasks, on CLIN's stops. After each
trial the learnings are rewritten as CLIN's (role `summary`) and a strategy is written
from the trace and the actions that raised the score (role `strategy`). `planner=false`
is the paper's ablation: the Executor gets the task itself and all of the memory, and
nothing is planned, checked for completion or refined.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from lifebench.api import (EndEpisode, EpisodeOutcome, EvaluationProtocol, EpisodeTools, Method, MethodNeeds,
                           Observation, Prompt, PromptPart, RoleParams, StreamContext, TaskInfo,
                           config_setting, filled, fixed, history)
from lifebench.embeddings import DEFAULT_MODEL, get_embedder

from lifebench.methods.clin import (free_state, gold_cap, read_action, stop_note, stop_reason,
                                    world_vocabulary)
from lifebench.methods.clin.matching import ActionMatcher
from lifebench.methods.clin.memory import InstanceMemory, Trial, report, summary_prompt, trace
from lifebench.methods.clin.prompts import SUMMARY_SYSTEM
from lifebench.methods.clin.replies import FormatCounts, field, read_field
from lifebench.methods.step import prompts, scripted
from lifebench.methods.step.reporting import planner_ablation

COMPLETE = re.compile(r"\b(task|subtask)[ _]complete\b", re.I)
# The subtask when the Planner's reply names none: the authors' code goes on with it.
UNKNOWN_SUBTASK = "UNKNOWN"
# An act() that keeps proposing unplayable actions still ends: every this many model
# calls in one step, the subtask is refined (or, without a planner, the nearest played).
MAX_CALLS_PER_STEP = 30


@dataclass(frozen=True)
class StepConfig:
    planner: bool = True            # false: STEP w/o Planner (Table 2)
    # The turns shown. The code's `previous_attempt(k)` shows the last k - 1: k = 3 (its
    # `use_last_k_memories`) for the Planner, refiner, Executor and rule check, and its
    # default k = 5 for the subtask check.
    history: int = 2                # turns the Planner, refiner, Executor and rule check see
    check_history: int = 4          # turns the subtask check sees
    max_done_subtasks: int = 16     # more ends the episode (code: 16)
    max_failed_subtasks: int = 8    # more refined subtasks end the episode (code: 8)
    subtask_actions: int = 7        # actions before a subtask is refined (code: 8 loops, 7 actions)
    evaluator_tries: int = 3        # proposals the rule check may reject per action (code: 3)
    unplayable_repeats: int = 3     # the same unplayable proposal this often: refine (code: 3)
    choice_top: int = 10            # nearest valid actions the chooser sees (code: 10)
    memory_trials: int = 3          # earlier trials the learnings summariser reads (code: 3)
    repeat_stop: int = 5            # CLIN's stop on identical actions (0: never)
    gold_stop: bool = False         # CLIN's stop at 1.5x the gold path (privileged)
    match_shortlist: int = 2000     # as CLIN's (its README: the calibration)
    embedding_model: str = DEFAULT_MODEL
    temperature: float = 0.0
    max_tokens: Optional[int] = 256
    strategy_temperature: float = 0.5  # the code's strategy writer
    summary_max_tokens: Optional[int] = 1000
    llm_seed: Optional[int] = None

    def __post_init__(self) -> None:
        for name in ("history", "check_history", "subtask_actions", "evaluator_tries",
                     "unplayable_repeats", "choice_top", "match_shortlist"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        for name in ("max_done_subtasks", "max_failed_subtasks", "memory_trials", "repeat_stop"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")


def numbers(text: Optional[str]) -> list[int]:
    return [int(n) for n in re.findall(r"\d+", text or "")]


def numbered(learnings: str) -> dict[int, str]:
    """The learnings by their number ("3. X DOES NOT CONTRIBUTE to Y")."""
    out = {}
    for line in learnings.splitlines():
        found = re.match(r"\s*(\d+)[.)]\s*(.+)", line)
        if found:
            out[int(found.group(1))] = found.group(2).strip()
    return out


def listed(items: dict[int, str]) -> str:
    return "\n".join(f"{n}. {text}" for n, text in items.items())


class StepMethod(Method):
    name = "step"
    version = "3"  # bump when a change alters what it does (lifebench.api.Method.version)
    Config = StepConfig
    needs = MethodNeeds(llm=True)
    context_use = "after the manual in the system message every STEP role shares"
    tables = (planner_ablation,)

    @classmethod
    def protocol(cls, benchmark: Any) -> EvaluationProtocol:
        # it learns only across the trials of one instance (CLIN ADAPT's setting)
        return EvaluationProtocol(
            trials=5, scored_trial="max",
            source="STEP §4.1: 5 episodes per ScienceWorld task, the highest score "
                   "taken; the same elsewhere, as STEP learns only across trials")
    # the scripted model's reply for each role (`lifebench.api.scripted`)
    scripted_reply = classmethod(lambda cls, request: scripted.scripted_reply(request))

    def setup(self, ctx: StreamContext) -> None:
        super().setup(ctx)
        c = self.config
        self.params = RoleParams(temperature=c.temperature, max_tokens=c.max_tokens, seed=c.llm_seed)
        self.summary_params = RoleParams(temperature=c.temperature, max_tokens=c.summary_max_tokens,
                                         seed=c.llm_seed)
        self.strategy_params = RoleParams(temperature=c.strategy_temperature,
                                          max_tokens=c.summary_max_tokens, seed=c.llm_seed)
        self.matcher = ActionMatcher(get_embedder(c.embedding_model), 1.0,
                                     ctx.benchmark.guarded_actions, c.match_shortlist)
        self.memory = InstanceMemory()
        self.strategies: dict[str, str] = {}  # the last trial's strategy, per instance

    # -- an episode

    def begin_episode(self, task: TaskInfo, tools: EpisodeTools) -> None:
        self.task, self.tools = task, tools
        key = task.instance.instance_id
        self.learnings = numbered(self.memory.learnings(key))
        self.rules = {n: t for n, t in self.learnings.items() if "NOT" in t}  # STEP's rule set
        self.strategy = self.strategies.get(key, "")
        self.first: Optional[str] = None
        self.start_view = ""                     # the first observation without the task
        self.turns: list[tuple[str, str]] = []   # (action, observation) played
        self.done: list[str] = []                # subtasks completed
        self.failed: list[str] = []              # subtasks refined
        self.subtask: Optional[str] = None
        self.rationale = ""                      # why the Planner chose the subtask
        self.selected: dict[int, str] = {}       # the learnings the Planner forwarded
        self.refine = False
        self.subtask_turns: list[tuple[str, str, str]] = []  # (rationale, action, observation)
        self.unplayable: list[str] = []
        self.finish_after_action = False
        self.counts = {"subtasks": 0, "refined": 0, "rejected": 0, "unplayable": 0}
        self.formats = FormatCounts()
        self.stopped: Optional[str] = None
        self.step_state: Optional[str] = None       # this step's free state, once asked
        self.step_valid: Optional[list[str]] = None  # this step's valid actions, once asked
        self.step_vocabulary: Optional[str] = None   # this step's objects and action forms
        self.step_cap = gold_cap(self.ctx.benchmark, task.instance) if self.config.gold_stop else None

    def act(self, observation: Observation) -> str:
        if self.first is None:
            self.first = observation.text
            self.start_view = self.ctx.benchmark.without_task(observation.text, observation.text)
        elif self.turns:
            self.turns[-1] = (self.turns[-1][0], observation.text)
            rationale, action, _ = self.subtask_turns[-1]
            self.subtask_turns[-1] = (rationale, action, observation.text)
        if self.finish_after_action:  # the subtask was judged done with the last action
            self._subtask_done()
        if not self.config.planner:
            self._check_stops()  # no subtasks to wait for: checked before every action
        # The state and the valid actions do not change until an action is played: each is
        # asked of the env once per step (ScienceWorld computes its valid actions on demand).
        self.step_state, self.step_valid, self.step_vocabulary = None, None, None
        notes: list[tuple[str, str]] = []  # (proposal, why it was not played) this step
        for _ in range(MAX_CALLS_PER_STEP):
            if self.subtask is None:
                self._next_subtask()
            if len(self.subtask_turns) >= self.config.subtask_actions and self.config.planner:
                self._fail_subtask()
                continue
            proposal, rationale, out_of_tries = self._propose(notes)
            if COMPLETE.search(proposal):
                if not self.config.planner:
                    self._stop("the executor said the task is complete")
                self._subtask_done()
                continue
            # as the code: judged from the subtask's first proposal on, until judged done
            if self.config.planner and not self.finish_after_action and self._subtask_is_done():
                self.finish_after_action = True
            # as the code: the Executor's last try (the rule check rejected the ones before)
            # is played as its nearest valid action, without asking the chooser
            unasked = out_of_tries or len(notes) + 1 >= MAX_CALLS_PER_STEP
            action, why = self._playable(proposal, rationale, nearest_only=unasked)
            if action is None:
                self.counts["unplayable"] += 1
                notes.append((proposal, why))
                self.unplayable.append(proposal)
                if self.config.planner and self.unplayable.count(proposal) >= self.config.unplayable_repeats:
                    self._fail_subtask()
                continue
            self.turns.append((action, ""))
            self.subtask_turns.append((rationale, action, ""))
            return action
        self._stop(f"{MAX_CALLS_PER_STEP} model calls found no action to play")
        raise AssertionError("unreachable: _stop raises")

    # -- stops

    def _stop(self, reason: str) -> None:
        self.stopped = reason
        raise EndEpisode(reason)

    def _check_stops(self) -> None:
        """CLIN's stops, checked between subtasks as STEP's code does."""
        reason = stop_reason([action for action, _ in self.turns], self.config.repeat_stop,
                             self.step_cap)
        if reason:
            self._stop(reason)

    # -- the Planner

    def _next_subtask(self) -> None:
        if not self.config.planner:  # the ablation: the task itself, all of the memory
            self.subtask, self.selected = self.first or "", dict(self.learnings)
            return
        self._check_stops()
        if len(self.done) > self.config.max_done_subtasks:
            self._stop(f"more than {self.config.max_done_subtasks} subtasks done")
        if len(self.failed) > self.config.max_failed_subtasks:
            self._stop(f"more than {self.config.max_failed_subtasks} subtasks refined")
        if self.refine:
            role = "refiner"
            reply = self._chat(role, prompts.REFINE.format(
                task=self.first, subtask=self.failed[-1], rationale=self.rationale,
                state=self._state(), learnings=self._learnings_block(self.learnings)),
                history=self._subtask_history())
            self.refine = False
        else:
            role = "planner"
            done = prompts.DONE_SUBTASKS.format(subtasks="\n".join(f"- {s}" for s in self.done)) \
                if self.done else ""
            strategy = prompts.STRATEGY.format(strategy=self.strategy) + "\n" if self.strategy else ""
            reply = self._chat(role, prompts.PLAN.format(
                task=self.first, strategy=strategy, learnings=self._learnings_block(self.learnings),
                done=done, state=self._state()), history=self._history(self.config.history))
        subtask = self._read(role, reply, "Subtask").rstrip(".").strip()
        if COMPLETE.search(subtask):
            self._stop("the planner said the task is complete")
        # a reply that names no subtask is a format failure, not the end: the code goes on
        self.subtask, self.rationale = subtask or UNKNOWN_SUBTASK, field(reply, "Rationale") or ""
        used = numbers(field(reply, "Learnings used") or field(reply, "Rationale"))
        self.selected = {n: self.learnings[n] for n in used if n in self.learnings}
        self.subtask_turns, self.unplayable = [], []
        self.counts["subtasks"] += 1

    def _subtask_done(self) -> None:
        if self.subtask is not None and self.config.planner:
            self.done.append(self.subtask)
        self.subtask, self.finish_after_action = None, False

    def _fail_subtask(self) -> None:
        self.failed.append(self.subtask or "")
        self.counts["refined"] += 1
        self.subtask, self.refine, self.finish_after_action = None, True, False

    # -- the Executor and the Evaluator

    def _propose(self, notes: list[tuple[str, str]]) -> tuple[str, str, bool]:
        """An action for the subtask that breaks no rule (the last of `evaluator_tries`
        proposals is kept, unchecked), its rationale, and whether it is that last one."""
        rejected: list[tuple[str, str]] = []
        for attempt in range(self.config.evaluator_tries):
            prompt = prompts.EXECUTE.format(subtask=self.subtask,
                                            learnings=self._learnings_block(self.selected),
                                            state=self._state() + self._vocabulary())
            feedback = [prompts.REJECTED.format(action=a, feedback=f) for a, f in notes + rejected]
            reply = self._chat("actor", "\n\n".join([*feedback, prompt]),
                               history=self._history(self.config.history, isolated=True))
            proposal, found = read_action(reply)
            self.formats.note("actor", found)
            rationale = field(reply, "Rationale") or ""
            last = attempt == self.config.evaluator_tries - 1
            if not self.rules or COMPLETE.search(proposal) or last:
                return proposal, rationale, last
            verdict = self._chat("rules", prompts.RULE_CHECK.format(
                subtask=self.subtask, action=proposal, rules=listed(self.rules), state=self._state()),
                history=self._history(self.config.history, isolated=True))
            # a verdict without a readable 0 approves, as the code's does
            if numbers(self._read("rules", verdict, "Approved"))[:1] != [0]:
                return proposal, rationale, False
            self.counts["rejected"] += 1
            rejected.append((proposal, field(verdict, "Feedback") or "it breaks a learnt rule"))
        raise AssertionError("unreachable: the last try returns")

    def _subtask_is_done(self) -> bool:
        reply = self._chat("subtask_check", prompts.SUBTASK_CHECK.format(
            subtask=self.subtask, state=self._state()),
            history=self._history(self.config.check_history, isolated=True))
        return numbers(self._read("subtask_check", reply, "Complete"))[:1] == [1]

    def _playable(self, proposal: str, rationale: str, nearest_only: bool) -> tuple[Optional[str], str]:
        """The valid action the proposal means (None, and why, when the chooser finds
        none): the action it names exactly, else the chooser's pick among the nearest
        (`nearest_only`: the nearest, without asking)."""
        if self.step_valid is None:
            self.step_valid = self.tools.valid_actions()
        valid = self.step_valid
        named = self.matcher.exact(proposal, valid)
        if named is not None:
            return named, ""
        nearest = [action for action, _ in self.matcher.ranked(proposal, valid, self.config.choice_top)]
        if not nearest:
            return proposal or self.task.noop_action, ""  # the env answers what it cannot play
        if nearest_only:
            return nearest[0], ""
        choices = "\n".join(f"{i}. {action}" for i, action in enumerate(nearest))
        reply = self._chat("chooser", prompts.ACTION_CHOICE.format(
            action=proposal, rationale=rationale or "none given", choices=choices))
        choice = self._read("chooser", reply, "Choice")
        index = numbers(choice[:4])
        if index and index[0] < len(nearest):
            return nearest[index[0]], ""
        return None, choice.split(".", 1)[-1].strip() or "it cannot be played now"

    # -- prompts

    def _read(self, role: str, reply: str, name: str) -> str:
        """The reply's `name` field ("" when it has none), counted when not as asked."""
        return self.formats.note(role, read_field(reply, name)).value

    def _chat(self, role: str, content: str, history: Sequence[PromptPart] = ()) -> str:
        system = prompts.SYSTEM.format(instructions=self.task.manual().strip())
        # the history's turns are what the context window may drop (lifebench.api.prompt)
        user = Prompt([*history, fixed("\n\n" + content)]) if history else content
        return self.ctx.llm.chat([{"role": "system", "content": system},
                                  {"role": "user", "content": user}],
                                 role=role, params=self.params).text

    def _history(self, n: int, isolated: bool = False) -> list[PromptPart]:
        """The last `n` turns, the latest kept, after the task as first stated (kept). The
        roles the Planner isolates from the task (`isolated`: the Executor and both checks,
        Section 3) get, instead, the first observation without the task's statement
        (`Benchmark.task_statement`) while it is among the last `n`."""
        turns = [prompts.TURN.format(action=a, observation=o) for a, o in self.turns[-n:]]
        if not (isolated and self.config.planner):
            return _joined([f"The task as first stated: {self.first}", *turns], keep_first=True)
        start = [prompts.START.format(observation=self.start_view)] \
            if self.start_view and len(self.turns) < n else []
        return _joined([*start, *turns], keep_first=False)

    def _subtask_history(self) -> list[PromptPart]:
        """The failed subtask's last turns, with the rationale of each action."""
        lines = [f"Reason: {r}\n" + prompts.TURN.format(action=a, observation=o)
                 for r, a, o in self.subtask_turns[-self.config.history:]]
        return _joined(lines, keep_first=False)

    def _vocabulary(self) -> str:
        if self.step_vocabulary is None:
            self.step_vocabulary = world_vocabulary(self.tools)
        return self.step_vocabulary

    def _state(self) -> str:
        if self.step_state is None:
            observation = self.turns[-1][1] if self.turns else (self.first or "")
            state = free_state(self.tools, observation)
            self.step_state = f"\n{state}" if state else ""
        return self.step_state

    def _learnings_block(self, learnings: dict[int, str]) -> str:
        return prompts.LEARNINGS.format(learnings=listed(learnings)) + "\n\n" if learnings else ""

    # -- after the trial

    def end_episode(self, outcome: EpisodeOutcome) -> None:
        key = outcome.task.instance.instance_id
        report_text = report(outcome, self.ctx.benchmark.score_range) + stop_note(self.stopped)
        trace_parts = trace(self.first or "", outcome.transitions)
        summary = self.ctx.llm.chat(
            [{"role": "system", "content": SUMMARY_SYSTEM},
             {"role": "user", "content": summary_prompt(trace_parts, report_text,
                                                        self.memory.last(key, self.config.memory_trials))}],
            role="summary", params=self.summary_params).text.strip()
        self.memory.add(key, Trial(summary, report_text))
        rewarded = [step.action for step in outcome.trajectory[1:] if step.reward and step.reward > 0]
        strategy = self.ctx.llm.chat(
            [{"role": "system", "content": SUMMARY_SYSTEM},
             {"role": "user", "content": filled(
                 prompts.STRATEGY_WRITE, "trace", trace_parts, report=report_text,
                 rewarded="\n".join(f"- {a}" for a in rewarded) or "none")}],
            role="strategy", params=self.strategy_params).text
        self.strategies[key] = strategy.split("STRATEGY", 1)[-1].strip()

    def episode_extra(self) -> dict[str, Any]:
        extra: dict[str, Any] = {"step_planner": self.config.planner,
                                 "step_setting": config_setting(self.config, ("planner",)),
                                 **{"step_" + k: v for k, v in self.counts.items()},
                                 **self.formats.extra()}
        if self.stopped:
            extra["stopped"] = self.stopped
        return extra

    def state(self) -> Any:
        return {"trials": self.memory.state(), "strategies": dict(self.strategies)}

    def load_state(self, state: Any) -> None:
        self.memory.load((state or {}).get("trials"))
        self.strategies = dict((state or {}).get("strategies", {}))


def _joined(lines: list[str], keep_first: bool) -> list[PromptPart]:
    """`lines` joined by blank lines, as parts: every line history but the last (and the
    first, with `keep_first`)."""
    parts = []
    for i, line in enumerate(lines):
        text = line + ("\n\n" if i < len(lines) - 1 else "")
        kept = i == len(lines) - 1 or (keep_first and i == 0)
        parts.append(fixed(text) if kept else history(text))
    return parts
