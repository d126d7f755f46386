"""The teacher's contract: plans a benchmark makes, and the questions a method asks.

A benchmark turns its oracle into a `TeacherPlan` from the episode's current state
(`Benchmark.teacher_plan`), for the item a question asks about where the benchmark has
item-level plans (Plancraft's recipes: How²'s answer r = T(o_t, q) answers the question q
about `recipe_name`), else for the episode's task; the plan says which (`about`). The
harness's teacher service (`ctx.teacher`, a `Teacher`) answers a method's how-to questions
from it in one of How²'s styles:

- `executable`: the exact actions, in order;
- `partially-executable`: the same steps with slots replaced by the items they hold;
- `subgoal-partially-executable`: those steps grouped per subgoal (per recipe);
- `non-executable`: an LLM (role `teacher`) explains the plan in general words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Protocol, Sequence

from lifebench.api.llm import RoleParams

TEACHER_STYLES = ("executable", "partially-executable", "subgoal-partially-executable",
                  "non-executable")
# What a plan answers for (`TeacherPlan.about`): the item asked about (not the task's own
# goal); the episode's task (no item asked, the item is the task's goal, or the benchmark
# plans only whole tasks); the task because the item asked is not one the benchmark knows.
PLAN_ABOUT = ("item", "task", "task: unknown item")
# What a teacher's answer says: the steps of a plan; that nothing is left to do (what was
# asked about is already there); that it cannot be done from here.
ANSWER_KINDS = ("plan", "already there", "not possible")


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
    subgoals: tuple[str, ...] = ("Complete the task",)
    # What the plan achieves, for the answer's first line: "To {goal}, follow these steps:".
    goal: str = "complete the task"
    # The state the plan starts from, abstracted (Plancraft: inventory as item totals).
    state: str = ""
    impossible: bool = False  # the task cannot be done: the answer says so
    impossible_action: Optional[str] = None  # the env's way to say so, for executable
    # What the non-executable teacher (an LLM mentor) is told of the domain: background,
    # usage notes, how to describe arrangements, a worked example. Empty: a generic mentor.
    mentor: str = ""
    about: str = "task"  # one of PLAN_ABOUT

    def __post_init__(self) -> None:
        if self.about not in PLAN_ABOUT:
            raise ValueError(f"a teacher plan is about one of {', '.join(PLAN_ABOUT)}, "
                             f"not {self.about!r}")


class Teacher(Protocol):
    """`ctx.teacher`: answers how-to questions about the episode in progress."""

    @property
    def calls(self) -> int:
        """Questions asked in the current episode."""
        ...

    @property
    def answered_for(self) -> dict[str, int]:
        """The current episode's answers, counted by what each answered for (PLAN_ABOUT)."""
        ...

    @property
    def answer_kinds(self) -> dict[str, int]:
        """The current episode's answers, counted by kind (ANSWER_KINDS): a plan, the goal
        already reached (nothing left to do), or not possible."""
        ...

    def plan(self, item: Optional[str] = None) -> TeacherPlan:
        """The benchmark's plan from the current state, for `item` where the benchmark plans
        items (not counted as a question)."""
        ...

    def ask(self, question: str, style: str = "executable",
            params: Optional[RoleParams] = None, item: Optional[str] = None) -> str:
        """The answer in `style` to `question`, which asks about `item` (None: the task);
        `params` are the LLM's for the non-executable style."""
        ...


def remaining_sequence(sequence: Sequence[str], played: Sequence[str]) -> list[str]:
    """What is left of a fixed action sequence (walkthrough, gold path) after the actions
    played so far: the part after the longest prefix of `sequence` that `played` followed,
    in order, allowing other actions in between (looks, failed attempts)."""
    position = 0
    for action in played:
        if position < len(sequence) and action.strip().lower() == sequence[position].strip().lower():
            position += 1
    return list(sequence[position:])
