"""AutoManual's prompts, in lifebench's own words (nothing of the authors' prompt files is
copied; what each prompt asks for follows the structure their code asks for, see README).

Roles: the Planner writes code (`build_planner` while building, `planner` when tested), the
Builder turns an epoch into rule operations (`builder`), the consolidator merges rules when
there are too many (`consolidator`), the Formulator writes the manual (`formulator`).
"""

from __future__ import annotations

RULE_TYPES = ("Special Phenomena/Mechanism", "Success Process", "Useful Helper Method",
              "Corrected Error", "Unresolved Error")

# -- the Planner

PLANNER_SYSTEM = """\
You act in an environment by writing Python code that controls an agent.

{manual}

The agent (the variable `agent` in your code) has these methods; each one is one action in \
the environment and returns the environment's answer as a string:
{api}

Rules for your code:
- Call only the agent's methods, the helper functions already defined for you ({helpers}), \
functions you define yourself, and plain Python (strings, lists, dicts, loops, `re`). There \
are no imports, no files and no attributes that start with an underscore; `print` output \
comes back to you.
- The whole task allows at most {max_actions} actions, over all your code. Be economical.
- When a rule comes with example code, copy and adapt it rather than starting over.
- Write reusable helper functions for work you repeat.
- Cut the code into sections, each headed by a comment `# [Step N] <what it achieves>` and \
ending with an `assert` that checks the section reached its goal, with a message. A failed \
check stops the code early and tells you where it went wrong.
- The code runs until it ends, fails, or the task is finished. Then you see every action it \
took with the answer, and any error. Functions and variables you defined stay defined for \
your next code.
- You have {attempts} code replies for this task.

Reply in this order:
1. Understanding: the task and what the observations say.
2. Rules: the ids of the rules that apply (for example rule_2), or "none".
3. Plan: the steps, in words.
4. Code: exactly one ```python block; write nothing after it.
When you are shown what your last code did, begin with an analysis of anything unexpected \
and of each error and its cause, then give 2-4 again, continuing from the current situation.

Here is a reply to another task, to show the form:
{demonstration}"""

PLANNER_FIRST = """\
{rules}

{skill}Your task begins. The first observation:
{observation}"""

NO_RULES = "There are no rules yet."
RULES_HEADER = "Rules found so far:"
MANUAL_HEADER = "The manual of rules:"

SKILL_CODE = """\
Code that solved an earlier task of the same kind ({task}). This environment may differ \
(objects can be in other places), so reuse its structure, not its assumptions:
```python
{code}
```

"""

SKILL_FAILURE = """\
An earlier task of the same kind ({task}) failed. What was learned from it:
{reflection}
Take it into account together with the rules.

"""

FEEDBACK_HEADER = "What your code did (attempt {attempt}):"
FEEDBACK_NO_ACTIONS = "It took no action."
FEEDBACK_ERROR = "Execution error: {error}"
FEEDBACK_PRINTED = "Printed:\n{printed}"
FEEDBACK_NOT_DONE = ("The code has ended but the task is not finished. Write code that goes on "
                     "from the current situation.")
FEEDBACK_NO_CODE = "the reply has no ```python code block"
FEEDBACK_LAST = "That was your last code reply for this task."
STEP_CAP = "the task's {max_actions} actions are used up"

INDIRECT_SUMMARY = """\
The task is finished: it took {attempts} code replies. List the mistakes you made on the \
way and what fixed them. Then write one clean piece of code that would finish this kind of \
task from the start in a single reply, using what you learned. Do not assume where objects \
are: search for them. Give the code as one ```python block at the end."""

FAILURE_REFLECTION = """\
The task failed: {reason}. Reflect on it, without code: why did it fail? Which parts of \
your code went against the rules, or rested on an assumption that turned out wrong? Did \
you follow the rules you cited? Say what to do differently next time, in a few sentences."""

# -- the Builder

BUILDER_SYSTEM = """\
You maintain a rule system for an agent that solves tasks in an environment by writing \
code. Each rule helps the agent's Planner on later tasks. A rule has:
- rule: its statement, starting with when it applies (its scope or trigger);
- type: one of {types};
- example: code or text that shows it (code keeps its comments);
- a validation record, kept for you by the system.

Rule types:
- Special Phenomena/Mechanism: how the environment behaves where that is surprising, or \
something the agent had only assumed and then saw. Record it cautiously, without guessing \
causes, and say when it still needs checking.
- Success Process: the steps that finished a kind of task, with example code kept intact.
- Useful Helper Method: a function that worked, with its code kept intact, to be reused.
- Corrected Error: a mistake that happened and the fix that was shown to work.
- Unresolved Error: a mistake whose fix is not known yet: the situation, the action and \
the result, without speculation.

Guidance:
- Keep at most {max_rules} rules; make each one targeted, and say it needs more \
verification when it rests on one task only.
- When you update a rule, keep its details and add to it rather than rewriting it, above \
all for Success Process and Helper rules.
- Write only what this epoch's trajectory shows.

The current rules:
{rules}

Answer with your analysis, then a final ```json block holding a list of operations, each \
one of:
{{"op": "write_rule", "rule": "...", "type": "...", "example": "..."}}
{{"op": "update_rule", "rule_id": "rule_N", "rule": "...", "type": "...", "example": "..."}}
{{"op": "delete_rule", "rule_id": "rule_N"}}
An update may leave out fields it keeps. An empty list [] changes nothing."""

BUILDER_DIRECT = """\
Epoch {epoch}: the Planner finished this task with its first code.

{trajectory}

Analyse it under these headings:
- Potential rules: (1) the Success Process of this kind of task, with all its [Step]s; \
(2) Useful Helper Methods it wrote, code unchanged.
- Check difference: how they differ from the current rules.
- Check existing rules: which current rules they confirm or should extend.
Then write new rules or update existing ones of those types."""

BUILDER_INDIRECT = """\
Epoch {epoch}: the Planner finished this task, but only after {attempts} code replies.

{trajectory}

First decide why the earlier code failed:
- Case 1, imperfect rules: the rules did not describe what happened, or had no Success \
Process for this kind of task.
- Case 2, imperfect agent: the rules covered it, but the Planner did not follow them.
Say which case it is, then analyse:
- Potential rules: in case 1, the Success Process and Useful Helper Methods of the code \
that worked, and a Corrected Error rule with the fix that was shown to work; in case 2, \
which existing rules need to stress what was missed (in bold, or as comments in their \
example code).
- Check difference and check existing rules, as for a success.
Then give the operations."""

BUILDER_FAILURE = """\
Epoch {epoch}: the Planner failed this task.

{trajectory}

First walk through the trajectory: which steps worked, and where the decisive error \
happened. Then decide:
- Case 1, imperfect rules: the rules did not describe what happened. Write an Unresolved \
Error rule with the situation, the action and the result, without guessing the cause. Do \
not write Success Process or Useful Helper Method rules from a failure.
- Case 2, imperfect agent: the rules covered it, but the Planner did not follow them; \
update those rules to stress what was missed.
Say which case it is, check the existing rules, then give the operations."""

BUILDER_RETRY = ("Your answer could not be used: {error}. Give the operations again as a "
                 "final ```json block holding a list.")

# -- consolidation

CONSOLIDATOR_SYSTEM = """\
You keep an agent's rule system short. It holds {count} rules and may hold at most \
{max_rules}. Pick one or two rules: merge two that cover the same topic (update one with the \
content of both, delete the other), or delete one that is redundant or wrong.
- Keep the details of Success Process and Helper rules, code included.
- Never merge two Success Process rules, nor two Useful Helper Method rules, with each other.
- An error rule may be merged into the Success Process that resolves it.

The rules:
{rules}

Epochs the rules were learned from (their validation records cite them):
{epochs}

If you need to read one or two of these epochs' trajectories first, answer only with a \
```json block [{{"op": "get_interactions", "epochs": ["epoch_3", "epoch_5"]}}]. Otherwise end \
with a ```json block of operations:
{{"op": "update_rule", "rule_id": "rule_N", "rule": "...", "type": "...", "example": "..."}}
{{"op": "delete_rule", "rule_id": "rule_N"}}"""

CONSOLIDATOR_INTERACTIONS = """\
The trajectories you asked for:
{interactions}

Now give the operations as a final ```json block."""

# -- the Formulator

FORMULATOR_SYSTEM = """\
You turn an agent's rules into a manual that a Planner reads before every task of this \
environment: {benchmark}.

The rules:
{rules}

Answer in three parts:
1. General understanding: what the rules say about the environment and its tasks, briefly.
2. Categories: group the rules by when they are used (their topic or the kind of task), \
not by their type. Every rule belongs to exactly one category; order the categories from \
basic to advanced.
3. The manual, in one ```markdown block: a short overview paragraph, then for each \
category a heading `## <category name>`, one or two sentences introducing it, and its \
rules as a list with one line per rule holding only its id in bold, like `- **rule_3**`. \
The full text of each rule is put in for you afterwards."""

# -- the worked examples (lifebench's own, not the authors')

ALFWORLD_DEMONSTRATION = """\
Task: put a cellphone on the bed. (The room has a desk 1, a drawer 1, a drawer 2, a \
sidetable 1 and a bed 1.)

1. Understanding: I need any cellphone, taken to the bed. Only the furniture is listed, so \
the cellphone is inside or on one of them.
2. Rules: rule_1, rule_2.
3. Plan: search the likely places with find_object, take the first cellphone, go to the bed \
and put it there.
4. Code:
```python
# [Step 1] find a cellphone
places = ["desk 1", "sidetable 1", "drawer 1", "drawer 2"]
ids, where = find_object(agent, places, "cellphone")
assert ids, "no cellphone found in " + str(places)

# [Step 2] take it
observation = agent.take_from(ids[0], where)
assert agent.holding == ids[0], "could not take " + ids[0] + ": " + observation

# [Step 3] put it on the bed
agent.go_to("bed 1")
observation = agent.put_in_or_on(ids[0], "bed 1")
assert agent.holding is None, "could not put it on the bed: " + observation
```"""

GENERIC_DEMONSTRATION = """\
Task (a made-up game): get the key out of the box and unlock the door.

1. Understanding: the key is in a box; the door is locked.
2. Rules: none.
3. Plan: open the box, take the key, unlock the door, checking each answer.
4. Code:
```python
def do(command, expected):
    answer = agent.act(command)
    assert expected in answer.lower(), command + " gave: " + answer
    return answer

# [Step 1] get the key
do("open box", "open")
do("take key from box", "take")

# [Step 2] unlock the door
do("unlock door with key", "unlock")
```"""

ALFWORLD_HELPERS = (
    '''def get_object_with_id(observation, name):
    """The ids of objects called `name` in an observation, e.g. ["mug 1", "mug 3"]."""
    return re.findall(r"\\b" + re.escape(name) + r" \\d+\\b", observation)''',
    '''def find_object(agent, receptacles, name):
    """Visit `receptacles` in order, opening closed ones, until one holds an object called
    `name`; returns (its ids there, that receptacle), or ([], None)."""
    for receptacle in receptacles:
        observation = agent.go_to(receptacle)
        if "closed" in observation:
            observation = agent.open(receptacle)
        ids = get_object_with_id(observation, name)
        if ids:
            return ids, receptacle
    return [], None''',
)

ALFWORLD_SEED_RULES = (
    {"type": "Special Phenomena/Mechanism",
     "rule": "At the start of every task only the receptacles and furniture are listed: what "
             "lies in or on a receptacle is shown only when the agent goes to it, and, when it "
             "is closed, opens it.",
     "example": "observation = agent.go_to('drawer 1')  # 'The drawer 1 is closed.'\n"
                "observation = agent.open('drawer 1')   # now lists what is inside"},
    {"type": "Useful Helper Method",
     "rule": "When an object must be found, call find_object(agent, receptacles, name) (already "
             "defined): it visits the receptacles in the order given, opens closed ones, and "
             "returns the object ids it saw and the receptacle where.",
     "example": "ids, where = find_object(agent, ['countertop 1', 'cabinet 1'], 'apple')\n"
                "assert ids, 'no apple found'"},
    {"type": "Success Process",
     "rule": "For a task of putting an object in or on a receptacle: find the object, take it, "
             "go to the target receptacle (opening it when closed) and put the object there.",
     "example": "# [Step 1] find and take the object\n"
                "ids, where = find_object(agent, places, 'apple')\n"
                "assert ids, 'no apple found'\n"
                "agent.take_from(ids[0], where)\n"
                "assert agent.holding == ids[0], 'could not take the apple'\n"
                "# [Step 2] put it in the target\n"
                "observation = agent.go_to('fridge 1')\n"
                "if 'closed' in observation:\n"
                "    agent.open('fridge 1')\n"
                "agent.put_in_or_on(ids[0], 'fridge 1')\n"
                "assert agent.holding is None, 'could not put it in the fridge'"},
)
