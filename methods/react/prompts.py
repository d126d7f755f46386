"""ReAct's prompt: lifebench's own wording. The benchmark's manual comes from the adapter;
everything else is the same on every benchmark."""

from __future__ import annotations

FORMAT = """\
Solve the task by interleaving reasoning and acting. On every turn, reply with exactly two
lines:
Thought: <your reasoning about what you see and what to do next>
Action: <one action, written exactly as the manual says>
The environment answers each action with a new observation."""

EXAMPLES_HEADER = "Here are solved episodes of other tasks, for the action format and the game's feel:"

EXAMPLE = "Example {number}:\n{transcript}"

NO_ACTION_FEEDBACK = ("Your reply had no 'Action:' line. Reply with 'Thought: ...' on one line "
                      "and 'Action: ...' on the next.")

TURN = "Observation: {observation}"
