"""The teacher: a harness service that answers how-to questions from a benchmark's oracle.

Methods that learn from a teacher (How², and any method with `needs.teacher`) ask
`ctx.teacher.ask(question, style)`. The answer is made from the benchmark's plan for the
episode's *current* state (`Benchmark.teacher_plan`): Plancraft's planner on the current
inventory, or the remaining part of a walkthrough / gold path for the others. The styles
are How²'s teachers:

- `executable`: the exact actions, in order;
- `partially-executable`: the same steps with slots replaced by the items they hold;
- `subgoal-partially-executable`: those steps grouped per subgoal (per recipe);
- `non-executable`: an LLM (role `teacher`) explains the plan in general words, given the
  plan with slots written as spatial words and the inventory as item totals.

The episode loop binds the service to each episode's env and to the actions played so far;
outside an episode `ask` is an error. Every call is counted for the episode.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from harness.errors import UserError, unknown_name

TEACHER_STYLES = ("executable", "partially-executable", "subgoal-partially-executable",
                  "non-executable")


@dataclass(frozen=True)
class PlanStep:
    action: str      # exactly as the env accepts it
    described: str   # the same step with slots named by what they hold (items)
    abstract: str    # the same step with positions as spatial words (non-executable input)
    subgoal: int = 0  # index into TeacherPlan.subgoals


@dataclass(frozen=True)
class TeacherPlan:
    """A benchmark's plan from the current state, in the forms the teachers need."""

    steps: tuple[PlanStep, ...]
    subgoals: tuple[str, ...] = ("complete the task",)
    # The state the plan starts from, abstracted (Plancraft: inventory as item totals).
    state: str = ""
    impossible: bool = False  # the task cannot be done: the answer says so
    impossible_action: Optional[str] = None  # the env's way to say so, for executable


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

    def __init__(self, benchmark: Any, llm: Any = None) -> None:
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

    def ask(self, question: str, style: str = "executable") -> str:
        """The teacher's answer to `question` in `style`, for the current state."""
        if style not in TEACHER_STYLES:
            raise unknown_name("teacher", style, TEACHER_STYLES)
        session = self._session()
        session.calls += 1
        plan = self.plan()
        if style == "non-executable":
            return self._explain(question, plan)
        return render_plan(plan, style)

    def _session(self) -> TeacherSession:
        if self.session is None:
            raise RuntimeError("the teacher answers only during an episode")
        return self.session

    def _explain(self, question: str, plan: TeacherPlan) -> str:
        if self.llm is None:
            raise UserError("the non-executable teacher is an LLM: give --model and --base-url")
        steps = "\n".join(f"{i + 1}. {s.abstract}" for i, s in enumerate(plan.steps))
        known = ("The task is impossible from this state: nothing can make the target."
                 if plan.impossible else f"A correct plan:\n{steps}")
        user = (f"Question: {question.strip()}\n\n"
                + (f"Current situation: {plan.state}\n\n" if plan.state else "") + known)
        reply = self.llm.chat([{"role": "system", "content": _NON_EXECUTABLE_SYSTEM},
                               {"role": "user", "content": user}], role="teacher")
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


def remaining_sequence(sequence: Sequence[str], played: Sequence[str]) -> list[str]:
    """What is left of a fixed action sequence (walkthrough, gold path) after the actions
    played so far: the part after the longest prefix of `sequence` that `played` followed,
    in order, allowing other actions in between (looks, failed attempts)."""
    position = 0
    for action in played:
        if position < len(sequence) and action.strip().lower() == sequence[position].strip().lower():
            position += 1
    return list(sequence[position:])
