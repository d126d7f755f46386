"""Instance contexts on ALFWorld: what a document about one household game holds, the text
that means a command failed, and the game's ground truth for measuring a document's
coverage.

The Observations section starts with where the agent stands at the start (the middle of
the room, from which every receptacle the first observation lists is one "go to" away),
then has one entry per receptacle (furniture and appliances: "countertop 1", "fridge 1")
and per object that can hold others ("bowl 1", "plate 2"), with what is in or on it
(`Unknown` until it has been seen: not visited yet, or closed and not opened).

Ground truth (`instance_facts`), read from the PDDL facts of the game's initial state
(whatever has been played since), with the names the game prints (the demangler's
"mug 2"): the locations are the receptacles (every one is named in the first
observation), and the objects every object that starts in or on a receptacle (named when
the agent arrives at it or opens it). Left out: the agent, the PDDL's abstract locations
("loc 12") and types, and the objects no receptacle holds (windows, blinds, light
switches, chairs, a ball on the floor...): the game never prints them.

The game answers every command it cannot carry out, whatever the reason (unknown wording,
an object out of reach, a closed receptacle, hands full), with one sentence: "Nothing
happens.". Every command it accepts changes or shows something.
"""

from __future__ import annotations

from typing import Any

from lifebench.api import ContextSchema, InstanceFacts

OBSERVATIONS_SCHEMA = """#### Observations
First where the agent starts, then one entry per receptacle (furniture or appliance, named
with its number as the game names it, e.g. "countertop 1", "fridge 1") and per object that
holds other objects (e.g. "bowl 1"):
- start: [where the agent stands at the start, and what it can go to from there]
- [receptacle or object]:
  - has_in_or_on: [object], [object], ... / Nothing / Unknown
  - note: [closed or open, shares its place with another receptacle, ...] / Unknown
Nothing: seen, and empty. Unknown: not seen yet (not visited, or closed and not opened)."""

FAILURE_TEXT = "Nothing happens."
FAILURE_PATTERNS = (r"\ANothing happens\.\Z",)


def schema() -> ContextSchema:
    return ContextSchema(observations=OBSERVATIONS_SCHEMA, mode="action",
                         failure_patterns=FAILURE_PATTERNS, unknown="Unknown")


def game_facts(facts: list[Any], entities: dict[str, Any]) -> InstanceFacts:
    """The receptacles and the held objects of a game's initial PDDL facts, by the names
    `entities` (PDDL id -> EntityInfo) gives them."""
    receptacles = {v.name for f in facts for v in f.arguments if v.type == "receptacle"}
    held = {f.arguments[0].name for f in facts
            if f.name in ("inreceptacle", "inreceptacleobject") and len(f.arguments) == 2}

    def names(ids: set[str]) -> frozenset[str]:
        return frozenset(n for n in (entities[i].name for i in ids if i in entities) if n)

    return InstanceFacts(locations=names(receptacles), objects=names(held - receptacles))


def instance_facts(env: Any) -> InstanceFacts:
    return game_facts(*env.start_facts())
