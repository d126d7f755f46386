"""Curriculum order (How²'s ablation): a split's examples ordered by recipe dependencies,
so that an item's ingredients are met as targets before the item itself.

Items are ranked by a topological order of the package's recipe graph (ingredient →
product); items on a cycle (e.g. iron_ingot ↔ iron_block) share the rank of their cycle.
Examples are sorted by their target's rank, then by name; examples of one target keep the
split's order.
"""

from __future__ import annotations

from typing import Sequence

from lifebench.api import Instance

def item_ranks() -> dict[str, int]:
    import networkx as nx
    from plancraft.environment.planner import RECIPE_GRAPH

    condensed = nx.condensation(RECIPE_GRAPH)
    order = nx.lexicographical_topological_sort(
        condensed, key=lambda node: min(condensed.nodes[node]["members"]))
    ranks: dict[str, int] = {}
    for rank, node in enumerate(order):
        for item in condensed.nodes[node]["members"]:
            ranks[item] = rank
    return ranks


def curriculum_order(instances: Sequence[Instance]) -> list[Instance]:
    ranks = item_ranks()
    unknown = len(ranks)
    return sorted(instances, key=lambda inst: (ranks.get(inst.metadata["target"], unknown),
                                               inst.metadata["target"]))
