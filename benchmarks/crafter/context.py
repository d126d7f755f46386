"""Instance contexts on Crafter: what a document about one world holds, and the world's
ground truth for measuring a document's coverage.

The Observations section is kept per position: at a position [x, y] the player stood on,
the kinds of things it could see from there (the text observation prints the position and
the 9x7 view around it). Exploration is in agent mode: one action reveals little, so an
explorer hands sub-goals ("find water", "make a wood pickaxe") to a sub-agent.

Ground truth (`instance_facts`): no locations (the map is one open grid; positions are
coordinates, not names), and as objects the kinds of material and creature present on the
64x64 map as generated, named as the observation's view prints them (`tree`, `water`,
`coal`, `cow`, `zombie`, `skeleton`, ...). The whole map is the instance: it is small (the
player starts in its centre, at most 64 moves from any cell), and a kind out of view of
every cell walkable from the start (a few worlds: see README) can still be reached by
tunnelling. Left out: the player (`you`), `edge` (beyond the map), and what the player
makes later (tables, furnaces, plants, arrows). Read from the world as generated, whatever
has been played since.
"""

from __future__ import annotations

from typing import Any

from lifebench.api import ContextSchema, InstanceFacts

from lifebench.benchmarks.crafter.text import INVALID_ACTION_PATTERN, object_name

OBSERVATIONS_SCHEMA = """#### Observations
One entry per position the player stood on (x grows eastward, y southward; distances are
Manhattan), with the kinds of things in view from there (materials and creatures, named
as the view names them):
- Position [x, y]: can see [thing], [thing], ... / Nothing / Unknown
Unknown: a position worth knowing (e.g. one a sub-agent passed through) whose view was not
recorded yet."""


def schema() -> ContextSchema:
    return ContextSchema(observations=OBSERVATIONS_SCHEMA, mode="agent",
                         failure_patterns=(INVALID_ACTION_PATTERN,), unknown="Unknown")


def world_kinds(world: Any, player: Any) -> frozenset[str]:
    """The kinds of material and creature on `world`, as the view names them (not the
    player)."""
    names = world._mat_names
    materials = {names[int(i)] for i in set(world._mat_map.ravel().tolist())}
    creatures = {object_name(obj, player) for obj in world.objects if obj is not player}
    return frozenset((materials | creatures) - {None, "you", "unknown"})


def instance_facts(env: Any) -> InstanceFacts:
    start = getattr(env, "start", None)
    if start is None:
        raise RuntimeError("call reset() before asking for the instance's facts")
    world, player = start
    return InstanceFacts(locations=frozenset(), objects=world_kinds(world, player))
