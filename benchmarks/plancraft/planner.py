"""The package's planner, made independent of Python's hash seed.

plancraft's planner (`environment.planner`) breaks ties by set order: the recipes it tries
come from a set of ancestor items (`get_ancestors`), and the item it puts in a grid cell
from a set of acceptable items (`item_set_id_to_type`). String sets iterate in an order
that depends on PYTHONHASHSEED, so the oracle's actions (and the teacher's plans) changed
from one process to the next. `get_subplans` here is the package's, with both sets put in
a fixed order (by name) first: the planner's search and its results are otherwise the
package's own.

The search asks every recipe whether it can be made from an inventory, and the recipes
deep-copy the inventory (a flat item name -> count mapping) each time: ~90% of an oracle
episode's time. Such a mapping's `copy()` is the same copy; other values still deep-copy.

The package's search gives up after 30 seconds of wall-clock time, and a search that gives
up says "impossible": so whether the oracle and the teacher solved an instance depended on
the machine and its load. Here its clock counts search steps instead (one per call of its
depth-first search), so it gives up after `SEARCH_STEPS` steps, on any machine under any
load. Over every `val`, `val.repeated` and `test` instance a solvable task's search takes at
most 814 steps and an impossible one's exhaustive search at most 33,659
(`tests/perf/perf_plancraft_planner.py`): the budget leaves six times that.
"""

from __future__ import annotations

import copy
import functools
import threading
from collections import Counter
from typing import Any, Iterator

# The package's timeout, in its seconds; and the search steps that stand for it.
PACKAGE_TIMEOUT_S = 30
SEARCH_STEPS = 200_000


class SearchClock:
    """What the planner reads as `time`: each reading is one more search step of the
    search in progress in this thread, PACKAGE_TIMEOUT_S / SEARCH_STEPS "seconds" long.
    Per thread: streams played in threads search at once; a greenlet never switches
    within a search (it waits for nothing)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def start(self) -> None:
        self._local.steps = 0

    @property
    def steps(self) -> int:
        """The steps of this thread's last search."""
        return getattr(self._local, "steps", 0)

    def time(self) -> float:
        self._local.steps = self.steps + 1
        return self._local.steps * PACKAGE_TIMEOUT_S / SEARCH_STEPS


CLOCK = SearchClock()


class _SortedSet(set):
    """A set that iterates in sorted order (None first), and compares as a set."""

    def __iter__(self) -> Iterator[Any]:
        return iter(sorted(super().__iter__(), key=lambda x: (x is not None, str(x))))


def _copy(value: Any, memo: Any = None) -> Any:
    """`copy.deepcopy`, flat for an inventory (str -> int), whose deep copy is its copy."""
    if type(value) in (Counter, dict) and all(type(k) is str and type(v) is int
                                             for k, v in value.items()):
        return value.copy()
    return copy.deepcopy(value, memo)


@functools.lru_cache(maxsize=None)
def _patched() -> Any:
    from plancraft.environment import planner, recipes

    graph = planner.RECIPE_GRAPH
    package_item_set = planner.item_set_id_to_type

    def get_ancestors(target: str) -> list[str]:
        import networkx as nx

        return sorted(nx.ancestors(graph, source=target))

    def item_set_id_to_type(item_set_ids: Any) -> set:
        return _SortedSet(package_item_set(item_set_ids))

    package_planner = planner.optimal_planner

    def optimal_planner(*args: Any, **kwargs: Any) -> Any:
        CLOCK.start()
        return package_planner(*args, **kwargs)

    planner.get_ancestors = get_ancestors
    recipes.deepcopy = _copy
    planner.item_set_id_to_type = item_set_id_to_type
    planner.time = CLOCK  # its only use of `time` is the search's timeout
    planner.optimal_planner = optimal_planner
    return planner


def get_subplans(*args: Any, **kwargs: Any) -> Any:
    """plancraft's `get_subplans`, with its ties broken in a fixed order."""
    return _patched().get_subplans(*args, **kwargs)
