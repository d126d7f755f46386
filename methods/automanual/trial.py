"""One task played by the Planner's code: the bridge between code that calls the agent and
a loop that plays one action at a time.

`PlanTrial.advance(observation)` is called with each observation, the first one included,
and returns the next action, as `Method.act` does: when a plan is waiting for the answer to
its last action, the observation goes back to it and the plan runs on to its next action;
when a plan ends (its last line, an error, a failed assert) the Planner is shown what it
did and writes the next plan, until `max_attempts` plans have run (then `TrialOver`).
The sandbox process blocks on every action, so the harness's loop (testing) and the
building loop (`building.py`, on a real env of a support instance) drive the very same
code; every step is theirs. At most `max_actions` actions are played in all: the plan
that asks for one more is stopped and the trial is over.

What a plan puts into prompts, trajectories and records is bounded (`bounds.py`): an
action's call and command at 2,000 characters each, everything one run shows the Planner
at 16,000.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

from lifebench.api import ChatModel, RoleParams, mark_history

from lifebench.methods.automanual import prompts
from lifebench.methods.automanual.api import ActionApi, ActionLog, AgentState
from lifebench.methods.automanual.bounds import MAX_ACTION_CHARS, MAX_RUN_CHARS, cut, shorten
from lifebench.methods.automanual.child import function_sources
from lifebench.methods.automanual.sandbox import (ActionRequest, CodeProcess, RunEnded,
                                                  SandboxLimits)

OBSERVATION_CHARS = 800  # of one observation in the feedback
_CUT_MARKER_CHARS = 48  # what `shorten` adds where it cuts


class TrialOver(Exception):
    """The trial can play no more: its attempts or its actions are used up."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def split_reply(reply: str) -> tuple[str, str]:
    """(the text before the first python block, all python blocks joined)."""
    blocks = re.findall(r"```(?:python|py)\s*\n(.*?)```", reply, re.S | re.I)
    if not blocks:
        blocks = re.findall(r"```\s*\n(.*?)```", reply, re.S)
    first = re.search(r"```", reply)
    thought = reply[: first.start()].strip() if first else reply.strip()
    return thought, "\n\n".join(b.rstrip() for b in blocks)


@dataclass
class Attempt:
    reply: str
    code: str
    feedback: str = ""
    error: Optional[str] = None
    actions: int = 0


@dataclass
class PlanTrial:
    llm: ChatModel
    role: str
    params: RoleParams
    system: str
    rules: str           # what the Planner is shown of the rules (or the manual)
    skill: str           # the retrieved skill block ("" for none)
    api: ActionApi
    max_attempts: int
    max_actions: int
    limits: SandboxLimits
    helpers: list[str] = field(default_factory=list)  # from helper rules and the skill

    def __post_init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.attempts: list[Attempt] = []
        self.log: list[ActionLog] = []
        self.reported = 0          # log entries already shown to the Planner
        self.pending: Optional[ActionLog] = None
        self.state = AgentState(tracked=self.api.tracks_state)
        self.process: Optional[CodeProcess] = None
        self.first: Optional[str] = None
        self.over: Optional[str] = None
        self.refused = 0           # plans the checker refused
        self.errors = 0            # plans that ended with an error
        self.helper_errors: list[str] = []
        self.misbehaved: list[str] = []  # how plans' processes broke the sandbox's protocol

    # -- the loop's side
    def advance(self, observation: str) -> str:
        if self.over is not None:
            raise TrialOver(self.over)
        event: Optional[RunEnded | ActionRequest] = None
        if self.first is None:
            self.first = observation
            self.process = CodeProcess(self.api.action_names, {"observation": observation},
                                       list(self.api.helpers) + self.helpers, self.limits)
            event = self._attempt(None)
        elif self.pending is not None:
            self.pending.observation = observation
            self.log.append(self.pending)
            self.pending = None
            assert self.process is not None
            self.process.answer(observation, self.state.after(self.log[-1].command, observation))
        while True:
            assert self.process is not None
            if event is None:
                event = self.process.next_event()
            if isinstance(event, ActionRequest):
                request, event = event, None
                if len(self.log) >= self.max_actions:
                    reason = prompts.STEP_CAP.format(max_actions=self.max_actions)
                    self._record_end(self.process.stop(reason))
                    self._end(reason)
                    raise TrialOver(reason)
                try:
                    command = cut(self.api.command(request.name, request.args), MAX_ACTION_CHARS)
                except ValueError as exc:
                    self.process.refuse(str(exc))
                    continue
                self.pending = ActionLog(cut(request.call, MAX_ACTION_CHARS), command,
                                         attempt=len(self.attempts))
                self.attempts[-1].actions += 1
                return command
            ended, event = event, None
            self._record_end(ended)
            if len(self.attempts) >= self.max_attempts:
                self.attempts[-1].feedback += "\n" + prompts.FEEDBACK_LAST
                reason = f"its {self.max_attempts} code attempts ended without finishing the task"
                self._end(reason)
                raise TrialOver(reason)
            event = self._attempt(self.attempts[-1].feedback)

    def finish(self, observation: str, reason: str) -> None:
        """The task is over (the env said so): the pending action's answer is logged and a
        running plan is stopped."""
        if self.pending is not None:
            self.pending.observation = observation
            self.log.append(self.pending)
            self.pending = None
        if self.process is not None and self.process.running:
            self._record_end(self.process.stop(reason))
        self._end(reason)

    def close(self) -> None:
        if self.process is not None:
            self.process.close()

    def _end(self, reason: str) -> None:
        self.over = reason
        self.close()

    # -- the Planner
    def _attempt(self, feedback: Optional[str]) -> Optional[RunEnded]:
        """Ask the Planner for the next plan and start it; its end when it cannot run."""
        if feedback is None:
            first = prompts.PLANNER_FIRST.format(rules=self.rules, skill=self.skill,
                                                 observation=self.first)
            self.messages = [{"role": "system", "content": self.system},
                             {"role": "user", "content": first}]
        else:
            self.messages.append({"role": "user", "content": feedback})
        reply = self.llm.chat(self._conversation(), role=self.role, params=self.params).text
        self.messages.append({"role": "assistant", "content": reply})
        _, code = split_reply(reply)
        self.attempts.append(Attempt(reply, code))
        assert self.process is not None
        if not code.strip():
            return RunEnded(error=prompts.FEEDBACK_NO_CODE)
        started = self.process.run(code)
        if self.process.helper_errors and not self.helper_errors:
            self.helper_errors = list(self.process.helper_errors)
        return started

    def _record_end(self, ended: RunEnded) -> None:
        attempt = self.attempts[-1]
        attempt.error = ended.error
        if ended.misbehaved:
            self.misbehaved.append(ended.misbehaved)
        if ended.killed and self.process is not None:
            # a fresh process comes next: the functions of the plans so far are defined again
            self.process.helpers = helper_sources(*(a.code for a in self.attempts),
                                                  base=list(self.api.helpers) + self.helpers)
        if ended.error and ended.error.startswith("Refused:"):
            self.refused += 1
        elif ended.error and not ended.stopped:
            self.errors += 1
        attempt.feedback = self._feedback(ended)

    def _feedback(self, ended: RunEnded) -> str:
        """What the run did, within MAX_RUN_CHARS: the actions' lines give way (their
        middle cut) to the error, the prints and the end, each bounded on its own."""
        header = prompts.FEEDBACK_HEADER.format(attempt=len(self.attempts))
        new = self.log[self.reported:]
        self.reported = len(self.log)
        lines = []
        for number, entry in enumerate(new, start=len(self.log) - len(new) + 1):
            observation = " ".join(entry.observation.split())
            if len(observation) > OBSERVATION_CHARS:
                observation = observation[:OBSERVATION_CHARS] + " ..."
            lines.append(f"obs_{number}: Act: {entry.call} -> {entry.command!r}. Obs: {observation}")
        tail = []
        if ended.error and not ended.stopped:
            tail.append(prompts.FEEDBACK_ERROR.format(error=ended.error))
        if ended.printed.strip():
            tail.append(prompts.FEEDBACK_PRINTED.format(printed=ended.printed.rstrip()))
        if self.state.tracked:
            tail.append(self.state.describe())
        if ended.stopped:
            tail.append(f"The code was stopped: {ended.stopped}.")
        else:
            tail.append(prompts.FEEDBACK_NOT_DONE)
        room = MAX_RUN_CHARS - len(header) - sum(len(t) + 1 for t in tail) - 1 - _CUT_MARKER_CHARS
        actions = shorten("\n".join(lines), max(room, 1_000)) if lines else prompts.FEEDBACK_NO_ACTIONS
        return "\n".join([header, actions, *tail])

    def _conversation(self) -> list[dict[str, Any]]:
        """The Planner's conversation as sent: the rules, the skill and the task stay, and
        so does the latest plan with its feedback; earlier plans and their feedback are
        history the context window may drop (lifebench.api.prompt)."""
        return self.messages[:2] + mark_history(self.messages[2:], keep_last=2)

    # -- what the building phase reads
    def ask(self, request: str, role: str) -> str:
        """One more turn of the Planner's conversation (the conclusion of a built task)."""
        self.messages.append({"role": "user", "content": request})
        reply = self.llm.chat(self._conversation(), role=role, params=self.params).text
        self.messages.append({"role": "assistant", "content": reply})
        return reply

    def transcript(self) -> str:
        """The task as the Builder reads it: each plan, and what it did."""
        parts = [f"Task, first observation:\n{self.first}"]
        for number, attempt in enumerate(self.attempts, start=1):
            parts.append(f"--- Planner reply {number}:\n{attempt.reply.strip()}")
            if attempt.feedback:
                parts.append(f"--- Result of code {number}:\n{attempt.feedback.strip()}")
        return "\n\n".join(parts)

    @property
    def actions(self) -> int:
        return len(self.log) + (1 if self.pending is not None else 0)


def helper_sources(*codes: str, base: Optional[list[str]] = None) -> list[str]:
    """`base` and the function definitions of `codes` (rule examples, skills, earlier
    plans; trivial ones skipped)."""
    out: list[str] = list(base or [])
    for code in codes:
        for source in function_sources(code):
            if source not in out:
                out.append(source)
    return out
