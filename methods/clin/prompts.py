"""CLIN's prompts, in lifebench's own words. What each carries follows CLIN's public code
(allenai/clin, `model_utils.py`): the executor's task, learnings, recent turns, current
state and action syntax, with its reply format; the summariser's trace, evaluation report,
previous learnings and the four causal forms a learning must take."""

EXECUTOR_SYSTEM = """\
You are an agent acting in a text world to complete a task. On every turn you choose one
action; the world answers with what happened.

How to act in this world:
{instructions}"""

LEARNINGS = """\
Learnings from your earlier attempts at this same task, in this same world. They state
preconditions ("X SHOULD BE NECESSARY to Y", "X MAY BE NECESSARY to Y") and mistakes ("X
DOES NOT CONTRIBUTE to Y", "X MAY NOT CONTRIBUTE to Y"):
{learnings}"""

TURN = "Observation: {observation}"

# a recent turn after the model's reply: the action played (the matched one) and its answer
PLAYED = "Selected action: {action}\n" + TURN

OMITTED = "({n} earlier turns are not shown.)"

NEXT = """\
{state}Choose the next action. First look through the learnings and decide which of them
apply to the last observation; reason only from those (or from the observation itself
when none applies). Answer in exactly this form:
Learnings used: <the numbers of the learnings you used, or none>
Rationale: <why this action, now>
Action: <one single action, written as the world expects it>
When something needs time to happen, the action may be to wait. Write only one action.{complete}"""

COMPLETE = """
When you judge the task complete, write "Action: TASK COMPLETE"."""

STATE = """\
Where you are now:
{look}

"""

INVENTORY = """\
What you carry:
{inventory}

"""

VOCABULARY = """\
What an action may name here:
{objects}

The forms an action may take (OBJ is one of the names above):
{forms}

"""

NO_MATCH = """\
The action "{action}" does not match any action possible here. Write it again, phrased
differently, or choose another action."""

NO_ACTION = """\
Your answer has no "Action:" line. Answer again in the form asked for."""

SUMMARY_SYSTEM = "You are an expert assistant who turns an agent's attempts into learnings."

SUMMARY = """\
Below is the trace of an attempt by an agent at a task: every action it took, each with
the world's answer, and an evaluation report of how the attempt ended.{previous_note}

Write a numbered list of learnings that will help the agent complete the SAME task in the
SAME world next time. Every learning must take one of these forms:
  X SHOULD BE NECESSARY to Y.
  X MAY BE NECESSARY to Y.
  X MAY CONTRIBUTE to Y.
  X DOES NOT CONTRIBUTE to Y.
where X is an action or a state and Y a step towards the task. Write only the list.
{previous}
CURRENT TRACE
{trace}

EVALUATION REPORT
{report}"""

PREVIOUS_NOTE = """ Learnings written after earlier attempts at the same task in the same
world follow too, each with the report of its attempt."""

PREVIOUS = """
PREVIOUS LEARNINGS
{entries}
"""

PREVIOUS_ENTRY = """\
ATTEMPT {number}
LEARNINGS:
{learnings}
REPORT: {report}
"""
