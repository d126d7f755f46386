"""Plancraft's text environment, with image rendering skipped.

The crafting logic is the package's own `PlancraftEnvironment`; only its GUI (which draws
every move into a PIL image, ~5x the cost of the logic) is replaced by a stand-in that
draws nothing. Action parsing and the success/impossible semantics follow the package's
`PlancraftGymWrapper`, except that the harness, not the env, counts steps and budgets.
"""

from __future__ import annotations

import functools

import random
from typing import Any, Optional

from plancraft.config import PlancraftExample
from plancraft.environment.actions import (
    ImpossibleActionHandler,
    MoveAction,
    MoveActionHandler,
    SmeltAction,
    SmeltActionHandler,
    StopAction,
    ThinkActionHandler,
)
from plancraft.environment.env import PlancraftEnvironment, target_and_inventory_to_text_obs
from plancraft.environment.recipes import (
    RECIPES,
    ShapedRecipe,
    ShapelessRecipe,
    SmeltingRecipe,
    convert_ingredients_to_table,
)

from lifebench.api import Observation, Step

ACTION_HANDLERS = (MoveActionHandler(), SmeltActionHandler(), ThinkActionHandler(),
                   ImpossibleActionHandler())

# The package's recipe lists, in its order (PlancraftEnvironment.__init__ rebuilds them on
# every construction).
_SMELTING = [r for rs in RECIPES.values() for r in rs if isinstance(r, SmeltingRecipe)]
_CRAFTING = [r for rs in RECIPES.values() for r in rs
             if isinstance(r, (ShapelessRecipe, ShapedRecipe))]


def _crafting_index() -> tuple[dict[str, list[int]], list[int]]:
    """For each item, the crafting recipes (positions in `_CRAFTING`) that accept it.

    A shaped or shapeless recipe can only match a grid whose items it all accepts, so the
    recipes accepting every item on the grid, in the package's order, contain the package's
    first match. The empty grid gets whatever the full scan gives it (nothing, in 0.4.9).
    """
    accepting: dict[str, list[int]] = {}
    for position, recipe in enumerate(_CRAFTING):
        for item in recipe.inputs:
            accepting.setdefault(item, []).append(position)
    empty = convert_ingredients_to_table([None] * 9)
    empty_matches = [p for p, r in enumerate(_CRAFTING) if r.craft(empty)][:1]
    return accepting, empty_matches


_ACCEPTING, _EMPTY_GRID_MATCHES = _crafting_index()

GRID_AND_INVENTORY_SLOTS = range(1, 46)  # [A1]..[C3], [I1]..[I36]; [0] is output only


class _NoTable:
    """Stands in for the package's CraftingTableGUI: the same calls, nothing drawn."""

    frame = None

    def add_item_to_slot(self, item_name: str, slot: int, quantity: int = 1) -> None:
        pass

    def remove_item_from_slot(self, slot: int) -> None:
        pass

    def clear(self) -> None:
        pass


class TextOnlyPlancraftEnvironment(PlancraftEnvironment):
    """The package's environment without the GUI. Same state transitions."""

    def __init__(self, inventory: Optional[dict] = None, **_ignored: Any) -> None:
        # Mirrors PlancraftEnvironment.__init__ (0.4.9) minus the GUI, and reuses the
        # recipe lists it would rebuild on every construction.
        self.table = _NoTable()
        self.state = {}
        self.reset(inventory)
        self.table_indexes = list(range(1, 10))
        self.output_index = 0
        self.recipes = RECIPES
        self.smelting_recipes = _SMELTING
        self.crafting_recipes = _CRAFTING

    def populate_craft_slot_craft_item(self) -> None:
        # The package's method, its result looked up by the grid's contents (see `_craft`).
        ingredients = tuple(None if self.slot_empty(i) else self.state[i]["type"]
                            for i in self.table_indexes)
        crafted = _craft(ingredients)
        if crafted is None:
            self.ingredients_idxs = []
            self.remove_item_from_slot(self.output_index)
            return
        item, count, indexes = crafted
        self.ingredients_idxs = list(indexes)
        self.add_item_to_slot(item, self.output_index, count)


@functools.lru_cache(maxsize=1 << 16)
def _craft(ingredients: tuple[Optional[str], ...]) -> Optional[tuple[str, int, tuple[Any, ...]]]:
    """What the crafting grid makes: (item, count, the grid slots it consumes), or None. The
    package scans every recipe after each move onto the grid; this scans only the recipes
    that accept every item on it (see `_crafting_index`), with the same first match, and
    remembers the answer for the process: a pure function of the nine slots."""
    present = {item for item in ingredients if item is not None}
    if present:
        lists = sorted((_ACCEPTING.get(item, []) for item in present), key=len)
        candidates = sorted(set(lists[0]).intersection(*lists[1:]))
    else:
        candidates = _EMPTY_GRID_MATCHES
    table = convert_ingredients_to_table(list(ingredients))
    for position in candidates:
        if found := _CRAFTING[position].craft(table):
            result, indexes = found
            return result.item, result.count, tuple(indexes)
    return None


@functools.lru_cache(maxsize=1 << 14)
def parse_action(text: str) -> Any:
    """The package's parse: an action model, StopAction, or a message string. Remembered
    by text (the models are only read, and streams play the same actions again)."""
    for handler in ACTION_HANDLERS:
        matched = handler.match(text)
        if matched:
            return matched
    names = ", ".join(h.action_name for h in ACTION_HANDLERS)
    return f"Only select actions from the following: {names}"


def _copy_slots(slots: dict[int, dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """A copy of an inventory by slot for the package to mutate: its items are flat dicts
    of a type and a quantity, so one level is enough (10x cheaper than a deep copy)."""
    return {slot: dict(item) for slot, item in slots.items()}


class PlancraftEnv:
    """One Plancraft episode over a copy of the example (the package mutates it)."""

    def __init__(self, example: PlancraftExample, render: bool = False) -> None:
        self.example = example
        self.render = render
        self._env: Optional[PlancraftEnvironment] = None
        self.impossible_predicted = False
        self.finished = False
        self.crafted: list[str] = []  # item types taken out of the output slot, first time each

    # -- protocol
    def reset(self) -> Observation:
        inventory = _copy_slots(self.example.slotted_inventory)
        self._env = (PlancraftEnvironment(inventory, resolution="low") if self.render
                     else TextOnlyPlancraftEnvironment(inventory))
        self.impossible_predicted = False
        self.finished = False
        self.crafted = []
        return self._observe(self._env.step())

    def step(self, action: str) -> Step:
        env = self._require_env()
        if self.finished:
            return Step(Observation("Plancraft environment is terminated"), done=True,
                        success=False, score=0.0)
        parsed = parse_action(action)
        if isinstance(parsed, StopAction):
            self.impossible_predicted = True
            self.finished = True
            success = bool(self.example.impossible)
            return Step(Observation("Plancraft environment is terminate due to stop action"),
                        reward=float(success), done=True, score=float(success), success=success,
                        info={"reason": "correctly_identified_impossible" if success
                              else "incorrect_stop"})
        if isinstance(parsed, str):  # think, or an invalid action: state unchanged
            state = env.step()
            return Step(Observation(parsed, data=self._data(state["inventory"])))
        made = self._output_item() if getattr(parsed, "slot_from", None) == 0 else None
        observation = self._observe(env.step(parsed))
        if made and made not in self.crafted and self._output_item() != made:
            self.crafted.append(made)
        success = self._target_obtained(observation.data["inventory"])
        self.finished = success
        return Step(observation, reward=float(success), done=success, score=float(success),
                    success=success, info={"reason": "success"} if success else {})

    def valid_actions(self) -> list[str]:
        """Every well-formed move or smelt out of an occupied slot (quantity 1 or the whole
        stack) into any grid or inventory slot, and `impossible`."""
        return [self._format(kind, src, dst, qty) for kind, src, dst, qty in self._action_table()] \
            + ["impossible: the target cannot be crafted from this inventory"]

    def sample_action(self, rng: random.Random) -> str:
        """A uniform draw from `valid_actions()` without building the strings."""
        table = self._action_table()
        index = rng.randrange(len(table) + 1)
        if index == len(table):
            return "impossible: the target cannot be crafted from this inventory"
        return self._format(*table[index])

    def query(self, name: str) -> str:
        """Free information that costs no step: `state`, the target and the inventory as
        an observation shows them (after a `think` or a format error too)."""
        if name != "state":
            raise ValueError(f"unknown query {name!r}; Plancraft answers state")
        return target_and_inventory_to_text_obs(target=self.example.target,
                                                inventory=self._require_env().state)

    def close(self) -> None:
        self._env = None

    def snapshot(self) -> Any:
        env = self._require_env()
        return (_copy_slots(env.state), list(getattr(env, "ingredients_idxs", [])),
                self.impossible_predicted, self.finished, tuple(self.crafted))

    def restore(self, snapshot: Any) -> Observation:
        env = self._require_env()
        state, ingredients, self.impossible_predicted, self.finished, crafted = snapshot
        self.crafted = list(crafted)
        env.reset(_copy_slots(state))
        env.ingredients_idxs = list(ingredients)
        return self._observe(env.step())

    def episode_extra(self) -> dict[str, Any]:
        plan = set(self.example.optimal_path or ()) | {self.example.target}
        return {"impossible_predicted": self.impossible_predicted,
                "impossible_truth": bool(self.example.impossible),
                # the dataset's class: easy, medium, hard or impossible (How²'s Table 10)
                "complexity": str(self.example.complexity_split),
                # items crafted that the dataset's optimal plan does not make (How²'s eager
                # crafting, Table 9); an impossible example has no plan
                "off_plan_crafted": [item for item in self.crafted if item not in plan]}

    # -- helpers
    def _output_item(self) -> Optional[str]:
        """The item type in the crafting output slot (0), or None when it is empty."""
        item = self._require_env().state.get(0) or {}
        return str(item["type"]) if item.get("quantity", 0) > 0 and item.get("type") else None

    @property
    def inventory(self) -> dict:
        return dict(self._require_env().state)

    def _require_env(self) -> PlancraftEnvironment:
        if self._env is None:
            raise RuntimeError("call reset() before using the environment")
        return self._env

    def _data(self, inventory: dict) -> dict[str, Any]:
        return {"inventory": inventory, "target": self.example.target}

    def _observe(self, state: dict) -> Observation:
        text = target_and_inventory_to_text_obs(target=self.example.target,
                                                inventory=state["inventory"])
        return Observation(text, data=self._data(state["inventory"]), image=state.get("image"))

    def _target_obtained(self, inventory: dict) -> bool:
        # the package's check: the target in any slot but the output slot [0]
        return any(item["type"] == self.example.target and slot != 0
                   for slot, item in inventory.items())

    def _action_table(self) -> list[tuple[str, int, int, int]]:
        rows = []
        for src, item in sorted(self._require_env().state.items()):
            qty = item["quantity"]
            if qty <= 0:
                continue
            quantities = (1, qty) if qty > 1 else (1,)
            kinds = ("move",) if src == 0 else ("move", "smelt")
            for kind in kinds:
                for dst in GRID_AND_INVENTORY_SLOTS:
                    if dst != src:
                        rows.extend((kind, src, dst, q) for q in quantities)
        return rows

    @staticmethod
    def _format(kind: str, src: int, dst: int, qty: int) -> str:
        action = (MoveAction if kind == "move" else SmeltAction)(slot_from=src, slot_to=dst,
                                                                  quantity=qty)
        return str(action)
