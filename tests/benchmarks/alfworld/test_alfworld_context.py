"""ALFWorld's instance contexts on the real games: the schema, the failure text the game
prints, and the ground truth (receptacles and the objects they hold), which a walk over
every receptacle sees in full."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from lifebench.api import ContextSchema, coverage, normalise_name
from lifebench.benchmarks.alfworld import AlfworldBenchmark
from lifebench.benchmarks.alfworld.context import FAILURE_TEXT

DATA = Path(os.environ.get("LIFEBENCH_DATA", "../shared/data")).resolve() / "alfworld"
pytestmark = pytest.mark.skipif(not (DATA / "json_2.1.1").is_dir(),
                                reason="ALFWorld data not found (set LIFEBENCH_DATA)")

# A bedroom, a kitchen, a living room and a bathroom of valid_unseen (its 4 scenes).
SCENES = (308, 10, 219, 424)


@pytest.fixture(scope="module")
def bench():
    return AlfworldBenchmark()


def one_per_scene(bench):
    seen = {}
    for instance in bench.instances("valid_unseen"):
        seen.setdefault(instance.metadata["scene"], instance)
    return [seen[s] for s in SCENES]


def named_in(text: str, name: str) -> bool:
    return f" {normalise_name(name)} " in f" {normalise_name(text)} "


def listed_receptacles(first_observation: str) -> list[str]:
    room = first_observation.split("Your task is to:")[0]
    return re.findall(r"\ban? ([a-z]+ \d+)", room)


def walk_every_receptacle(env, max_steps: int) -> tuple[list[str], int]:
    """From reset: go to each receptacle the room lists, in its order, and open it when it
    opens; only admissible commands. A receptacle that shares its place with the one the
    agent stands at cannot be gone to from there: the walk goes to another first."""
    first = env.reset().text
    texts, steps, todo = [first], 0, listed_receptacles(first)
    while todo and steps < max_steps:
        valid = env.valid_actions()
        target = next((r for r in todo if f"go to {r}" in valid), None)
        if target is None:
            texts.append(env.step(next(c for c in valid if c.startswith("go to "))).observation.text)
            steps += 1
            continue
        todo.remove(target)
        texts.append(env.step(f"go to {target}").observation.text)
        steps += 1
        if f"open {target}" in env.valid_actions():
            texts.append(env.step(f"open {target}").observation.text)
            steps += 1
    assert not todo, f"the walk reached every receptacle (left: {todo})"
    return texts, steps


def test_schema_and_the_failure_text_the_game_prints(bench):
    schema = bench.context_schema()
    assert isinstance(schema, ContextSchema) and schema.mode == "action"
    text = schema.text()
    assert "Unknown" in text and "#### Observations" in text and "#### Action Rules" in text
    assert "has_in_or_on:" in text and "start:" in text

    instance = one_per_scene(bench)[0]  # bedroom 308: drawer 1 is closed, holds a pen 2
    env = bench.make_env(instance, 0)
    first = env.reset().text
    assert not schema.is_failure(first)
    failures = {
        "jump around": "a command the game does not know",
        "take pen 2 from drawer 1": "from a receptacle the agent is not at",
        "open drawer 1": "a receptacle the agent is not at",
        "go to kitchen 1": "a place that is not there",
    }
    for action, why in failures.items():
        bad = env.step(action).observation.text
        assert bad == FAILURE_TEXT == "Nothing happens.", why
        assert schema.is_failure(bad) and schema.is_failure(f"{bad}\n"), why
    successes = {
        "go to drawer 1": "You arrive at drawer 1. The drawer 1 is closed.",
        "open drawer 1": "You open the drawer 1. The drawer 1 is open. In it, you see a creditcard 1, and a pen 2.",
        "take pen 2 from drawer 1": "You pick up the pen 2 from the drawer 1.",
        "inventory": "You are carrying: a pen 2.",
        "examine pen 2": "There's nothing special about pen 2.",
        "close drawer 1": "You close the drawer 1.",
        "look": "You are facing the drawer 1. Next to it, you see nothing.",
        "go to desk 2": "You arrive at desk 2. On the desk 2, you see a alarmclock 1.",
    }
    for action, expected in successes.items():
        assert action in env.valid_actions(), action
        observation = env.step(action).observation.text
        assert observation == expected and not schema.is_failure(observation), action
    # hands full: taking a second object fails with the same sentence
    bad = env.step("take alarmclock 1 from desk 2").observation.text
    assert schema.is_failure(bad)
    # a failure named inside a longer text is not a failure
    assert not schema.is_failure("You open the drawer 1. Nothing happens. In it, you see nothing.")
    env.close()


@pytest.mark.parametrize("scene", SCENES)
def test_instance_facts_are_what_a_walk_over_the_receptacles_sees(bench, scene):
    instance = next(i for i in one_per_scene(bench) if i.metadata["scene"] == scene)
    env = bench.make_env(instance, 0)
    with pytest.raises(RuntimeError):
        bench.instance_facts(env)
    first = env.reset().text
    facts = bench.instance_facts(env)
    assert facts.locations and facts.objects
    assert all(re.fullmatch(r"[a-z]+ \d+", n) for n in facts.locations | facts.objects)
    # the locations are the receptacles, all named in the first observation
    assert facts.locations == frozenset(listed_receptacles(first))
    assert not {n for n in facts.locations | facts.objects if n.startswith(("loc ", "agent"))}
    # the task's object is among the objects (e.g. "alarmclock" for AlarmClock)
    kind = instance.metadata["object"].lower()
    assert any(n.split()[0] == kind for n in facts.objects), kind

    # the oracle's path alone sees only part of the room
    walkthrough = env.walkthrough()
    oracle_texts = [first] + [env.step(a).observation.text for a in walkthrough]
    partial = coverage("\n\n".join(oracle_texts), facts)
    assert 0.0 < partial["all"] < 1.0
    # the ground truth is the game's initial state, whatever was played since
    assert bench.instance_facts(env) == facts

    texts, steps = walk_every_receptacle(env, 3 * len(facts.locations))
    assert steps < 3 * len(facts.locations)
    for name in facts.locations | facts.objects:
        assert any(named_in(text, name) for text in texts), name
    document = "\n\n".join(texts)
    # measured: 1.0 on each of the 134 games of valid_unseen
    assert coverage(document, facts) == {"locations": 1.0, "objects": 1.0, "all": 1.0}
    assert coverage("", facts) == {"locations": 0.0, "objects": 0.0, "all": 0.0}
    assert bench.instance_facts(env) == facts
    env.close()


def test_objects_no_observation_shows_are_left_out(bench):
    """The bedroom's window, blinds and light switch are PDDL objects in no receptacle: the
    game never prints them, so they are not facts."""
    instance = one_per_scene(bench)[0]
    env = bench.make_env(instance, 0)
    env.reset()
    pddl_facts, entities = env.start_facts()
    every_object = {entities[v.name].name for f in pddl_facts for v in f.arguments
                    if v.type == "object"}
    facts = bench.instance_facts(env)
    left_out = every_object - facts.objects
    assert {"window 1", "blinds 1", "lightswitch 1"} <= left_out
    texts, _ = walk_every_receptacle(env, 60)
    for name in left_out:
        assert not any(named_in(text, name) for text in texts), name
    env.close()
