"""RAP against the real local server and real environments: memory filled from the oracle's
rollouts of the support splits, retrieval of the most similar task, the retrieved windows
in the executor's prompt, retrieval keys, own successes joining the memory, the state as
JSON, and the config's checks."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import read_records
from lifebench.api import StreamContext
from lifebench.embeddings import get_embedder
from lifebench.methods.rap import RapConfig, RapMethod
from lifebench.methods.rap.memory import (Experience, ExperienceMemory, MemoryStep, RetrievalKey,
                                          derived_plan, kept_steps, parse_key, spread)
from lifebench.methods.rollouts import oracle_rollout
from lifebench.registry import get_benchmark

PLANNER = r"You are the planner"
KEY = r"search key for its memory"


def rap(cli, srv, out, *args):
    return cli("run", "--no-progress", "--method", "rap", "--model", "m", "--base-url",
               srv.url, "--cache", "off", "--workers", "0", "--out", str(out), *args)


def saved_state(out: Path) -> dict:
    """The method state saved after the stream's last episode."""
    files = sorted((out / "state").rglob("*.json"), key=lambda p: int(p.stem))
    return json.loads(files[-1].read_text())["state"]


def executor_requests(srv) -> list[list[dict]]:
    return [r["messages"] for r in srv.requests()
            if not re.search(f"{PLANNER}|{KEY}", r["messages"][0]["content"])]


def entry(entry_id, task, category, actions, observations, source="support", plan=None):
    steps = tuple(MemoryStep(a, o) for a, o in zip(actions, observations))
    return Experience(entry_id, source, entry_id, task, category, plan or derived_plan(actions), steps)


# -- without an LLM

@pytest.mark.parametrize("field,value", [("plan_examples", -1), ("act_examples", -2),
                                         ("act_window", 0), ("search_window", 0), ("history", 0),
                                         ("support_limit", -1), ("temperature", -0.5),
                                         ("max_tokens", 0), ("extra_support_split", " valid_unseen"),
                                         ("support_paths", "human")])
def test_bad_config_values_raise(field, value):
    with pytest.raises(ValueError, match=field):
        RapConfig(**{field: value})


def test_a_bad_config_value_is_one_line_on_the_command_line(cli, tmp_path):
    result = cli("run", "--no-progress", "--method", "rap", "--model", "m", "--base-url",
                 "http://127.0.0.1:9/v1", "--benchmark", "plancraft", "--limit", "1",
                 "--out", str(tmp_path / "out"), "--method-arg", "act_window=0")
    assert result.returncode != 0 and "act_window must be >= 1" in result.stderr
    assert "Traceback" not in result.stderr


def test_retrieval_prefers_the_most_similar_task_and_centres_windows_on_the_key():
    memory = ExperienceMemory(get_embedder())
    memory.add(entry("heat-egg", "heat some egg and put it in garbagecan.", "heat",
                     ["go to fridge 1", "open fridge 1", "take egg 1 from fridge 1", "go to microwave 1",
                      "heat egg 1 with microwave 1", "go to garbagecan 1", "move egg 1 to garbagecan 1"],
                     ["You arrive at fridge 1. The fridge 1 is closed.", "You open the fridge 1. In it, you see a egg 1.",
                      "You pick up the egg 1 from the fridge 1.", "You arrive at microwave 1.",
                      "You heat the egg 1 using the microwave 1.", "You arrive at garbagecan 1.",
                      "You move the egg 1 to the garbagecan 1."]))
    memory.add(entry("clean-mug", "put a clean mug in coffeemachine.", "clean",
                     ["go to countertop 1", "take mug 1 from countertop 1", "go to sinkbasin 1",
                      "clean mug 1 with sinkbasin 1", "go to coffeemachine 1", "move mug 1 to coffeemachine 1"],
                     ["You arrive at countertop 1. On the countertop 1, you see a mug 1.",
                      "You pick up the mug 1 from the countertop 1.", "You arrive at sinkbasin 1.",
                      "You clean the mug 1 using the sinkbasin 1.", "You arrive at coffeemachine 1.",
                      "You move the mug 1 to the coffeemachine 1."]))
    memory.add(entry("examine-book", "look at book under the desklamp.", "examine",
                     ["go to bed 1", "take book 1 from bed 1", "go to sidetable 1", "use desklamp 1"],
                     ["You arrive at bed 1. On the bed 1, you see a book 1.", "You pick up the book 1 from the bed 1.",
                      "You arrive at sidetable 1. On the sidetable 1, you see a desklamp 1.",
                      "You turn on the desklamp 1."]))
    query = "put a clean cup in the coffee machine."
    assert [e.entry_id for e in memory.plan_examples(query, "clean", 3)][0] == "clean-mug"
    assert [e.entry_id for e in memory.plan_examples("warm an egg, then throw it away.", "", 1)] == ["heat-egg"]
    # without a key: the best entries from their first step, `window` steps long
    windows = memory.retrieve(query, "clean", "", None, k=2, window=3)
    assert [(w.entry.entry_id, w.start, w.end) for w in windows][0] == ("clean-mug", 0, 3)
    # an action key: centred on the best-matching action (the egg's heating, step 5)
    [heat] = memory.retrieve("heat some egg and put it in garbagecan.", "heat", "", RetrievalKey("action", "heat"),
                             k=1, window=2)
    assert (heat.entry.entry_id, heat.start, heat.end) == ("heat-egg", 2, 6)
    assert "Action: heat egg 1 with microwave 1" in heat.render(1)
    assert "Action: take egg 1 from fridge 1" in heat.render(1) and "Action: open fridge 1" not in heat.render(1)
    # a search key: centred on the observation where the thing sought was seen
    [lamp] = memory.retrieve("look at book under the desklamp.", "examine", "", RetrievalKey("search", "sidetable"),
                             k=1, window=1)
    assert (lamp.start, lamp.end) == (1, 3) and "(steps 2 to 3 of 4)" in lamp.render(1)
    # an oracle rollout of the episode's own instance is never retrieved (it is the answer)
    assert memory.plan_examples(query, "clean", 1, exclude_support_of="clean-mug")[0].entry_id != "clean-mug"


def test_keys_plans_steps_and_the_support_limit():
    assert parse_key("search: desklamp.") == RetrievalKey("search", "desklamp")
    assert parse_key("> Action: heat") == RetrievalKey("action", "heat")
    assert parse_key("I think we should look around") is None
    assert derived_plan(["go to bed 1", "take book 1 from bed 1"]) == \
        "To solve the task, go to bed 1, then take book 1 from bed 1."
    steps = kept_steps([("open safe 1", "Nothing happens."), ("go to bed 1", "You arrive at bed 1.")],
                       ["try the safe", "the bed then"], ("Nothing happens.",))
    assert steps == (MemoryStep("go to bed 1", "You arrive at bed 1.", "the bed then"),)
    items = ["a1", "a2", "a3", "b1", "c1", "c2"]
    assert spread(items, lambda s: s[0], 4) == ["a1", "b1", "c1", "a2"]
    assert spread(items, lambda s: s[0], None) == items


def test_the_state_round_trips_through_json():
    method = RapMethod()
    method.setup(StreamContext(benchmark=get_benchmark("plancraft", None), split="val.small", seed=0,
                               budget=None, model="m"))
    method.memory.add(entry("a", "craft a stick", "stick", ["move: from [I1] to [A1] with quantity 1"],
                            ["Craft an item of type: stick"], source="own", plan="To solve the task, craft."))
    method.memory.add(Experience("b", "support", "b", "craft a torch", "", "To solve the task, go.",
                                 (MemoryStep("x", "y", "a thought"),)))
    again = RapMethod()
    again.setup(method.ctx)
    again.load_state(json.loads(json.dumps(method.state())))
    assert again.memory.entries == method.memory.entries and len(again.memory) == 2
    with pytest.raises(ValueError, match="version"):
        again.load_state({"memory": {"version": 99, "entries": []}})


# -- through the CLI, the local server and the real environments

def test_alfworld_memory_from_both_support_splits_and_the_nearest_task_first(cli, llm_server, tmp_path):
    srv = llm_server(script=[
        {"match": PLANNER, "replies": ["To solve the task, find the alarmclock, take it, and use the desklamp."]},
        {"match": KEY, "replies": ["search: desklamp"]},
        "Thought: First I look for the alarmclock.\nAction: go to desk 1"])
    out = tmp_path / "out"
    result = rap(cli, srv, out, "--benchmark", "alfworld", "--split", "valid_unseen.query", "--limit", "1",
                 "--max-steps", "2", "--method-arg", "support_limit=6",
                 "--method-arg", "extra_support_split=valid_unseen.support")
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    entries = saved_state(out)["memory"]["entries"]
    train = [e for e in entries if e["entry_id"].startswith("support:valid_train:")]
    few = [e for e in entries if e["entry_id"].startswith("support:valid_unseen.support:")]
    # 6 of each split, spread over the task types; all from the oracle's winning rollouts
    assert len(train) == len(few) == 6 == len({e["category"] for e in train})
    assert record["extra"]["rap_memory_size"] == 12 and len(entries) == 12
    benchmark = get_benchmark("alfworld", None)
    first = benchmark.instances("valid_train")[0]
    rollout = oracle_rollout(benchmark, first, 50)
    [stored] = [e for e in train if e["instance_id"] == first.instance_id]
    assert [s["action"] for s in stored["steps"]] == rollout.actions
    assert stored["task"] == benchmark.task_text(rollout.first) and not stored["task"].startswith("You are")
    assert stored["plan"] == derived_plan(rollout.actions) and stored["category"] == "examine"
    # the nearest task: valid_unseen.support has this very task (another room), same type
    instance = benchmark.instance("valid_unseen.query", record["instance_id"])
    assert instance.metadata["task_type"] == "examine"
    best = record["extra"]["rap_plan_examples"][0]
    [nearest] = [e for e in few if e["entry_id"] == best]
    assert nearest["task"] == "examine the alarmclock with the desklamp."
    assert len(record["extra"]["rap_plan_examples"]) == 3
    planner = [r["messages"] for r in srv.requests() if re.search(PLANNER, r["messages"][0]["content"])]
    assert f"Task: {nearest['task']}\nPlan: {nearest['plan']}" in planner[0][1]["content"]
    # its window is the first example of the executor's first prompt
    executor = executor_requests(srv)
    step = nearest["steps"][0]
    shown = (f"Example 1. Task: {nearest['task']}\nPlan: {nearest['plan']}\n"
             f"Action: {step['action']}\nObservation: {step['observation']}")
    assert shown in executor[0][1]["content"]
    assert "Your plan: To solve the task, find the alarmclock" in executor[0][1]["content"]
    # the thought made a search key: the second prompt has search_examples (8) windows
    assert record["extra"]["rap_keys"] == ["search: desklamp"]
    assert "Example 8." in executor[1][1]["content"] and "Example 8." not in executor[0][1]["content"]
    assert record["llm_usage"]["retrieval_key"]["calls"] == 1 and record["llm_usage"]["planner"]["calls"] == 1


def test_an_unknown_extra_support_split_is_a_one_line_error(cli, llm_server, tmp_path):
    srv = llm_server(script=["Action: look"])
    result = rap(cli, srv, tmp_path / "out", "--benchmark", "alfworld", "--split", "valid_unseen",
                 "--limit", "1", "--max-steps", "1", "--method-arg", "extra_support_split=valid_unsen.support",
                 "--method-arg", "support_memory=false")
    assert result.returncode != 0
    assert "valid_unsen.support" in result.stderr and "did you mean 'valid_unseen.support'" in result.stderr
    assert "Traceback" not in result.stderr


def test_alfworld_own_successes_join_the_memory_and_come_back(cli, llm_server, tmp_path):
    benchmark = get_benchmark("alfworld", None)
    instance = benchmark.instances("valid_unseen")[0]
    walkthrough = oracle_rollout(benchmark, instance, 50).actions
    replies = [f"Thought: OWN-STEP-{i}.\nAction: {a}" for i, a in enumerate(walkthrough)]
    srv = llm_server(script=[{"match": PLANNER, "replies": ["To solve the task, PLAN-A.", "To solve the task, PLAN-B."]},
                             {"match": KEY, "replies": ["action: take"]}, *replies, *replies])
    out = tmp_path / "out"
    result = rap(cli, srv, out, "--benchmark", "alfworld", "--split", "valid_unseen", "--limit", "1",
                 "--trials", "2", "--method-arg", "support_memory=false")
    assert result.returncode == 0, result.stderr
    first, second = read_records(out)
    assert first["success"] and second["success"]
    own = f"own:0:{instance.instance_id}"
    assert first["extra"]["rap_memory_size"] == 0 and first["extra"]["rap_added"]
    assert first["extra"]["rap_retrieved"] == [] and "retrieval_key" not in first["llm_usage"]
    assert second["extra"]["rap_memory_size"] == 1 and second["extra"]["rap_plan_examples"] == [own]
    assert second["extra"]["rap_retrieved"] == [own] and second["extra"]["rap_keys"]
    entries = saved_state(out)["memory"]["entries"]
    assert [e["entry_id"] for e in entries] == [own, f"own:1:{instance.instance_id}"]
    assert [e["plan"] for e in entries] == ["To solve the task, PLAN-A.", "To solve the task, PLAN-B."]
    assert [s["action"] for s in entries[0]["steps"]] == walkthrough
    assert [s["thought"] for s in entries[0]["steps"]] == [f"OWN-STEP-{i}." for i in range(len(walkthrough))]
    # the second trial's executor sees the first trial's steps with their thoughts
    later = executor_requests(srv)[len(walkthrough)]
    assert "Plan: To solve the task, PLAN-A.\nThought: OWN-STEP-0.\nAction: " + walkthrough[0] in later[1]["content"]


def test_plancraft_without_support_memory_learns_from_its_successes(cli, llm_server, tmp_path):
    srv = llm_server(policy="plancraft", script=[{"match": PLANNER, "replies": ["To solve the task, craft it."]}])
    out = tmp_path / "out"
    result = rap(cli, srv, out, "--benchmark", "plancraft", "--split", "val.small", "--limit", "2",
                 "--method-arg", "support_memory=false")
    assert result.returncode == 0, result.stderr
    first, second = read_records(out)
    assert first["success"] and second["success"]
    assert first["extra"]["rap_memory_size"] == 0 and first["extra"]["rap_retrieved"] == []
    own = f"own:0:{first['instance_id']}"
    assert second["extra"]["rap_memory_size"] == 1 and second["extra"]["rap_retrieved"] == [own]
    [stored, _] = saved_state(out)["memory"]["entries"]
    assert stored["task"].startswith("Craft an item of type: ") and len(stored["steps"]) == first["steps"]
    prompts = [m for m in executor_requests(srv) if "Example 1. Task: " + stored["task"] in m[1]["content"]]
    assert len(prompts) == second["steps"]  # every step of the second episode saw the first
