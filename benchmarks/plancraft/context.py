"""Instance contexts on Plancraft: what a document about one crafting task holds, the text
that means an action failed, and the task's ground truth for measuring a document's
coverage.

An instance is one crafting table with a starting inventory and a target. The
Observations section names the target, the items the inventory starts with, and per item
seen the crafting outcomes observed: which grid arrangement or smelt gave it, and what it
went into (`Unknown` until tried).

Ground truth (`instance_facts`), read from the task's example (the package's data, never
from what was played): no locations (the table is the one place; its slots are
coordinates, not names), and as objects the item types the inventory starts with
(distractors included), the target, and the items of the example's optimal path (its
intermediates, crafted or smelted on the way), named as observations print them
(`oak_planks`; coverage reads the underscore as a space). An impossible task has no path:
its objects are its inventory and its target. The first observation names all but the
path's intermediates; an intermediate shows up when the grid or a smelt makes it (in the
output slot [0]). The optimal path is one way to the target: where the inventory allows
another (planks of another wood), an explorer that takes that way sees the other item.

Failures: the package answers an action it cannot parse with "Only select actions from the
following: ..." and a malformed move, smelt or impossible with "Format Error: ... Correct
format: `...`". A well-formed move that cannot happen (from an empty slot, onto another
kind of item, a smelt of what does not smelt) changes nothing and says nothing: the
observation repeats, which no pattern can tell from a move that did nothing useful.
"""

from __future__ import annotations

from typing import Any

from lifebench.api import ContextSchema, InstanceFacts

OBSERVATIONS_SCHEMA = """#### Observations
The crafting table's task: its target, what the inventory holds at the start, and one
entry per item seen (in the inventory, on the grid, or made in the output slot [0]):
- target: [item] (can be made from this inventory: yes / no / Unknown)
- start inventory: [item] [slot] quantity N, ...
- [item]:
  - made_by: [the grid arrangement or smelt that gave it, e.g. "oak_log in [A1] gives 4
    oak_planks", "smelt iron_ore gives iron_ingot"] / Nothing (no arrangement here makes
    it) / Unknown
  - used_in: [item it went into], ... / Nothing / Unknown
Unknown: not tried yet."""

FAILURE_PATTERNS = (
    r"\AOnly select actions from the following: [\w, ]+\Z",
    r"\AFormat Error: (?s:.*)\. Correct format: `[^`\n]+`\Z",
)


def schema() -> ContextSchema:
    return ContextSchema(observations=OBSERVATIONS_SCHEMA, mode="action",
                         failure_patterns=FAILURE_PATTERNS, unknown="Unknown")


def example_facts(example: Any) -> InstanceFacts:
    """The items of a `PlancraftExample`: its starting inventory, target and optimal path."""
    items = set(example.inventory) | {example.target} | set(example.optimal_path or ())
    return InstanceFacts(locations=frozenset(), objects=frozenset(i for i in items if i))


def instance_facts(env: Any) -> InstanceFacts:
    return example_facts(env.example)
