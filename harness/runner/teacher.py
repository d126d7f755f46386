"""The teacher service: answers how-to questions from a benchmark's oracle (`ctx.teacher`).

Methods that learn from a teacher (How², and any method with `needs.teacher`) ask
`ctx.teacher.ask(question, style, item=...)`. The answer is made from the benchmark's plan
for the episode's *current* state (`Benchmark.teacher_plan`), for the item the question
asks about: Plancraft's planner on the current inventory for that item, or the remaining
part of a walkthrough / gold path for the others (which plan whole tasks only), in one of
How²'s styles (`lifebench.api.teaching`). What each answer was for is counted per episode
(`answered_for`), for the method's record. The non-executable style asks an LLM (role
`teacher`) to explain the plan in general words, given the plan with slots written as
spatial words and the inventory as item totals; the benchmark gives it its domain's
background and a worked example (`TeacherPlan.mentor`).

The episode loop binds the service to each episode's env and to the actions played so far;
outside an episode `ask` is an error. Every call is counted for the episode.
"""

from __future__ import annotations

from collections import Counter
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
    answered_for: Counter = field(default_factory=Counter)  # PLAN_ABOUT -> answers
    answer_kinds: Counter = field(default_factory=Counter)  # ANSWER_KINDS -> answers


# The non-executable teacher (How², Appendix G, Figure 19), in our words; the domain's
# background, notes and worked example come from the benchmark (`TeacherPlan.mentor`).
_MENTOR_SYSTEM = """\
You are an expert mentor who gives high-level guidance in answer to a user's question.

Answer the question from the agent context and the planner output.
{mentor}
# How to answer
- Use simple language, and split the problem into the steps of the planner output.
- Put the information in a logical order.
- The planner output is always correct.

# Output format
A short, abstract explanation of every required step and what it needs, as one paragraph."""

_MENTOR_USER = """\
# Agent context
{state}

# Planner output
{plan}

# Question
{question}"""


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

    @property
    def answered_for(self) -> dict[str, int]:
        """The current episode's answers, by what each answered for (PLAN_ABOUT)."""
        return dict(self.session.answered_for) if self.session else {}

    @property
    def answer_kinds(self) -> dict[str, int]:
        """The current episode's answers, by kind (ANSWER_KINDS)."""
        return dict(self.session.answer_kinds) if self.session else {}

    def plan(self, item: Optional[str] = None) -> TeacherPlan:
        """The benchmark's plan from the current state, for `item` where the benchmark plans
        items (not counted as a question)."""
        session = self._session()
        return self.benchmark.teacher_plan(session.env, tuple(session.played), session.oracle,
                                           item=item)

    def ask(self, question: str, style: str = "executable",
            params: Optional[RoleParams] = None, item: Optional[str] = None) -> str:
        """The teacher's answer to `question` (about `item`; None: the task) in `style`, for
        the current state; `params` are the LLM's for the non-executable style."""
        if style not in TEACHER_STYLES:
            raise unknown_name("teacher", style, TEACHER_STYLES)
        session = self._session()
        session.calls += 1
        plan = self.plan(item)
        session.answered_for[plan.about] += 1
        session.answer_kinds[answer_kind(plan)] += 1
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
        system = _MENTOR_SYSTEM.format(mentor=f"\n{plan.mentor.strip()}\n" if plan.mentor else "")
        user = _MENTOR_USER.format(state=plan.state or "(not described)",
                                   plan=_planner_output(plan), question=question.strip())
        reply = self.llm.chat([{"role": "system", "content": system},
                               {"role": "user", "content": user}], role="teacher",
                              params=params)
        return reply.text.strip()


def answer_kind(plan: TeacherPlan) -> str:
    """What an answer from `plan` says (one of ANSWER_KINDS)."""
    return "not possible" if plan.impossible else ("plan" if plan.steps else "already there")


def _planner_output(plan: TeacherPlan) -> str:
    """The plan as the non-executable teacher reads it: per subgoal, its steps in abstract
    form (no slot names, quantities kept)."""
    if plan.impossible:
        return f"No plan: it is not possible to {plan.goal} from this state."
    if not plan.steps:
        return f"No steps: nothing is left to do to {plan.goal}; it is already there."
    return _numbered(plan, "abstract")


def _numbered(plan: TeacherPlan, form: str) -> str:
    """Subgoals numbered 1., 2., ... and their steps 1.1., 1.2., ... (How²'s answers)."""
    lines, number = [], 0
    for index, goal in enumerate(plan.subgoals):
        steps = [getattr(s, form) for s in plan.steps if s.subgoal == index]
        if not steps:
            continue
        number += 1
        lines.append(f"{number}. {goal}")
        lines.extend(f"{number}.{k + 1}. {step}" for k, step in enumerate(steps))
    return "\n".join(lines)


def render_plan(plan: TeacherPlan, style: str) -> str:
    """A templated teacher's answer (every style but non-executable), in How²'s forms:
    "To craft X, follow these steps:" and the steps, numbered (per subgoal, nested, for
    the subgoal style)."""
    if plan.impossible and plan.about == "item":  # an item on the way: the task may still be possible
        return f"It is not possible to {plan.goal} from the current state."
    if plan.impossible:
        how = f" (`{plan.impossible_action}`)" if style == "executable" and plan.impossible_action else ""
        return f"It is not possible to {plan.goal} from the current state: declare it impossible{how}."
    if not plan.steps:
        return f"Nothing is left to do to {plan.goal}: the goal is already reached."
    header = f"To {plan.goal}, follow these steps:\n"
    if style == "executable":
        return header + "\n".join(f"{i + 1}. {s.action}" for i, s in enumerate(plan.steps))
    if style == "partially-executable":
        return header + "\n".join(f"{i + 1}. {s.described}" for i, s in enumerate(plan.steps))
    if style == "subgoal-partially-executable":
        return header + _numbered(plan, "described")
    raise unknown_name("templated teacher", style, TEACHER_STYLES[:3])
