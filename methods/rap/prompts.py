"""RAP's prompts: lifebench's own wording (nothing here is copied from the paper's code).
Three roles: the planner (the Reasoner's overall plan), the key writer (the Reasoner's
retrieval key, from the executor's latest thought) and the executor (one thought and one
action per call, as ReAct in lifebench)."""

from __future__ import annotations

# -- the Reasoner: the overall plan of a new task

PLANNER_SYSTEM = """\
You are the planner of an agent that acts in a text environment. Before the agent starts
a task, you write its overall plan: the sub-goals it must reach, in order, in one to three
sentences. Write only the plan, beginning with "To solve the task,".

The environment's manual, for what the agent can do:
{manual}"""

PLAN_EXAMPLES = "Plans that solved similar tasks before:\n\n{examples}"

PLAN_EXAMPLE = "Task: {task}\nPlan: {plan}"

PLAN_REQUEST = ("The new task, as the environment first describes it:\n{observation}\n\n"
                "Write the plan for this task.")

NO_PLAN_EXAMPLES = "(No solved tasks are remembered yet.)"

# -- the Reasoner: a retrieval key from the executor's thought

KEY_SYSTEM = """\
You turn an agent's latest thought into a search key for its memory of solved episodes.
Answer with exactly one line, in one of two forms:
search: <the object or place the agent is trying to find>
action: <the one verb of what the agent is about to do>
Use "search" when the thought is about looking for something that is not yet found, and
"action" when the thing is at hand and the thought says what to do with it."""

KEY_REQUEST = "Task: {task}\nThought: {thought}\n\nThe key:"

# -- the Executor

FORMAT = """\
Solve the task. On every turn, reply with:
Thought: <optional: what you have reached and what to do next; write one when you start a
new sub-goal>
Action: <one action, written exactly as the manual says>
The environment answers each action with a new observation. The examples below come from
solved episodes of similar tasks, cut to the part most like your situation; follow how they
act, but adapt every object and place to your own task."""

EXAMPLES_HEADER = "Parts of solved episodes of similar tasks:"

EXAMPLE = "Example {number}. Task: {task}\nPlan: {plan}\n{steps}"

EXAMPLE_CUT = "(steps {first} to {last} of {total})"

NO_EXAMPLES = "(No solved episodes are remembered yet: act from the manual and the plan.)"

TASK = "Your task, as the environment first described it:\n{observation}\n\nYour plan: {plan}"

EARLIER = "({count} earlier steps are not shown.)"

NO_ACTION_FEEDBACK = ("Your reply had no 'Action:' line. Reply with an optional 'Thought: ...' "
                      "line and then 'Action: ...'.")
