"""Plancraft's teacher plan: the package's planner (`get_subplans`) on the current inventory.

The planner returns its actions grouped per recipe, and (with `return_items`) the item
taken by each action, which gives the item-level and spatial descriptions the How²
teachers need.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

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
    kind, source, target, quantity = _parse(action)
    if kind == "smelt":
        return PlanStep(action, f"smelt {quantity} {item} into an empty inventory slot",
                        f"smelt {item}", subgoal)
    if source == "[0]":
        return PlanStep(action, f"take the {item} from the crafting output [0] into the inventory",
                        f"take the crafted {item} from the crafting output", subgoal)
    if 1 <= slot_index(target) <= 9:
        return PlanStep(action, f"put {quantity} {item} into {target}",
                        f"put {item} in {spatial(target)}", subgoal)
    return PlanStep(action, f"move {quantity} {item} from {source} back to the inventory",
                    f"clear {item} from the crafting grid", subgoal)


def inventory_totals(inventory: dict[int, dict[str, Any]]) -> str:
    counts: Counter[str] = Counter()
    for slot, item in inventory.items():
        if slot != 0 and item.get("quantity", 0) > 0:
            counts[item["type"]] += item["quantity"]
    return ", ".join(f"{n} {item}" for item, n in sorted(counts.items())) or "nothing"


def planner_plan(inventory: dict[int, dict[str, Any]], target: str) -> TeacherPlan:
    from plancraft.environment.planner import get_subplans
    from plancraft.environment.recipes import SmeltingRecipe

    state = f"the goal is {target}; the inventory holds {inventory_totals(inventory)}"
    subplans, plan, items = get_subplans({"inventory": inventory, "target": target},
                                         return_items=True)
    if not plan:  # the planner found no way (or timed out): the package's oracle stops
        return TeacherPlan(steps=(), subgoals=(), state=state, impossible=True,
                           impossible_action=IMPOSSIBLE_ACTION)
    subgoals = []
    steps = []
    for index, (subplan, (recipe, _), used) in enumerate(zip(subplans, plan, items)):
        result = recipe.result
        subgoals.append(f"smelt {result.item}" if isinstance(recipe, SmeltingRecipe)
                        else f"craft {result.count} {result.item}")
        steps.extend(_step(action, item, index) for action, item in zip(subplan, used))
    return TeacherPlan(steps=tuple(steps), subgoals=tuple(subgoals), state=state)
