"""The teacher service: answers how-to questions from a benchmark's oracle (`ctx.teacher`).

Methods that learn from a teacher (How², and any method with `needs.teacher`) ask
`ctx.teacher.ask(question, style)`. The answer is made from the benchmark's plan for the
episode's *current* state (`Benchmark.teacher_plan`): Plancraft's planner on the current
inventory, or the remaining part of a walkthrough / gold path for the others, in one of
How²'s styles (`lifebench.api.teaching`). The non-executable style asks an LLM (role
`teacher`) to explain the plan in general words, given the plan with slots written as
spatial words and the inventory as item totals.

The episode loop binds the service to each episode's env and to the actions played so far;
outside an episode `ask` is an error. Every call is counted for the episode.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from lifebench.api.errors import UserError, unknown_name
from lifebench.api.llm import ChatModel, RoleParams
from lifebench.api.protocols import Benchmark
from lifebench.api.teaching import TEACHER_STYLES, TeacherPlan


@dataclass
class TeacherSession:
    """What the service knows of the episode in progress."""

    env: Any
    oracle: Any  # made before reset: some envs load their solution with the task
    played: list[str] = field(default_factory=list)
    calls: int = 0


_NON_EXECUTABLE_SYSTEM = """\
You are a patient teacher. A learner asks how to do something in a game. You know one
correct plan for the learner's current situation. Explain it in general terms: what to
obtain or make, from what, and roughly where things go. Do not give exact commands, slot
names or coordinates; the learner must work out the exact actions. Answer in at most 6
short sentences."""


class TeacherService:
    """`ctx.teacher`: answers how-to questions about the current episode."""

    def __init__(self, benchmark: Benchmark, llm: Optional[ChatModel] = None) -> None:
        self.benchmark = benchmark
        self.llm = llm
        self.session: Optional[TeacherSession] = None

    # -- the episode loop's side
    def bind(self, env: Any) -> TeacherSession:
        """Before the env's reset."""
        self.session = TeacherSession(env, self.benchmark.oracle(env))
        return self.session

    def unbind(self) -> None:
        self.session = None

    # -- the method's side
    @property
    def calls(self) -> int:
        """Questions asked in the current episode."""
        return self.session.calls if self.session else 0

    def plan(self) -> TeacherPlan:
        """The benchmark's plan from the current state (not counted as a question)."""
        session = self._session()
        return self.benchmark.teacher_plan(session.env, tuple(session.played), session.oracle)

    def ask(self, question: str, style: str = "executable",
            params: Optional[RoleParams] = None) -> str:
        """The teacher's answer to `question` in `style`, for the current state; `params`
        are the LLM's for the non-executable style."""
        if style not in TEACHER_STYLES:
            raise unknown_name("teacher", style, TEACHER_STYLES)
        session = self._session()
        session.calls += 1
        plan = self.plan()
        if style == "non-executable":
            return self._explain(question, plan, params)
        return render_plan(plan, style)

    def _session(self) -> TeacherSession:
        if self.session is None:
            raise RuntimeError("the teacher answers only during an episode")
        return self.session

    def _explain(self, question: str, plan: TeacherPlan, params: Optional[RoleParams]) -> str:
        if self.llm is None:
            raise UserError("the non-executable teacher is an LLM: give --model and --base-url")
        steps = "\n".join(f"{i + 1}. {s.abstract}" for i, s in enumerate(plan.steps))
        known = ("The task is impossible from this state: nothing can make the target."
                 if plan.impossible else f"A correct plan:\n{steps}")
        user = (f"Question: {question.strip()}\n\n"
                + (f"Current situation: {plan.state}\n\n" if plan.state else "") + known)
        reply = self.llm.chat([{"role": "system", "content": _NON_EXECUTABLE_SYSTEM},
                               {"role": "user", "content": user}], role="teacher",
                              params=params)
        return reply.text.strip()


def render_plan(plan: TeacherPlan, style: str) -> str:
    """A templated teacher's answer (every style but non-executable)."""
    if plan.impossible:
        how = f" (`{plan.impossible_action}`)" if style == "executable" and plan.impossible_action else ""
        return f"This cannot be done from the current state: declare it impossible{how}."
    if not plan.steps:
        return "Nothing is left to do: the goal is already reached."
    if style == "executable":
        return "Do exactly these actions, in order:\n" + "\n".join(
            f"{i + 1}. {s.action}" for i, s in enumerate(plan.steps))
    if style == "partially-executable":
        return "Steps, in order:\n" + "\n".join(
            f"{i + 1}. {s.described}" for i, s in enumerate(plan.steps))
    if style == "subgoal-partially-executable":
        lines = []
        for index, goal in enumerate(plan.subgoals):
            steps = [s.described for s in plan.steps if s.subgoal == index]
            if steps:
                lines.append(f"{len(lines) + 1}. {goal}: " + "; ".join(steps) + ".")
        return "Subgoals, in order:\n" + "\n".join(lines)
    raise unknown_name("templated teacher", style, TEACHER_STYLES[:3])

