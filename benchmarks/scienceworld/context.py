"""Instance contexts on ScienceWorld: what a document about one task variation's world holds,
the text that means an action failed, and the world's ground truth for measuring a
document's coverage.

The Observations section is kept per location (the rooms and the outside): the things
there with their state and contents, and the doors with the location each leads to
(`Unknown` until seen), plus what the agent carries at the start.

Ground truth (`instance_facts`), read from the simulator's object tree as the episode
started (its JSON export, kept by the env at reset; whatever has been played since): the
locations are the universe's rooms (a child of the universe that holds things and is made
of nothing: not the sewer the drains lead to), and the objects everything in a room, on or
in something there, or carried, named as the simulator names it (`fridge`, `glass cup`,
`sodium chloride`, `air`). A living thing is named by its kind (`bee`, `wolf`, `apple`):
the simulator's own name for it is an id ("bee 0", "plant") and its printed name changes
with its life stage ("adult bee", "baby wolf", "apple tree in the reproducing stage"),
which contains the kind except at some stages (a common toad's egg prints "frog egg", a
moth's "butterfly egg", larvae "tadpole", "caterpillar"). Left out: the agent and its
inventory container, the electrical terminals every object carries ("terminal 1",
"anode"), the doors and drains (the simulator's portals, all named "door" or "drain";
a door is known by the rooms it joins), and what the simulator makes later (a hole, ash).
"""

from __future__ import annotations

from typing import Any

from lifebench.api import ContextSchema, InstanceFacts

OBSERVATIONS_SCHEMA = """#### Observations
One entry per location (a room or the outside, named as "This room is called the kitchen."
names it), with what is there and where its doors lead, then what the agent carries:
- [location]:
  - objects: [object], [object], ... / Nothing
    (with their state and contents as seen, e.g. "stove (turned off)", "counter (on it: a
    bowl containing a red apple)", "cupboard (closed; contents Unknown)"; living things
    with their stage, e.g. "frog egg", "apple tree in the adult stage")
  - doors: door to [location] (open / closed), ... / Nothing / Unknown
- inventory: [object], [object], ... / Nothing / Unknown
Unknown: not seen yet (a location not visited, a closed container, a door not looked
through)."""

# What the simulator answers when an action does nothing: its parser's and its actions'
# messages (scienceworld 1.2.3's jar). Each pattern is the whole answer; {N} is a name or
# a phrase within one sentence. An ambiguous command ("Ambiguous request: Please enter the
# number ...") is not a failure: it waits for the number of the meant action.
_FAILURES = (
    # the parser: no action matched, or the answer to an ambiguity prompt was not a number
    r"No known action matches that input\.",
    r"Unknown action\.  Type 'help' for a list of actions, and 'objects' for a list of "
    r"possible object referents\.",
    r"I'm not sure what that means\.?",
    # moving around
    r"It's not clear how to get there from here\.",
    r"Its not clear how to go to/through a {N}\.?",
    r"The door doesn't appear to go anywhere\.",
    r"The {N} is not currently passable\.",
    # opening, closing, switching
    r"The {N} is not (?:openable|closeable|moveable|edible|open|a container|flammable)\.",
    r"The {N} is not something that can be activated\.",
    r"The {N} is already (?:open|closed|activated|deactivated|on fire)\.",
    r"The {N} appears broken, and can't be activated or deactivated\.",
    r"The {N} isn't open, so you can't see inside\.",
    # taking, putting, dunking, pouring
    r"That can't be moved there(?:, because (?:the {N} isn't open|it's not a container))?\.",
    r"You can't (?:move|dunk) something into itself\.",
    r"You can't pick up a liquid directly\.  Try pouring it {N}\.",
    r"You can't pick up a gas directly\.",
    r"That object (?:already appears|does not appear) to be in the inventory\.",
    r"The {N} does not contain any liquids to dunk into\.",
    r"The {N} the {N} is in is not movable\.",
    r"(?:The )?{N} can't be poured out,? because (?:it doesn't appear to be in a container|it's not open)\.",
    r"I'm not sure how to pour a solid\.",
    r"You can't pour a gas directly\.",
    r"The {N} is empty, so there's nothing to pour\.",
    # using, reading, mixing, connecting
    r"It's not clear how to (?:read that|look inside of that|flush that|disconnect that|"
    r"shovel that|use an axe with that|use those items together|connect something to {N})\.?",
    r"I'm not sure how to use (?:those two things together|the {N})\.?",
    r"That thing doesn't appear to have a temperature that the thermometer can read\.",
    r"That container is empty, so there are no items to mix\.",
    r"Mixing the contents of the {N} does not appear to produce anything new\.",
    r"That is already flushing\.",
    r"(?:That|The {N}) is not flammable\.",
    r"You can't chop a seed\.",
    r"Something can't be connected to itself\.",
    r"The {N} is already connected, and must be disconnected before it can be connected "
    r"to something else\.?",
)
_NAME = r"[^.!?\n]+"
FAILURE_PATTERNS = tuple(rf"\A(?:{p.replace('{N}', _NAME)})\Z" for p in _FAILURES)

# Parts of objects the simulator keeps as objects, never printed as things.
TERMINALS = frozenset({"terminal 1", "terminal 2", "anode", "cathode"})
AGENT = ("agent", "inventory")


def schema() -> ContextSchema:
    return ContextSchema(observations=OBSERVATIONS_SCHEMA, mode="action",
                         failure_patterns=FAILURE_PATTERNS, unknown="Unknown")


def is_location(node: dict[str, Any]) -> bool:
    """A child of the universe that is a room or the outside (not the sewer, which is made
    of steel, nor the universe's own terminals)."""
    return node.get("propContainer") is not None and node.get("propMaterial") is None


def thing_name(node: dict[str, Any]) -> str:
    """A thing's name as observations print it: a living thing's kind, else its name."""
    kind = (node.get("propLife") or {}).get("lifeformType")
    return str(kind or node["name"]).strip()


def world_facts(tree: dict[str, Any]) -> InstanceFacts:
    """The locations and the things of a simulator object tree (`getObjectTree`)."""
    locations: set[str] = set()
    things: set[str] = set()

    def visit(node: dict[str, Any]) -> None:
        for child in node.get("contents", {}).values():
            if child.get("isDeleted") or child["name"] in TERMINALS:
                continue
            if child["name"] not in AGENT:
                things.add(thing_name(child))
            visit(child)

    for child in tree.get("contents", {}).values():
        if not child.get("isDeleted") and is_location(child):
            locations.add(child["name"])
            visit(child)
    return InstanceFacts(locations=frozenset(locations), objects=frozenset(things - {""}))


def instance_facts(env: Any) -> InstanceFacts:
    return world_facts(env.start_world())
