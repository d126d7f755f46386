"""How²'s prompts (Appendix G of the paper), in our own words, one per role.

Every instruction, rule, field and output format of the paper's figures is carried; the
README lists, figure by figure, what each of these holds. On Plancraft the main system
prompt is Figure 10's; on the other benchmarks it is the benchmark's own manual (their
actions are free-text commands, given to the `act` tool). The memory block (Figure 10's
last part) is added for the roles that work with the memory: ask, relevance and parse.
"""

from __future__ import annotations

# Figure 10: the main system prompt, Plancraft (slots written without brackets).
PLANCRAFT_SYSTEM = """\
You are crafting in Minecraft and must decide on the next action.

Crafting grid: the crafting table is a 3x3 grid, and each of its slots has a name:
- top row: A1 A2 A3
- middle row: B1 B2 B3
- bottom row: C1 C2 C3

What a recipe makes appears in the output slot, named 0. Items cannot be moved or smelted
into slot 0.

The inventory slots, outside the crafting grid, hold the items you store; they are named
I1 to I36.

Before you act, think about and plan the intermediate goals and the next steps.

Constraints:
- Items cannot be moved or smelted into slot 0
- If no item is in slot 0, the arrangement does not match any recipe
- The crafting is done only once the item in slot 0 is moved to a free inventory slot
- Moving items onto a slot that already holds an item does nothing
- Call one tool (one action) at a time"""

# The other benchmarks: their manual, then how actions are sent.
TEXT_SYSTEM = """\
{manual}

You act by calling tools: `act` sends one command, written as the manual above says, and
costs one step. Call one tool (one action) at a time."""

# Figure 10's last part, for the ask, relevance and parse roles.
MEMORY_SYSTEM = """\
Memory system:
- You can store {knowledge} in a memory, and retrieve it.
- The aim is to learn {procedures} by asking procedural (how-to) questions and keeping the
  answers organised for later use.
- Store entries in a consistent structure, with clear lists of components and of steps.
- To judge relevance, consider whether a memory applies to the current situation."""

PLANCRAFT_MEMORY = {"knowledge": "recipes and crafting knowledge", "procedures": "recipes and procedures"}
TEXT_MEMORY = {"knowledge": "procedures and knowledge of the task", "procedures": "procedures"}

# Figure 16: the ask role.
ASK = """\
# Agent context
{context}

Write a procedural how-to question about {recipe}.

Keep in mind:
1. Ask **how** to make or achieve the target that the agent context names
2. Make use of the agent context
3. Keep the question short and about {recipe}
From the above, write one clear, well-formed question about {recipe}.
Reply with the question alone, with no other text."""

# Figure 17: the relevance role, one memory entry at a time (Algorithm 1, lines 3-7).
RELEVANCE = """\
# Agent context
{context}

# Memory for "{recipe}"
{memory}

Does this memory apply to the goal and the inventory?

Reply "yes" if at least one of the recipes it lists can be used in this context, and "no"
otherwise. Reply with that one word, with no other text."""

# Figure 18: the parse role. The slot rule is Section 3.3's (ParseAnswer abstracts what
# only holds in this state, e.g. inventory slot I12 becomes the item it holds, oak_log).
PARSE = """\
Rewrite the teacher's answer as an entry for the memory.

RECIPE is the main item, recipe or idea that the answer is about. You may rename
{recipe} to something more specific, but do not use vague words such as "item",
"recipe", "crafting", "object" or "inventory" as the name.

Write the entry with these sections:
RECIPE: {recipe}
REQUIREMENTS: [the prerequisites or materials]
PROCEDURE: [the steps, in order]
RELATED ITEMS: [the related recipe items, as a python list]

Keep the entry short and limited to what the teacher's answer says.

# Agent context
{context}

# Agent question
{question}

# Teacher's answer
{answer}

Write the teacher's answer as a well-structured memory entry that will be useful later."""

# Tool results the actor sees.
MEMORY_HIT = "Memory for {recipe} ({count} entr{plural}):\n{entries}"
MEMORY_MISS = "Nothing relevant in memory for {recipe}. Asked the teacher: {question}\n{answer}"
# A cache miss with the parse step: the teacher's answer, then the entry made of it (Fig. 24)
MEMORY_MISS_PARSED = ("Nothing relevant in memory for {recipe}. Asked the teacher: {question}\n"
                      "Answer: {answer}\nParsed answer: {parsed}")
INVALID_CALL = "That was not a valid tool call: {problem}. Call exactly one of: {tools}."
NO_OP_NOTE = ("You used {max_non_env} non-environment tools in a row: one step passed without "
              "an action.")
