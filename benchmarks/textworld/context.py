"""Instance contexts on TextWorld cooking games: what a document about one game holds, the
text that means a command failed, and the game's ground truth for measuring a document's
coverage.

The Observations section is kept per location (room): the things seen there, and for each
of the four directions the door or exit that way and the room it leads to (`Unknown` until
the explorer has gone through it).

Ground truth (`instance_facts`), read from the game's own description (the `Game` the
engine loaded from the game's `.json`: its world's initial facts and its entity infos),
never from what was played: the locations are its rooms, and the objects every thing
placed in the world at the start, named as the game prints them (`fridge`, `red apple`,
`frosted-glass door`, `BBQ`): furniture, containers and supporters, cooking appliances,
food, the cookbook and the knife, and the doors (a door is named in the description of
both rooms it joins). A thing is placed when it is in a room, on or in a placed thing, or
carried; a door when it links two rooms. Left out: the player, the inventory, and what the
game makes or keeps out of the world (the meal, which exists only once prepared; the
recipe and its abstract ingredients).
"""

from __future__ import annotations

from typing import Any

from lifebench.api import ContextSchema, InstanceFacts

OBSERVATIONS_SCHEMA = """#### Observations
One entry per location (a room, named as its heading names it, e.g. "-= Kitchen =-" is
Kitchen), with what is in it and where each of its four sides leads:
- [location]:
  - objects: [object], [object], ... / Nothing
    (furniture and appliances with what is on or in them, e.g. "counter (with a knife)",
    "fridge (closed; contents Unknown)"; loose items too)
  - north: [door (its name and whether open or closed) or exit without a door] to [location] / None / Unknown
  - south: [door or exit] to [location] / None / Unknown
  - east: [door or exit] to [location] / None / Unknown
  - west: [door or exit] to [location] / None / Unknown
None: the room has no way out on that side. Unknown: the side (or the room a door or exit
leads to, or a closed container's contents) has not been seen yet."""

# What the game answers when a command does nothing: Inform 7's parser and library
# messages, and those of TextWorld's cooking extension (the game's .ni source). Each
# pattern is the whole answer (an Inform 7 note such as "(the red apple)" may come first);
# an answer that also reports a change ("You burned the red apple!") is not a failure.
# {N} is a name or a phrase within one sentence.
_FAILURES = (
    # the parser: the command was not understood, or named nothing in reach
    r"That's not a verb I recognise\.",
    r"I didn't understand that sentence\.",
    r"I only understood you as far as {N}\.",
    r"I beg your pardon\?",
    r"You can't see any such thing\.",
    r"You can't use multiple objects with that verb\.",
    r"You have to be more specific!",
    r"You'll have to say which compass direction to go in\.",
    r"(?:What|Whom) do you want to {N}\?",
    r"Which do you mean, {N}\?",
    # moving
    r"You can't go that way\.",
    r"You have to open the {N} first\.",
    r"You have to unlock the {N} with the {N} first\.",
    r"The {N} is welded shut\.",
    # taking, dropping, putting
    r"(?:That's|It is|The {N} is) fixed in place\.",
    r"That isn't available\.",
    r"You already have that\.",
    r"You haven't got that\.",
    r"You need to take the {N} first\.",
    r"You need to be holding {N} before you can {N}\.",
    r"The {N} is already here\.",
    r"That can't contain things\.",
    r"Putting things on {N} would achieve nothing\.",
    r"You can't put something (?:on top of|inside) itself\.",
    r"There is no more room (?:on|in) {N}\.",
    r"Can't see any {N} on the floor! Try taking the {N} from the {N} instead\.",
    # opening, closing, locking; putting into a closed container
    r"It isn't something you can \w+\.",
    r"That's already \w+\.",
    r"That doesn't seem to fit the lock\.",
    r"The {N} (?:is|are) closed\.",
    r"(?:That's|It's|They're) (?:un)?locked at the moment\.",
    r"First you would have to (?:close|unlock) {N}\.",
    r"That doesn't seem to be something you can (?:un)?lock\.",
    r"(?:It|They) seems? to be locked\.",
    # what the standard rules refuse or block (entering, wearing, talking, hitting, ...)
    r"That's not something you can {N}\.",
    r"But you aren't in anything at the moment\.",
    r"You can't wear that!",
    r"You aren't wearing {N}\.",
    r"You can only do that to something animate\.",
    r"You can't talk to {N}\.",
    r"You are always self-possessed\.",
    r"Violence isn't the answer to this one\.",
    r"Futile\.",
    r"This dangerous act would achieve little\.",
    r"Little is to be achieved by that\.",
    r"You achieve nothing by this\.",
    r"Nothing is on sale\.",
    r"You aren't feeling especially drowsy\.",
    r"The dreadful truth is, this is not a dream\.",
    r"What a good idea\.",
    # eating, drinking
    r"That's plainly inedible\.",
    r"You cannot drink {N}\.",
    # cutting, cooking, the meal
    r"Can only cut cuttable food\.",
    r"Cutting something requires a knife\.",
    r"You need to specify how you want to cut {N}\. Either slice, dice, or chop it\.",
    r"The {N} (?:has already been cut|is already (?:sliced|diced|chopped))\.",
    r"Can only cook food\.",
    r"Cooking requires a source of heat\.",
    r"You should cook {N} first\.",
    r"Can only prepare meal in the -= {N} =-\.",
    r"You still miss something\.",
    r"Something still needs to be (?:cut|cooked)\.",
    r"The recipe requires {N}\.",
)
_NAME = r"[^.!?\n]+"
FAILURE_PATTERNS = tuple(rf"\A(?:\([^()\n]*\)\n)?(?:{p.replace('{N}', _NAME)})\Z"
                         for p in _FAILURES)


def schema() -> ContextSchema:
    return ContextSchema(observations=OBSERVATIONS_SCHEMA, mode="action",
                         failure_patterns=FAILURE_PATTERNS, unknown="Unknown")


def game_facts(game: Any) -> InstanceFacts:
    """The rooms and the placed things of a textworld `Game`, by the names it prints."""
    facts = list(game.world.facts)
    rooms = {v.name for f in facts for v in f.arguments if v.type == "r"}
    # where each thing is at the start: in a room, in or on another thing, or carried
    holders: dict[str, set[str]] = {}
    for f in facts:
        if f.name in ("at", "in", "on") and len(f.arguments) == 2:
            holders.setdefault(f.arguments[0].name, set()).add(f.arguments[1].name)
    placed = set(rooms) | {"I"}
    changed = True
    while changed:
        changed = False
        for thing, where in holders.items():
            if thing not in placed and where & placed:
                placed.add(thing)
                changed = True
    doors = {f.arguments[1].name for f in facts if f.name == "link" and len(f.arguments) == 3}
    things = (placed | doors) - rooms - {"I", "P"}

    def names(ids: set[str]) -> frozenset[str]:
        return frozenset(n for n in (game.infos[i].name for i in ids if i in game.infos) if n)

    return InstanceFacts(locations=names(rooms), objects=names(things))


def instance_facts(env: Any) -> InstanceFacts:
    return game_facts(env.game())
