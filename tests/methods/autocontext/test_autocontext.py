"""AutoContext against the real local server, each role scripted by its prompt's title line:
Unknown markers become the Planner's gaps and its TODOs, a redundant TODO gets feedback,
replay returns to the observation of the first visit, the Extractor drops an edit its check
rejects, the contexts reach methods and are reused, and each ablation removes its part."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from conftest import read_records
from lifebench import registry
from lifebench.api import ContextSchema, RoleParams
from lifebench.config.run import LLMConfig
from lifebench.llm.client import LLMClient
from lifebench.methods.autocontext import AutoContextConfig
from lifebench.methods.autocontext.actor import Actor
from lifebench.methods.autocontext.extractor import Extractor, Knowledge, split_document
from lifebench.methods.autocontext.forest import FAILED, INIT_STATE, TodoForest, TodoPath
from lifebench.methods.autocontext.planner import Planner, knowledge_gaps
from lifebench.runner.episode import sample_fallback
from lifebench.runner.exploration import CountedExplorationEnv

PLAN_OBS = r"AutoContext planner: propose one TODO"
PLAN_RULES = r"AutoContext planner: propose TODOs"
PROMOTE = r"AutoContext planner: promote"
EXTRACT_OBS = r"AutoContext extractor: propose edits to the Observations"
EXTRACT_RULES = r"AutoContext extractor: propose edits to the Action Rules"
CHECK = r"AutoContext extractor: check one"
APPLY = r"AutoContext extractor: apply"
NAIVE = r"AutoContext naive update"
TITLES = {"plan_obs": PLAN_OBS, "plan_rules": PLAN_RULES, "promote": PROMOTE,
          "extract_obs": EXTRACT_OBS, "extract_rules": EXTRACT_RULES, "check": CHECK,
          "apply": APPLY, "naive": NAIVE}

SCHEMA = ContextSchema(observations="#### Observations\n- [location]:\n  - east: [exit] to "
                                    "[location]/Unknown", failure_patterns=(r"^You can't",))
CONFIG = AutoContextConfig(max_length=3, plan_retries=2)


def client(srv) -> LLMClient:
    return LLMClient("m", LLMConfig(base_url=srv.url, cache="off", max_retries=0))


def first_message(request: dict) -> str:
    return request["messages"][0]["content"]


def asked(srv, title: str) -> list[dict]:
    return [r for r in srv.requests() if re.search(title, first_message(r))]


def planner(srv, forest: TodoForest, config=CONFIG) -> Planner:
    return Planner(client(srv), RoleParams(), forest, "BACKGROUND", SCHEMA.text(), "Unknown",
                   config)


def explored_forest() -> TodoForest:
    forest = TodoForest("You are in the kitchen.", None)
    path = forest.check("init_state -> go east -> open door", 3)
    assert isinstance(path, TodoPath)
    path.nodes[0].result, path.nodes[1].result, path.nodes[1].failed = "Corridor.", FAILED, True
    return forest


def test_the_forest_checks_paths_and_promotions():
    forest = explored_forest()
    assert "does not exist" in forest.check("kitchen -> look", 3)
    assert "already explored" in forest.check("init_state -> go east", 3)
    assert "goes on after it" in forest.check("init_state -> go east -> open door -> go north", 3)
    assert "at most 3" in forest.check("init_state -> a -> b -> c -> d", 3)
    todo = forest.check("init_state -> go east -> go east", 3)
    assert isinstance(todo, TodoPath) and todo.nodes[0].result == "Corridor."  # shares the node
    assert "- go east: TODO" in forest.render()
    assert "not an explored node" in forest.promotion("init_state -> go west", "w")
    assert "failed" in forest.promotion("init_state -> go east -> open door", "x")
    path, name = forest.promotion("init_state -> go east", "In Corridor")
    state = forest.promote(path, name, "in the corridor")
    assert name == "in_corridor" and state.path == ("go east",)
    assert "[reach in_corridor]" in forest.render()
    assert "already" in forest.promotion("init_state -> go east", "in corridor")
    agent = TodoForest("start", None, agent_mode=True)
    assert agent.parse('init_state -> agent("collect wood") -> agent(place table)') == \
        ("init_state", ["collect wood", "place table"])
    assert 'agent("collect wood"): TODO' in (agent.check('init_state -> agent("collect wood")', 2)
                                            and agent.render())


def test_where_an_episode_ended_is_never_shown_and_nothing_runs_after_it():
    forest = TodoForest("You are in the kitchen.", None)
    path = forest.check("init_state -> put apple in fridge -> go east", 3)
    won, after = path.nodes
    won.result, won.ended = "You put the apple in the fridge.", True
    forest.prune((after,))  # the Actor drops what could not run after the end
    shown = forest.render()
    assert "- put apple in fridge: You put the apple in the fridge." in shown
    assert "go east" not in shown and "end" not in shown.replace("fridge", "")
    assert "Nothing can be run after" in forest.check("init_state -> put apple in fridge -> go east", 3)
    assert "Nothing can be run after" in forest.promotion("init_state -> put apple in fridge", "x")
    assert forest.to_json()["states"][0]["tree"][0]["ended"] is True  # kept for the record


def test_unknown_markers_are_the_gaps_the_planner_is_given_and_its_todo_joins_the_forest(
        llm_server):
    observations = ("- Kitchen:\n  - objects: fridge\n  - east: exit to Corridor\n"
                    "- Corridor:\n  - objects: Nothing\n  - east: exit to Unknown\n"
                    "  - north: closed patio door to Unknown")
    assert knowledge_gaps(observations, "Unknown") == [
        "Corridor: east: exit to Unknown", "Corridor: north: closed patio door to Unknown"]
    srv = llm_server(script=[{"match": PLAN_OBS, "replies": [
        "<thought>corridor east is Unknown</thought>\n<missing_observations>- Corridor east"
        "</missing_observations>\n<todo>\ninit_state -> go east -> go east\n</todo>"]}])
    forest = explored_forest()
    todo = planner(srv, forest).observation_todo(observations, "")
    prompt = first_message(asked(srv, PLAN_OBS)[0])
    assert "- Corridor: east: exit to Unknown" in prompt and "- go east: Corridor." in prompt
    assert isinstance(todo, TodoPath) and todo.text == "init_state -> go east -> go east"
    assert "    - go east: TODO" in forest.render()
    # A document with no Unknown says so; a None answer proposes nothing.
    srv2 = llm_server(script=[{"match": PLAN_OBS, "replies": ["<todo>None</todo>"]}])
    assert planner(srv2, forest).observation_todo("- Kitchen:\n  - east: exit to Hall", "") is None
    assert "(no entry is marked Unknown)" in first_message(asked(srv2, PLAN_OBS)[0])


def test_a_redundant_todo_gets_feedback_and_the_planner_proposes_again(llm_server):
    srv = llm_server(script=[{"match": PLAN_OBS, "replies": [
        "<todo>init_state -> go east</todo>", "<todo>hallway -> go east</todo>",
        "<todo>init_state -> go east -> go south</todo>"]},
        {"match": PLAN_RULES, "replies": [
            '```json\n["init_state -> go east", "init_state -> take knife"]\n```',
            '```json\n["init_state -> go east -> take key"]\n```']}])
    forest = explored_forest()
    plan = planner(srv, forest)
    todo = plan.observation_todo("- Corridor:\n  - south: Unknown", "")
    requests = asked(srv, PLAN_OBS)
    assert len(requests) == 3 and todo.text == "init_state -> go east -> go south"
    assert "already explored" in requests[1]["messages"][-1]["content"]
    assert "does not exist" in requests[2]["messages"][-1]["content"]
    assert plan.stats.proposed == 3 and plan.stats.admitted == 1
    todos = plan.rule_todos("")
    rules = asked(srv, PLAN_RULES)
    assert [t.text for t in todos] == ["init_state -> take knife", "init_state -> go east -> take key"]
    assert len(rules) == 2 and "init_state -> go east: " in rules[1]["messages"][-1]["content"]


def test_loop_control_reads_the_forest_and_the_document_and_says_whether_to_go_on(llm_server):
    srv = llm_server(script=[{"match": "decide whether to keep exploring", "replies": [
        "Remaining gap: south of the corridor.\n<continue>yes</continue>",
        "Remaining gap: none.\n<continue>no</continue>", "I am not sure."]}])
    plan = planner(srv, explored_forest())
    document = "- Corridor:\n  - south: Unknown"
    assert plan.keep_exploring(document, "") is True
    assert plan.keep_exploring(document, "") is False
    assert plan.keep_exploring(document, "") is True  # unreadable: the budgets still bound it
    [first, *_] = [r["messages"][-1]["content"] for r in srv.requests()]
    assert "- go east: Corridor." in first and "south: Unknown" in first
    assert plan.stats.loop_control == ["yes", "no", "unreadable"]


@pytest.fixture(scope="module")
def textworld():
    bench = registry.get_benchmark("textworld")
    split = bench.default_splits[0]
    instance = bench.instances(split)[0]
    return bench, instance


def test_replay_returns_to_the_observation_of_the_first_visit(textworld, llm_server):
    bench, instance = textworld
    env = CountedExplorationEnv(bench.make_env(instance, 0), budget=200, replay_only=True)
    first = env.reset()
    forest = TodoForest(first.text, env.snapshot())
    actor = Actor(env, SCHEMA, forest, None, RoleParams(), "", CONFIG)
    rng = random.Random(0)
    walk = actor.random_walk(forest.states[INIT_STATE], 3, sample_fallback(env), rng)
    actions = [a for a, _ in walk.steps]
    seen = walk.steps[-1][1]
    assert len(actions) == 3 and env.steps == 3
    path, name = forest.promotion(" -> ".join([INIT_STATE, *actions]), "after walk")
    state = forest.promote(path, name, "after three actions")
    probe = forest.check(f"{name} -> look", 3)
    segment = actor.run(probe)
    assert segment.start_observation == seen  # restored by reset and replay ...
    assert env.steps == 3 + 3 + 1  # ... whose three actions count, then the new one
    assert state.path == tuple(actions) and probe.nodes[0].result
    # A path through explored nodes restores the deepest one and plays only what is new.
    again = forest.check(" -> ".join([INIT_STATE, *actions, "inventory"]), 3)
    before = env.steps
    assert actor.run(again).start_observation == seen and env.steps == before + 3 + 1


def test_the_extractor_applies_accepted_and_revised_edits_and_drops_a_rejected_one(llm_server):
    srv = llm_server(script=[
        {"match": EXTRACT_OBS, "replies": [
            "<thought>two things</thought>\n<modification1>add: Kitchen objects: fridge"
            "</modification1>\n<modification2>add: Kitchen objects: unicorn</modification2>"
            "\n<modification3>None</modification3>"]},
        {"match": EXTRACT_RULES, "replies": [
            "<modification1>Add: - action: open fridge</modification1>"]},
        {"match": "unicorn", "replies": ["<decision>Reject</decision><content>None</content>"]},
        {"match": "open fridge", "replies": [
            "<decision>Revise</decision><content>Add: - action: open [container]</content>"]},
        {"match": CHECK, "replies": ["<decision>Accept</decision><content>None</content>"]},
        {"match": APPLY, "replies": ["<thought>ok</thought><knowledge>- Kitchen:\n  - objects: "
                                     "fridge</knowledge>"]}])
    extractor = Extractor(client(srv), RoleParams(), SCHEMA, "BACKGROUND", naive=False)
    updated = extractor.update(Knowledge(), "> look\nKitchen. You see a fridge.")
    applied = [r["messages"][-1]["content"] for r in asked(srv, APPLY)]
    assert len(applied) == 2 and "fridge" in applied[0] and "unicorn" not in applied[0]
    assert "open [container]" in applied[1] and "open fridge" not in applied[1]
    assert (extractor.stats.proposed, extractor.stats.accepted, extractor.stats.revised,
            extractor.stats.rejected) == (3, 1, 1, 1)
    assert updated.document().startswith("#### Observations\n- Kitchen:")
    assert split_document(updated.document()) == updated
    assert updated.section("action_rules").startswith("#### Action Rules")


def script(**overrides) -> list[dict]:
    replies = {
        "plan_obs": ["<todo>init_state -> look</todo>"],
        "plan_rules": ['```json\n["init_state -> inventory"]\n```'],
        "promote": ["None"],
        "extract_obs": ["<modification1>add: the room</modification1>"],
        "extract_rules": ["<modification1>Add: - action: look</modification1>"],
        "check": ["<decision>Accept</decision><content>None</content>"],
        "apply": ["<knowledge>- ROOM-SEEN:\n  - east: Unknown</knowledge>"],
        "naive": ["<knowledge>NAIVE NOTES</knowledge>"]}
    replies.update(overrides)
    return [{"match": TITLES[k], "replies": v} for k, v in replies.items()] + \
        [{"match": ".", "replies": ["Thought: go.\nAction: look"]}]


def run(cli, srv, out: Path, *more: str, method="react", limit="1"):
    return cli("run", "--no-progress", "--benchmark", "textworld", "--method", method,
               "--model", "m", "--base-url", srv.url, "--cache", "off", "--llm-retries", "0",
               "--limit", limit, "--max-steps", "2", "--trials", "1", "--workers", "0",
               "--out", str(out),
               "--context", "autocontext", "--context-arg", "explore_steps=12",
               "--context-arg", "max_iterations=2", *more)


def contexts(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "contexts.jsonl").read_text().splitlines()]


def saved(out: Path, key: str) -> dict:
    return json.loads((out / "contexts" / f"{key}.json").read_text())


def test_a_context_is_built_once_reaches_two_methods_and_is_reused_on_resume(cli, llm_server,
                                                                             tmp_path):
    srv = llm_server(script=script())
    out = tmp_path / "run"
    result = run(cli, srv, out, method="react,reflexion")
    assert result.returncode == 0, result.stderr
    [line] = contexts(out)
    assert line["status"] == "ok" and 0 < line["explore_steps"] <= 12
    usage = line["llm_usage"]
    assert usage["plan"]["calls"] >= 2 and usage["extract"]["calls"] >= 2
    document = saved(out, line["key"])["document"]
    assert "ROOM-SEEN" in document and document.startswith("#### Observations")
    artefacts = saved(out, line["key"])["artefacts"]
    assert artefacts["iterations"] >= 1 and artefacts["forest"]["states"][0]["name"] == INIT_STATE
    tree = artefacts["forest"]["states"][0]["tree"]
    assert {n["action"] for n in tree} >= {"look", "inventory"} and all(n["result"] for n in tree)
    records = read_records(out)
    assert {r["method"] for r in records} == {"react", "reflexion"}
    assert all(r["extra"]["context"]["name"] == "autocontext" for r in records)
    systems = [r["messages"][0]["content"] for r in srv.requests()
               if r["messages"][0]["role"] == "system"]
    assert systems and all("ROOM-SEEN" in s for s in systems)
    planned = len(asked(srv, PLAN_OBS))
    again = run(cli, srv, out, method="react,reflexion")  # a resume finds it built
    assert again.returncode == 0, again.stderr
    assert len(asked(srv, PLAN_OBS)) == planned and len(contexts(out)) == 1
    # Another results directory takes it from this one: no exploration, nothing charged.
    other = tmp_path / "other"
    third = run(cli, srv, other, "--context-cache", str(out), method="reflexion")
    assert third.returncode == 0, third.stderr
    assert len(asked(srv, PLAN_OBS)) == planned
    [copied] = read_records(other)
    assert copied["explore_steps"] == 0 and not copied["extra"]["context"]["charged"]
    assert saved(other, line["key"])["document"] == document


@pytest.mark.parametrize("ablation", ["full", "forest=false", "planner=random", "extractor=naive"])
def test_each_ablation_removes_what_it_names(cli, llm_server, tmp_path, ablation):
    srv = llm_server(script=script(plan_obs=["<todo>init_state -> look</todo>",
                                             "<todo>init_state -> look -> inventory</todo>"]))
    out = tmp_path / "run"
    more = [] if ablation == "full" else ["--context-arg", ablation]
    result = run(cli, srv, out, *more)
    assert result.returncode == 0, result.stderr
    [line] = contexts(out)
    roles = set(line["llm_usage"])
    document = saved(out, line["key"])["document"]
    planning = [first_message(r) for r in asked(srv, PLAN_OBS)]
    if ablation == "planner=random":
        assert "plan" not in roles and not planning and line["explore_steps"] > 0
        assert {"extract", "check", "apply"} <= roles
    elif ablation == "extractor=naive":
        assert {"check", "apply"}.isdisjoint(roles) and asked(srv, NAIVE)
        assert document == "NAIVE NOTES" and not asked(srv, EXTRACT_OBS)
    elif ablation == "forest=false":
        # The planner sees the states only: no action node, and it promotes nothing.
        assert planning and not any(re.search(r"^  - look: ", p, re.M) for p in planning[1:])
        assert not asked(srv, PROMOTE)
    else:
        assert {"plan", "extract", "check", "apply"} <= roles and asked(srv, PROMOTE)
        assert any(re.search(r"^  - look: ", p, re.M) for p in planning[1:])


def test_the_extractor_reads_every_segment_of_an_iteration():
    """A long rule TODO's run does not push the Observations TODO's run out of the
    Extractor's input: each segment keeps its share (its end)."""
    from lifebench.methods.autocontext.actor import Segment, joined

    observations = Segment("s0", "a kitchen", [("go north", "a hall with a red door")])
    rule = Segment("s1", "a hall", [(f"push door {i}", "nothing happens " * 20) for i in range(50)])
    text = joined([observations, rule], 2000)
    assert "a hall with a red door" in text and "push door 49" in text
    assert len(text) <= 2000 + 2 and "push door 0\n" not in text
