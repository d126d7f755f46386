"""TextWorld's instance contexts on the real cooking games (IGE's): the schema, the failure
text the game prints (Inform 7's parser and library, TextWorld's cooking extension), and
the ground truth (rooms, placed things, doors), which a walk through every room sees in
full."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from lifebench.api import ContextSchema, coverage, normalise_name
from lifebench.benchmarks.textworld import TextWorldBenchmark

DATA = Path(os.environ.get("LIFEBENCH_DATA", "../shared/data")).resolve() / "textworld"
pytestmark = [pytest.mark.skipif(not (DATA / "ige_cooking").is_dir(),
                                 reason="IGE's cooking games not found (set LIFEBENCH_DATA)"),
              pytest.mark.filterwarnings("ignore:.*is not fully supported")]

ROOM = re.compile(r"^-= (.+) =-$", re.M)
BACK = {"north": "south", "south": "north", "east": "west", "west": "east"}


@pytest.fixture(scope="module")
def bench():
    return TextWorldBenchmark()


def named_in(text: str, name: str) -> bool:
    return f" {normalise_name(name)} " in f" {normalise_name(text)} "


def walk_every_room(env) -> list[str]:
    """From reset, depth first over the admissible commands: in each room open whatever
    opens (doors, containers), then go each way not walked yet and come back."""
    texts = [env.reset().text]

    def act(action: str) -> str:
        texts.append(env.step(action).observation.text)
        return texts[-1]

    seen: set[str] = set()

    def visit(room: str) -> None:
        seen.add(room)
        for action in sorted(a for a in env.valid_actions() if a.startswith("open ")):
            act(action)
        for way in BACK:
            if f"go {way}" in env.valid_actions():
                there = ROOM.search(act(f"go {way}")).group(1)
                if there not in seen:
                    visit(there)
                act(f"go {BACK[way]}")

    visit(ROOM.search(texts[0]).group(1))
    return texts


def test_schema_and_the_failure_text_the_game_prints(bench):
    schema = bench.context_schema()
    assert isinstance(schema, ContextSchema) and schema.mode == "action"
    text = schema.text()
    assert "Unknown" in text and "#### Observations" in text and "#### Action Rules" in text
    assert all(f"  - {way}: " in text for way in BACK)

    # cooking_item5_seed_10980: the living room (a closed fiberglass door south), the
    # kitchen north (a table with the cookbook, a counter with a red apple and the knife, a
    # closed fridge), the corridor east of the kitchen
    env = bench.make_env(bench.instances("ige-cooking")[0], 0)
    first = env.reset().text
    assert "-= Livingroom =-" in first and not schema.is_failure(first)
    played = [  # (command, the game's answer, a failure?)
        ("dance", "That's not a verb I recognise.", True),
        ("", "I beg your pardon?", True),
        ("take unicorn", "You can't see any such thing.", True),
        ("take", "What do you want to take?", True),
        ("go", "You'll have to say which compass direction to go in.", True),
        ("go west", "You can't go that way.", True),
        ("go south", "You have to open the fiberglass door first.", True),
        ("take sofa", "That's fixed in place.", True),
        ("eat sofa", "That's plainly inedible.", True),
        ("open sofa", "It isn't something you can open.", True),
        ("open fiberglass door", "You open fiberglass door.", False),
        ("open fiberglass door", "That's already open.", True),
        ("go north", None, False),  # the kitchen
        ("examine fridge", "The fridge looks durable. It is closed.", False),
        ("take cookbook", "You take the cookbook from the table.", False),
        ("take cookbook", "You already have that.", True),
        ("put cookbook in fridge", "The fridge is closed.", True),
        ("unlock fridge with cookbook", "That's unlocked at the moment.", True),
        ("put cookbook on fridge", "Putting things on the fridge would achieve nothing.", True),
        ("push counter", "It is fixed in place.", True),
        ("attack counter", "Violence isn't the answer to this one.", True),
        ("enter fridge", "That's not something you can enter.", True),
        ("give cookbook to counter", "You can only do that to something animate.", True),
        ("throw cookbook at counter", "Futile.", True),
        ("wear cookbook", "You can't wear that!", True),
        ("cook cookbook with oven", "Can only cook food.", True),
        ("put knife on table", "You need to take the knife first.", True),
        ("take knife", "You take the knife from the counter.", False),
        ("dice cookbook with knife", "Can only cut cuttable food.", True),
        ("prepare meal", "You still miss something.", True),
        ("open fridge", None, False),  # "You open the fridge, revealing a white onion, ..."
        ("lock fridge with knife", "First you would have to close the fridge.", True),
        ("insert cookbook into fridge", "You put the cookbook into the fridge.", False),
        ("take red apple", "You take the red apple from the counter.", False),
        ("cook red apple with knife", "Cooking requires a source of heat.", True),
        ("slice red apple", "(with the knife)\nYou slice the red apple.", False),
        ("chop red apple with knife", "The red apple is already sliced.", True),
        ("inventory", "You are carrying: a sliced red apple and a knife.", False),
        ("wait", "Time passes.", False),
        ("go east", None, False),  # the corridor
        ("prepare meal", "Can only prepare meal in the -= Kitchen =-.", True),
    ]
    for action, answer, failed in played:
        observation = env.step(action).observation.text
        if answer is not None:
            assert observation == answer, action
        assert schema.is_failure(observation) is failed, (action, observation)
    # an implicit choice noted first, then the refusal: still a failure
    assert schema.is_failure("(with the fridge)\nThe fridge is fixed in place.")
    # a failure sentence inside a longer answer is not a failure
    assert not schema.is_failure("You open the fridge. You can't go that way.")
    env.close()


@pytest.mark.parametrize("index", [0, 12])
def test_instance_facts_are_what_a_walk_through_every_room_sees(bench, index):
    instance = bench.instances("ige-cooking")[index]
    env = bench.make_env(instance, 0)
    first = env.reset().text
    facts = bench.instance_facts(env)
    assert len(facts.locations) == 12 and {"kitchen", "livingroom"} <= facts.locations
    assert {"cookbook", "knife", "fridge", "counter", "stove", "oven"} <= facts.objects
    assert any(n.endswith(" door") for n in facts.objects)  # doors are things
    assert not facts.objects & {"meal", "I", "P", "player"}

    # the walkthrough sees part of the house
    walked = [first] + [env.step(a).observation.text for a in env.walkthrough()[:20]]
    partial = coverage("\n\n".join(walked), facts)["all"]
    assert 0.0 < partial < 1.0

    texts = walk_every_room(env)  # asks for admissible commands: tracking on
    assert 50 <= len(texts) - 1 <= 60
    for name in facts.locations | facts.objects:
        assert any(named_in(text, name) for text in texts), name
    document = "\n\n".join(texts)
    # measured: 1.0 on each of the 25 games (51 to 56 commands); the first observation
    # alone: 0.08 to 0.33
    assert coverage(document, facts) == {"locations": 1.0, "objects": 1.0, "all": 1.0}
    assert coverage("", facts) == {"locations": 0.0, "objects": 0.0, "all": 0.0}
    assert 0.0 < coverage(first, facts)["all"] <= 0.33
    # the ground truth is the game's, whatever was played since (and on the tracked engine)
    assert bench.instance_facts(env) == facts
    env.close()
