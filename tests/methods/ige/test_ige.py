"""IGE against the real local server, on real environments: the archive's update rule, returns
by reset and replay (counted as steps) that give back the observation of the stored visit,
a lost branch that ends only the branch, a run on every benchmark (Crafter refused, with
its reason), and an instance context reaching both prompts. The server routes replies by
the prompt's first line: `select` prompts get the state choices, `explore` prompts the
actions, each in order."""

from __future__ import annotations

import json
import re

import pytest

from conftest import read_records
from lifebench.methods.ige.archive import (ADDED, FORCED, KEPT, REPLACED, Archive, Entry, Trace,
                                           forced_overwrite)
from lifebench.methods.ige.cells import Cell, carried, place_in
from lifebench.methods.ige.replies import marked_action, match_action, parse_action, parse_choice

SELECT = "(?m)^Choose the state to continue exploring from"
EXPLORE = "(?m)^Act in the environment"


def ige(cli, srv, out, *args):
    return cli("run", "--no-progress", "--method", "ige", "--model", "m", "--base-url", srv.url,
               "--cache", "off", "--workers", "0", "--out", str(out), *args)


def script(choices: list[str], actions: list[str]) -> list[dict]:
    return [{"match": SELECT, "replies": choices}, {"match": EXPLORE, "replies": actions}]


def prompts_of(srv, head: str) -> list[str]:
    users = [r["messages"][-1]["content"] for r in srv.requests()]
    return [u for u in users if re.match(head.replace("(?m)", ""), u)]


def trajectory(out) -> list[dict]:
    [path] = (out / "trajectories").glob("*.jsonl")
    return json.loads(path.read_text().splitlines()[0])["steps"]


def state_lines(prompt: str) -> list[str]:
    return re.findall(r"^State \d+: .*$", prompt, re.M)


# -- the pieces, without a server

def test_update_rule_shortest_path_wins_ties_go_to_the_newest_and_forced_cases():
    kitchen = Cell("Kitchen", "nothing", 0.0, "f1")
    def entry(n, cell=kitchen):
        return Entry(cell, Trace("start", tuple((f"a{i}", f"o{i}") for i in range(n))), None, n)
    archive = Archive()
    assert archive.offer(entry(3)) == ADDED
    assert archive.offer(entry(4)) == KEPT and len(archive.listed()[0].trace) == 3
    tie = entry(3)
    assert archive.offer(tie) == REPLACED and archive.listed()[0] is tie  # a tie: the newest
    assert archive.offer(entry(1)) == REPLACED and len(archive.listed()[0].trace) == 1
    assert archive.offer(entry(5), forced=True) == FORCED and len(archive.listed()[0].trace) == 5
    other = Cell("Corridor", "nothing", 1.0, "f2")
    archive.offer(entry(2, other))
    assert [e.cell.location for e in archive.listed()] == ["Kitchen", "Corridor"]  # order kept
    assert archive.remove([0, 1], keep=[1]) == [0] and len(archive) == 1
    assert archive.remove([0]) == [] and len(archive) == 1  # never the last entry
    assert forced_overwrite("textworld", "examine cookbook") and forced_overwrite("textworld", "look")
    assert forced_overwrite("textworld", "prepare meal") and not forced_overwrite("textworld", "go east")
    assert not forced_overwrite("alfworld", "examine desk 1")


def test_cells_and_replies():
    assert place_in("-= Kitchen =-\nYou arrive in a kitchen.") == "Kitchen"
    assert place_in("You arrive at desk 1. On the desk 1, you see a mug 1.") == "desk 1"
    assert place_in("You are in the middle of a room. Looking quickly around you") == "the middle of the room"
    assert carried(["drop knife", "drop red apple", "go east"]) == "knife; red apple"
    assert carried(["move mug 1 to desk 1", "move mug 1 to desk 2", "look"]) == "mug 1"
    assert carried(["go east", "look"]) is None
    assert parse_choice("The kitchen.\nChoose > 2\nRemove > [0, 1]", 3) == (2, [0, 1])
    assert parse_choice("Choose > 7\nRemove > []", 3) == (None, [])
    assert parse_action("I will open it.\n> open fridge") == "open fridge"
    assert parse_action("I will open it.\nopen fridge") == "open fridge"
    assert marked_action("I will open it.\n> open fridge") == "open fridge"
    assert marked_action("I will open it.\nopen fridge") is None
    valid = ["go east", "take knife from counter", "open fridge", "focus on lead", "focus on air"]
    assert match_action("Open the fridge.", valid, (), "look", 0.5) == ("open fridge", "exact")
    assert match_action("take knife", valid, (), "look", 0.5) == ("take knife from counter", "close")
    assert match_action("go west", valid, (), "look", 0.5) == ("go west", "unmatched")
    assert match_action("focus on water", valid, ("focus on",), "look", 0.5) == ("look", "noop")
    assert match_action("2", valid, (), "look", 0.5) == ("2", "number")


# -- TextWorld, scripted

def test_archive_returns_by_replay_and_the_shortest_path_rule_on_textworld(cli, llm_server, tmp_path):
    # Livingroom (start) -east-> bedroom, -north-> kitchen -east-> corridor -east-> bathroom.
    # It. 1 (from the start): go east (bedroom: added), go west (the start again, longer: kept),
    #   go north (kitchen, 3 actions: added).
    # Go: state 0 (the start): a reset, nothing replayed.
    # It. 2: go north (kitchen in 1 action: replaces the 3-action entry), go east (corridor:
    #   added), go east (bathroom: added).
    # Go: state 2 (the kitchen): a reset and 1 replayed step ("go north").
    # It. 3: three more actions; the budget (10) then ends the episode.
    srv = llm_server(script=script(
        ["Back to the start.\nChoose > 0\nRemove > []", "The kitchen.\nChoose > 2\nRemove > [1]"],
        ["> go east", "> go west", "> go north", "> go north", "> go east", "> go east",
         "> go south", "> go north", "> go east"]))
    out = tmp_path / "tw"
    result = ige(cli, srv, out, "--benchmark", "textworld", "--split", "ige-cooking",
                 "--limit", "1", "--max-steps", "10", "--method-arg", "steps_per_iteration=3")
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    extra = record["extra"]
    assert record["status"] == "budget_exhausted" and record["steps"] == 10
    # 9 chosen actions + 1 replayed one: replayed steps are episode steps
    assert extra["replayed_steps"] == 1 and extra["restores"] == 2 == extra["ige_returns"]
    assert extra["ige_llm_calls"] == {"select": 2, "explore": 9} and record["llm_calls"] == 11
    assert record["llm_usage"]["select"]["calls"] == 2 and record["llm_usage"]["explore"]["calls"] == 9
    assert extra["ige_iterations"] == 3 and extra["ige_added"] == 5 and extra["ige_archive_size"] == 5
    assert extra["ige_replaced"] == 1 and extra["ige_return_mismatches"] == 0
    assert extra["ige_removed"] == 0  # state 1 has the highest score (0, as all): kept
    assert extra["ige_cell_sources"]["location"] == "observed place + admissible commands"

    first, second = prompts_of(srv, SELECT)
    assert len(state_lines(first)) == 3 and len(state_lines(second)) == 5
    # the kitchen: 3 actions from the start, then 1 after the shorter path replaced it
    assert state_lines(first)[2].startswith("State 2: 3 actions from the start, score 0")
    assert state_lines(second)[2].startswith("State 2: 1 actions from the start, score 0")
    assert "Place: -= Kitchen =-" in second and "Carrying: nothing" in second
    kitchen = second.split("State 2:")[1].split("State 3:")[0]
    assert "Tried from here: [go east]" in kitchen

    steps = trajectory(out)
    returns = [i for i, s in enumerate(steps) if i and "action" not in s]
    assert len(returns) == 2 and len(steps) == 1 + 10 + 2
    # the second return replays "go north" and gives back the kitchen as the stored visit saw it
    stored_visit = steps[returns[0] + 1]
    assert stored_visit["action"] == "go north" and stored_visit["observation"].startswith("-= Kitchen =-")
    replayed = steps[returns[1] + 1]
    assert replayed["action"] == "go north" and replayed["observation"] == stored_visit["observation"]
    after_return = prompts_of(srv, EXPLORE)[6]
    assert after_return.split("(the last observation above")[0].rstrip().endswith(
        stored_visit["observation"].strip())
    assert "Already tried from the current state: [go east]" in after_return
    # the kitchen's admissible commands (not the bathroom's, where IGE was before the return)
    listed = after_return.split("Actions possible now:\n")[1].split("\n\n")[0].splitlines()
    assert "examine cookbook" in listed and "examine toilet" not in listed
    # explore prompts list the admissible commands, and the sampling is the authors'
    assert "Actions possible now:\n" in prompts_of(srv, EXPLORE)[0]
    request = srv.requests()[-1]
    assert request["temperature"] == 0.3 and request["top_p"] == 0.2 and request["max_tokens"] == 1024


def test_a_lost_game_ends_only_the_branch(cli, llm_server, tmp_path):
    # Frying the purple potato loses this game (its recipe grills it): the branch ends,
    # IGE returns to the archive, and the lost action is shown where it was played.
    srv = llm_server(script=script(
        ["Choose > 1\nRemove > []"],
        ["> go north", "> take purple potato from counter", "> cook purple potato with stove",
         "> go east"]))
    out = tmp_path / "lost"
    result = ige(cli, srv, out, "--benchmark", "textworld", "--split", "ige-cooking",
                 "--limit", "1", "--max-steps", "6")
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    extra = record["extra"]
    assert record["status"] == "budget_exhausted" and record["steps"] == 6 and not record["success"]
    assert extra["ige_lost_branches"] == 1 and extra["ige_returns"] == 1
    assert extra["ige_best_score"] == 1.0 and "lost" not in extra  # the last branch goes on
    [select] = prompts_of(srv, SELECT)
    assert "These ended the game (lost) from here: [cook purple potato with stove]" in select
    assert "score 1" in select


# -- every benchmark

RUNS = {  # benchmark: (split, explore replies)
    "plancraft": ("val.small", None),  # the local server's planner policy answers
    "alfworld": ("valid_unseen", ["> go to desk 1", "> look", "> go to bed 1", "> inventory"]),
    "textworld": ("ige-cooking", ["> go north", "> examine cookbook", "> go east", "> look"]),
    "scienceworld": ("step18-v1", ["> look around", "> go to kitchen", "> open door to kitchen",
                                   "> pick up glass cup"]),
}


@pytest.mark.parametrize("benchmark", ["plancraft", "alfworld", "textworld", "scienceworld"])
def test_runs_on_every_benchmark(cli, llm_server, tmp_path, benchmark):
    split, actions = RUNS[benchmark]
    routes = [{"match": SELECT, "replies": ["Choose > 0\nRemove > []"]}]
    if actions is None:
        srv = llm_server(script=routes, policy="plancraft")
    else:
        srv = llm_server(script=routes + [{"match": EXPLORE, "replies": actions}])
    out = tmp_path / benchmark
    result = ige(cli, srv, out, "--benchmark", benchmark, "--split", split, "--limit", "1",
                 "--max-steps", "12")
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    extra = record["extra"]
    assert record["status"] in ("ok", "budget_exhausted"), record["error"]
    assert record["llm_calls"] == sum(extra["ige_llm_calls"].values()) >= 1
    assert extra["ige_archive_size"] >= 1 and extra["ige_return_mismatches"] == 0
    messages = srv.requests()[-1]["messages"]
    assert messages[0]["role"] == "system" and "Go-Explore" in messages[0]["content"]
    if benchmark == "plancraft":  # the planner's actions, matched exactly: solved
        assert record["success"] and record["status"] == "ok"
        assert extra["ige_cell_sources"] == {"location": "none", "inventory": "query(state)"}
    if benchmark == "scienceworld":
        assert extra["ige_cell_sources"] == {"location": "query(look)", "inventory": "query(inventory)"}
        assert "too many to list" in prompts_of(srv, EXPLORE)[0] or \
            "Actions possible now" in prompts_of(srv, EXPLORE)[0]
    if benchmark in ("alfworld", "textworld", "scienceworld"):
        assert record["steps"] == 12 and extra["ige_iterations"] >= 2


def test_crafter_is_refused_with_its_reason(cli, llm_server, tmp_path):
    srv = llm_server(script=["> noop"])
    result = ige(cli, srv, tmp_path / "crafter", "--benchmark", "crafter", "--split", "seeds-100",
                 "--limit", "1", "--max-steps", "5")
    assert result.returncode != 0
    assert "staying alive" in result.stderr and "undo deaths" in result.stderr
    assert not srv.requests()


# -- instance contexts

def test_an_instance_context_reaches_both_prompts(cli, llm_server, tmp_path):
    # Also: choosing the state IGE is in continues from it without a return; a later return
    # whose replay runs past the budget ends the episode (budget_exhausted).
    # It. 1: kitchen, corridor, bathroom (states 1-3). Go: state 3, where IGE is: no return.
    # It. 2: corridor, bathroom, corridor (longer paths: kept). Go: state 3 again: a reset and
    # a replay of its 3 actions, of which the budget (8) leaves 2.
    builder = "SCRIPTED-CONTEXT builder"
    srv = llm_server(script=[{"match": builder, "replies": ["ROOM-FACTS"]},
                             {"match": SELECT, "replies": ["Choose > 3\nRemove > []"]},
                             {"match": EXPLORE, "replies": ["> go north", "> go east", "> go east",
                                                            "> go west", "> go east", "> go west"]}])
    out = tmp_path / "ctx"
    result = ige(cli, srv, out, "--benchmark", "textworld", "--split", "ige-cooking", "--limit", "1",
                 "--max-steps", "8", "--context", "scripted-context",
                 "--method-arg", "steps_per_iteration=3")
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    assert record["context"] == "scripted-context" and record["status"] == "budget_exhausted"
    extra = record["extra"]
    assert record["steps"] == 8 and extra["ige_continued"] == 1 and extra["restores"] == 1
    assert extra["replayed_steps"] == 2 and extra["ige_archive_size"] == 4
    ige_requests = [r for r in srv.requests() if r["messages"][0]["content"] != builder]
    roles = {re.match(r"\w+", r["messages"][-1]["content"]).group(0) for r in ige_requests}
    assert roles == {"Choose", "Act"}
    for request in ige_requests:
        system = request["messages"][0]["content"]
        assert "CONTEXT-MARKER ROOM-FACTS" in system
        # after the manual, before IGE's own strategy
        assert system.index("CONTEXT-MARKER") < system.index("Go-Explore")


def test_the_authors_explore_step_shows_no_commands_and_plays_the_reply_as_written(
        cli, llm_server, tmp_path):
    srv = llm_server(script=script(["Choose > 1\nRemove > []"],
                                   ["> walk north please", "> go north", "I would go east"]))
    out = tmp_path / "authors"
    result = ige(cli, srv, out, "--benchmark", "textworld", "--split", "ige-cooking", "--limit", "1",
                 "--max-steps", "3", "--method-arg", "authors=true")
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    assert record["extra"]["ige_prompt"] == "authors" and record["extra"]["ige_close_matches"] == 0
    explore = prompts_of(srv, EXPLORE)
    assert explore and not any("Actions possible now" in p or "actions are possible now" in p for p in explore)
    # a reply with no `> ACTION` line plays `look`, as the authors' code does
    assert [step.get("action") for step in trajectory(out)[1:]] == ["walk north please", "go north",
                                                                    "look"]
    assert record["extra"]["ige_unmarked_replies"] == 1 and record["method_version"] == "2"
