"""How²'s prompts: lifebench's own wording, one per role. The benchmark's manual comes from
the adapter; the tool list from `tools.py`."""

from __future__ import annotations

ACTOR = """\
You act in the environment by calling tools, one tool call per reply.
Environment actions: {env_tools}. Each one changes the environment (or not, if it is
invalid) and costs one step of your budget.
Other tools cost no step: `think` lets you reason before acting{memory_note}. After {max_non_env}
of these in a row you lose a step doing nothing, so do not overuse them."""

MEMORY_NOTE = (", and `read_memory` looks up what you have learnt about a {query_kind}; when "
               "memory has nothing useful, a teacher is asked and the answer is given to you "
               "and remembered")

INVALID_CALL = "That was not a valid tool call: {problem}. Call exactly one of: {tools}."

NO_OP_NOTE = ("You used {max_non_env} non-environment tools in a row: one step passed without "
              "an action.")

RELEVANCE = """\
You decide whether a remembered piece of advice applies to the current situation.
Answer with one word: yes if following it now would help, no otherwise."""

RELEVANCE_USER = """\
Current situation:
{observation}

The agent is looking up: {query}

Remembered advice (learnt when asking "{question}"):
{entry}

Does this advice apply to the current situation? Answer yes or no."""

ASK = """\
You help an agent ask a teacher for help. Write one short how-to question that, once
answered, tells the agent how to make progress on what it is looking up. Ask about the
goal, not about this exact situation. Reply with the question only."""

ASK_USER = """\
Current situation:
{observation}

The agent is looking up: {query}

Write the how-to question."""

PARSE = """\
You turn a teacher's answer into advice that stays useful in other situations. Remove
what only holds now (exact slot names, positions of items in the inventory, counts that
depend on this inventory) and keep the procedure: what to make, from what, in which order
and arrangement. Then list tags: the names of the things the advice is about (items,
intermediate products, recipes), which later lookups may use.
Reply with JSON only: {"advice": "<the reusable advice>", "tags": ["<tag>", ...]}"""

PARSE_USER = """\
Current situation:
{observation}

Question: {question}

Teacher's answer:
{answer}"""

MEMORY_HIT = "From memory ({count} entr{plural}):\n{entries}"

TEACHER_ANSWER = "The teacher says:\n{answer}"
