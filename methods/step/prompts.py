"""STEP's prompts, in lifebench's own words. What each carries follows the STEP paper
(Section 3, Algorithm 1) and its public code (minhtuong201/step, `model_utils.py`): the
Planner's task, strategy, learnings, done subtasks, state and recent turns, with its
learning ids, rationale and subtask; the refining Planner's failed subtask and attempts;
the Executor's subtask and selected learnings only; the Evaluator's rule check, subtask
check and action choice; the strategy writer's trace and report."""

SYSTEM = """\
You are an agent acting in a text world to complete a task, one action per turn; the
world answers each action with what happened.

How to act in this world:
{instructions}"""

TURN = "You did: {action}\nThe world answered: {observation}"

START = "What the world showed at the start: {observation}"

LEARNINGS = """\
Learnings from earlier attempts at this task. They state preconditions ("X SHOULD BE
NECESSARY to Y", "X MAY BE NECESSARY to Y") and mistakes ("X DOES NOT CONTRIBUTE to Y",
"X MAY NOT CONTRIBUTE to Y"). They are not ordered: follow the task's order, not theirs.
{learnings}"""

STRATEGY = """\
A strategy written after your last attempt: the subtasks that attempt went through, in
order. Use it as a guide from where you are now and from the subtasks already done; once
you are past its end, decide for yourself.
{strategy}"""

PLAN = """\
Your task: {task}

{strategy}{learnings}{done}{state}
Break the task into small subtasks and give the next one: one thing to achieve now (find
something, go somewhere, use something), small enough to be done in a few actions. The
system will tell you whether it can be achieved.
- If the task asks you to focus on something, the subtask says "focus on" that thing;
  focus only as many times as the task asks, and only on what it names: a wrong focus
  ends the attempt.
- If what is needed is time for something to happen, the subtask is to wait.
- Look through the learnings and pick those that apply to the last observation.
- Judge from the world's answers whether each finished subtask really helped.
Answer in exactly this form:
Learnings used: <the numbers of the learnings that apply, or none>
Rationale: <what the finished subtasks achieved, and why the next subtask can be done now
and helps the task>
Subtask: <the next subtask, in a few words>
When the task is complete, write "Subtask: TASK COMPLETE"."""

DONE_SUBTASKS = """\
Subtasks already done, in order (the next one follows them and repeats none):
{subtasks}

"""

REFINE = """\
Your task: {task}

The subtask "{subtask}" was chosen because: {rationale}
Despite the attempts below it could not be achieved.
{state}
1. Say why the subtask cannot be achieved now.
2. Give another subtask that moves the task on, or a smaller first part of this one,
   using the learnings that apply.
{learnings}Answer in exactly this form:
Failure: <why the subtask cannot be achieved>
Rationale: <why the new subtask, citing the numbers of the learnings used>
Subtask: <the new subtask, in a few words>"""

EXECUTE = """\
Your current subtask: {subtask}

{learnings}{state}
Choose the next action for the subtask. Use only the learnings that apply to the last
observation, or reason from the observation itself. Answer in exactly this form:
Learnings used: <the numbers of the learnings you used, or none>
Rationale: <why this action, now>
Action: <one single action, written as the world expects it>
- Focus only when the subtask says so, and only on what it names: a wrong focus ends
  the attempt.
- If the world asks which of several things you mean, answer with its number.
- When something needs time to happen, the action may be to wait.
- When the subtask is done, write "Action: SUBTASK COMPLETE"."""

REJECTED = """\
The action "{action}" was not approved: {feedback}
Choose another action for the subtask, in the same form."""

RULE_CHECK = """\
An agent working on the subtask "{subtask}" proposes the action "{action}".
Rules learnt from earlier attempts:
{rules}
{state}
Does the action break one of the rules? Count only a rule that is about this action
itself: a rule against focusing on X is broken only by focusing on X, not by anything else
done with X. Answer in exactly this form:
Approved: <1 if the action breaks no rule, 0 if it breaks one>
Feedback: <if 0, what the action breaks and what to do instead, without the rule's number>"""

SUBTASK_CHECK = """\
An agent was given the subtask "{subtask}". Its last actions and what the world
answered are above.
{state}
Judging only by the world's answers, is the subtask complete? Answer in exactly this form:
Rationale: <what the answers show>
Complete: <1 if complete, 0 if not>"""

ACTION_CHOICE = """\
An agent wants to play the action "{action}", for this reason: {rationale}
Its words need not match the world's: choose the action below that means the same
(numbered from 0). The list may lack it; the reason is sound even when the wording is odd.
{choices}
Answer in exactly this form:
Choice: <the number of the action that means the same>
or, when none does:
Choice: none. <why the action cannot be played now: a step it needs comes first, it is
already done and only waiting helps, or it is not needed>"""

STRATEGY_WRITE = """\
Below is an agent's attempt at a task: every action it took with the world's answer, and
a report of how the attempt ended.

Not every action helped: the actions that raised the score did, and of the others keep
only those they needed. Write a strategy that keeps what helped: a numbered list of
subtasks in the order they should be done, each covering a run of the attempt's useful
actions, each with a short reason. It should save the next attempt from trying subtasks
that lead nowhere. Answer with the list only, after the line
STRATEGY

TRACE
{trace}

ACTIONS THAT RAISED THE SCORE
{rewarded}

REPORT
{report}"""
