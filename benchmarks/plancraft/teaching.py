"""Plancraft's teacher plan: the package's planner (`get_subplans`) on the current inventory,
for the item a question asks about (How²'s answer r = T(o_t, q) answers q, a question about
`recipe_name`): an intermediate item's recipe when the agent asks about one, the target's
when it asks about the target, asks nothing in particular, or names no Minecraft item.

The planner returns its actions grouped per recipe, and (with `return_items`) the item
taken by each action, which gives the item-level and spatial descriptions the How²
teachers need.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from typing import Any, Optional

from lifebench.api import PlanStep, TeacherPlan

IMPOSSIBLE_ACTION = "impossible: the target cannot be crafted from this inventory"
_ACTION = ("move", "smelt")
_ROWS = {"A": "top", "B": "middle", "C": "bottom"}
_COLUMNS = {"1": "left", "2": "middle", "3": "right"}


def slot_index(slot: str) -> int:
    from plancraft.environment.actions import convert_to_slot_index

    return convert_to_slot_index(slot)


def spatial(slot: str) -> str:
    """[A1] → 'the top-left cell of the crafting grid'; [B2] → 'the centre cell ...'."""
    name = slot.strip("[]")
    if name == "0":
        return "the crafting output"
    if name[0] in _ROWS and name[1:] in _COLUMNS:
        row, column = _ROWS[name[0]], _COLUMNS[name[1:]]
        where = "centre" if row == column == "middle" else f"{row}-{column}"
        return f"the {where} cell of the crafting grid"
    return "the inventory"


def _parse(action: str) -> tuple[str, str, str, int]:
    kind, _, rest = action.partition(":")
    words = rest.split()
    # "from [X] to [Y] with quantity N"
    return kind.strip(), words[1], words[3], int(words[6])


def _step(action: str, item: str, subgoal: int) -> PlanStep:
    """The three forms of one planner action: exact; with items named instead of the
    inventory slots they come from (How²'s "move the glass to A1"); spatial, with
    quantities (the non-executable teacher's input)."""
    kind, source, target, quantity = _parse(action)
    if kind == "smelt":
        return PlanStep(action, f"smelt {quantity} {item} into a free inventory slot",
                        f"smelt {quantity} {item}", subgoal)
    if source == "[0]":
        return PlanStep(action, f"move {item} to a free inventory slot",
                        f"take the {quantity} crafted {item} from the output slot", subgoal)
    if 1 <= slot_index(target) <= 9:
        return PlanStep(action, f"move {item} to {target}",
                        f"put {quantity} {item} in {spatial(target)}", subgoal)
    return PlanStep(action, f"move {item} from {source} to a free inventory slot",
                    f"take {quantity} {item} off the crafting grid", subgoal)


# What the non-executable teacher is told of Plancraft (How², Appendix G, Figure 19).
MENTOR = """\
# Background
- The domain: crafting tasks in Minecraft.
- Crafting happens on a 3x3 crafting grid; what a recipe makes appears in an output slot.
- Nothing can be moved or smelted into the output slot.
- The inventory slots, outside the grid, hold the items being stored.

# Usage notes
- Smelting is done with the `smelt` command: no furnace is needed.
- The crafting grid is already open: never say to open it.
- Describe how items are arranged on the crafting grid with shapes (e.g. 2x2) or patterns.

# Example
Question: How can I craft a glass_bottle given my inventory?
Answer: To craft a glass_bottle, first smelt sand into three glass, then lay the three
glass out in a small V shape on the crafting grid."""


def inventory_totals(inventory: dict[int, dict[str, Any]]) -> str:
    counts: Counter[str] = Counter()
    for slot, item in inventory.items():
        if slot != 0 and item.get("quantity", 0) > 0:
            counts[item["type"]] += item["quantity"]
    return ", ".join(f"{n} {item}" for item, n in sorted(counts.items())) or "nothing"


def item_named(query: Optional[str]) -> Optional[str]:
    """The Minecraft item a question's query names ("Oak Planks", "oak-planks", "`stick`"
    -> "oak_planks", "stick"), or None when it names none."""
    if not query:
        return None
    name = re.sub(r"[\s\-]+", "_", query.strip().strip("`'\"").strip().lower())
    return name if name in _items() else None


@functools.lru_cache(maxsize=1)
def _items() -> frozenset[str]:
    from plancraft.environment.items import ALL_ITEMS

    return frozenset(ALL_ITEMS)


def _held(inventory: dict[int, dict[str, Any]], item: str) -> bool:
    """Whether `item` is already in the inventory or on the crafting grid (any slot but the
    output, whose item is not the agent's until taken)."""
    return any(slot != 0 and held.get("type") == item and held.get("quantity", 0) > 0
               for slot, held in inventory.items())


def planner_plan(inventory: dict[int, dict[str, Any]], target: str,
                 asked: Optional[str] = None) -> TeacherPlan:
    """The planner's plan for the item `asked` about (a query; None: the target)."""
    from lifebench.benchmarks.plancraft.planner import get_subplans
    from plancraft.environment.recipes import SmeltingRecipe

    item = item_named(asked)
    about = "task" if asked is None or item == target else ("item" if item else "task: unknown item")
    item = item if about == "item" else target
    goal = f"craft {item}"
    state = (f"the goal is {target}" + (f"; the question is about {item}" if about == "item" else "")
             + f"; the inventory holds {inventory_totals(inventory)}")
    if _held(inventory, item):  # nothing to plan: the planner's empty plan is not "impossible"
        return TeacherPlan(steps=(), subgoals=(), goal=goal, state=state, mentor=MENTOR, about=about)
    subplans, plan, items = get_subplans({"inventory": inventory, "target": item},
                                         return_items=True)
    if not plan:  # the planner found no way (or timed out): the package's oracle stops
        return TeacherPlan(steps=(), subgoals=(), goal=goal, state=state, impossible=True,
                           impossible_action=IMPOSSIBLE_ACTION, mentor=MENTOR, about=about)
    subgoals = []
    steps = []
    for index, (subplan, (recipe, _), used) in enumerate(zip(subplans, plan, items)):
        result = recipe.result
        subgoals.append(f"Smelt {result.item}" if isinstance(recipe, SmeltingRecipe)
                        else f"Craft {result.item}")
        steps.extend(_step(action, item, index) for action, item in zip(subplan, used))
    return TeacherPlan(steps=tuple(steps), subgoals=tuple(subgoals), goal=goal, state=state,
                       mentor=MENTOR, about=about)
