"""Curriculum order (How²'s ablation, Appendix C.2): a split's examples ordered by recipe
dependencies, so that an item's ingredients are met as targets before the item itself.

The package's recipe graph (ingredient -> product) has cycles (iron_ingot <-> iron_block,
slime_ball <-> slime_block, ...). As the paper does, they are broken by removing edges of
cycles at random, so each seed gets its own valid ordering: while a cycle remains, one of
its edges, drawn from the seed's generator, is removed. Items are then ranked by their
depth in the resulting DAG (longest chain of ingredients below them); examples are sorted
by their target's rank, then by target name, and examples of one target keep the split's
order.
"""

from __future__ import annotations

import functools
import random
from typing import Sequence

from lifebench.api import Instance


@functools.lru_cache(maxsize=16)
def item_ranks(seed: int = 0) -> dict[str, int]:
    """Each item's depth in the recipe graph with its cycles broken by `seed`'s draws."""
    import networkx as nx
    from plancraft.environment.planner import RECIPE_GRAPH

    # nodes and edges in sorted order: the package builds its graph from sets, whose order
    # (so the cycle `find_cycle` meets first) would change with the process's hash seed
    graph = nx.DiGraph()
    graph.add_nodes_from(sorted(RECIPE_GRAPH.nodes))
    graph.add_edges_from(sorted(RECIPE_GRAPH.edges))
    rng = random.Random(f"curriculum/{seed}")
    while True:
        try:
            cycle = nx.find_cycle(graph)
        except nx.NetworkXNoCycle:
            break
        source, target = rng.choice(sorted((u, v) for u, v, *_ in cycle))
        graph.remove_edge(source, target)
    ranks: dict[str, int] = {}
    for item in nx.topological_sort(graph):
        ranks[item] = max((ranks[p] + 1 for p in graph.predecessors(item)), default=0)
    return ranks


def curriculum_order(instances: Sequence[Instance], seed: int = 0) -> list[Instance]:
    ranks = item_ranks(seed)
    unknown = max(ranks.values(), default=0) + 1
    return sorted(instances, key=lambda inst: (ranks.get(inst.metadata["target"], unknown),
                                               inst.metadata["target"]))
