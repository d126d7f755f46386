"""ScienceWorld's instance contexts on the real simulator (one short task, lifespan-longest-
lived:93, loaded into this process's capped JVM): the schema, the failure text the
simulator prints, and the ground truth (rooms, things), which a walk through every room
sees in full."""

from __future__ import annotations

import pytest

from lifebench.api import ContextSchema, coverage, normalise_name
from lifebench.benchmarks.scienceworld import ScienceWorldBenchmark, jvm

INSTANCE = "lifespan-longest-lived:93"
ROOMS = {"art studio", "bathroom", "bedroom", "foundry", "greenhouse", "hallway", "kitchen",
         "living room", "outside", "workshop"}


@pytest.fixture(scope="module")
def bench():
    yield ScienceWorldBenchmark()
    jvm.discard()  # this process's simulator must not outlive the module


@pytest.fixture
def env(bench):
    env = bench.make_env(bench.instance("step18-v1", INSTANCE), 0)
    yield env
    env.close()


def named_in(text: str, name: str) -> bool:
    return f" {normalise_name(name)} " in f" {normalise_name(text)} "


def walk_every_room(env) -> list[str]:
    """From reset: the inventory, then each room the agent can teleport to (in the valid
    actions' order): look around, open what opens there (not doors), look around again."""
    texts = [env.reset().text, env.step("inventory").observation.text]
    rooms = [a.removeprefix("teleport to ") for a in env.valid_actions()
             if a.startswith("teleport to ")]
    assert set(rooms) == ROOMS
    for room in rooms:
        texts.append(env.step(f"teleport to {room}").observation.text)
        texts.append(env.step("look around").observation.text)
        opens = [a for a in env.valid_actions() if a.startswith("open ") and "door" not in a]
        texts += [env.step(a).observation.text for a in opens]
        if opens:
            texts.append(env.step("look around").observation.text)
    return texts


def test_schema_and_the_failure_text_the_simulator_prints(bench, env):
    schema = bench.context_schema()
    assert isinstance(schema, ContextSchema) and schema.mode == "action"
    text = schema.text()
    assert "Unknown" in text and "#### Observations" in text and "#### Action Rules" in text
    assert "- [location]:" in text and "doors:" in text and "inventory:" in text

    first = env.reset().text
    assert "This room is called the greenhouse." in first and not schema.is_failure(first)
    played = [  # (action, the simulator's answer, a failure?)
        ("flurb", "No known action matches that input.", True),
        ("go to kitchen", "No known action matches that input.", True),  # not adjacent
        ("go to hallway", "You move to the hallway.", False),
        ("go to hallway", "It's not clear how to get there from here.", True),
        ("teleport to kitchen", "You teleport to the kitchen.", False),
        ("open table", "The table is not openable.", True),
        ("close table", "The table is not closeable.", True),
        ("close cupboard", "The cupboard is already closed.", True),
        ("look in cupboard", "The cupboard isn't open, so you can't see inside.", True),
        ("open fridge", "The fridge is now open.", False),
        ("open fridge", "The fridge is already open.", True),
        ("pick up fridge", "The fridge is not moveable.", True),
        ("pick up air", "You can't pick up a gas directly.", True),
        ("pour air into sink", "The kitchen the air is in is not movable.", True),
        ("eat chair", "The chair is not edible.", True),
        ("activate chair", "The chair is not something that can be activated.", True),
        ("activate stove", "The stove is now activated.", False),
        ("activate stove", "The stove is already activated.", True),
        ("read table", "It's not clear how to read that.", True),
        ("flush sink", "It's not clear how to flush that.", True),
        ("mix glass cup", "That container is empty, so there are no items to mix.", True),
        ("dunk glass cup in table", "The table does not contain any liquids to dunk into.", True),
        ("move glass cup to glass cup", "You can't move something into itself.", True),
        ("put thermometer in oven", "That can't be moved there, because the oven isn't open.", True),
        ("pick up thermometer", "You move the thermometer to the inventory.", False),
        ("put thermometer in oven", "That can't be moved there, because the oven isn't open.", True),
        ("look at chair", "a chair. On the chair is: nothing.", False),
    ]
    for action, answer, failed in played:
        observation = env.step(action).observation.text
        assert observation == answer, action
        assert schema.is_failure(observation) is failed, action
    # A name two things share: the simulator asks which one (not a failure), and takes the
    # next command as the answer; one that is not a number is lost.
    ambiguous = env.step("pick up orange").observation.text
    assert ambiguous.startswith("Ambiguous request: Please enter the number for the action "
                                "you intended (or blank to cancel):\n0:\tpick up orange")
    assert not schema.is_failure(ambiguous)
    lost = env.step("look around").observation.text
    assert lost.startswith("Unknown action.  Type 'help' for a list of actions")
    assert schema.is_failure(lost)
    for observation in (env.step("look around").observation.text,
                        env.step("inventory").observation.text, env.query("look")):
        assert not schema.is_failure(observation)
    # a failure sentence inside a longer answer is not a failure
    assert not schema.is_failure("You teleport to the kitchen.\nThe fridge is already open.")


def test_instance_facts_are_what_a_walk_through_every_room_sees(bench, env):
    with pytest.raises(RuntimeError):
        bench.instance_facts(env)
    first = env.reset().text
    facts = bench.instance_facts(env)
    assert facts.locations == ROOMS
    assert {"fridge", "stove", "thermometer", "air", "water", "bee hive", "orange"} <= facts.objects
    # living things by their kind, not the simulator's ids; no agent, terminals or doors
    assert "bee" in facts.objects and not {"bee 0", "plant"} & facts.objects
    assert not facts.objects & {"agent", "inventory", "terminal 1", "anode", "door", "drain",
                                "universe", "sewer"}
    assert len(facts.objects) == 65

    # the oracle's path (4 actions) sees part of it
    oracle = bench.oracle(env)
    texts, observation = [first], env.reset()
    for _ in range(4):
        step = env.step(oracle.next_action(observation))
        observation = step.observation
        texts.append(observation.text)
    partial = coverage("\n\n".join(texts), facts)
    assert 0.0 < partial["all"] < 0.5

    texts = walk_every_room(env)
    assert len(texts) - 1 == 42  # actions
    schema = bench.context_schema()
    assert not any(schema.is_failure(t) for t in texts)
    for name in facts.locations | facts.objects:
        assert any(named_in(text, name) for text in texts), name
    document = "\n\n".join(texts)
    # measured on step18-v1's 18 instances: 1.0 on 16 (here too), 0.988 and 0.975 where an
    # animal's stage does not print its kind (a common toad's "frog egg"; a frog's
    # "tadpole", a moth's "caterpillar" by the time the walk reaches the outside)
    assert coverage(document, facts) == {"locations": 1.0, "objects": 1.0, "all": 1.0}
    assert coverage("", facts) == {"locations": 0.0, "objects": 0.0, "all": 0.0}
    # the ground truth is the world as the episode started, whatever was played since
    assert bench.instance_facts(env) == facts
