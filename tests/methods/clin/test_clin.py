"""CLIN against the real local server: learnings per instance across trials, action
matching with feedback, the early stops, and a smoke run on every benchmark."""

from __future__ import annotations

import json
import re

import pytest

from conftest import read_records
from lifebench.benchmarks.manifests import SPLITS_DIR
from lifebench.methods.clin import parse_action, read_action
from lifebench.methods.clin.replies import Field
from lifebench.methods.clin.matching import ActionMatcher

SUMMARY = r"CURRENT TRACE"
ALARM_CLOCK = "look_at_obj_in_light-AlarmClock-None-DeskLamp-308/trial_T20190908_222917_366542"
BOOK = "look_at_obj_in_light-Book-None-DeskLamp-308/trial_T20190908_020029_636862"
STEP18_V1 = SPLITS_DIR / "scienceworld" / "step18-v1.jsonl"


def clin(cli, srv, out, *args):  # one trial unless asked (the protocol's are 5)
    return cli("run", "--no-progress", "--method", "clin", "--model", "m", "--base-url",
               srv.url, "--cache", "off", "--workers", "0", "--trials", "1", "--out", str(out),
               *args)


def task_of(messages: list[dict]) -> str:
    """The first observation of an episode as a request shows it (executor or summary)."""
    text = "\n".join(m["content"] for m in messages)
    found = re.search(r"Your task is to: (.*)", text) or re.search(r"(?:Observation|Task): (.*)", text)
    return found.group(1) if found else ""


def test_parse_action():
    assert parse_action("Learnings used: 1\nRationale: x\nAction: open door to kitchen") == "open door to kitchen"
    assert parse_action("go to kitchen") == "go to kitchen"
    assert parse_action("Action: look\nAction: inventory") == "inventory"
    # read tolerantly (markdown, case, spacing), and said when not in the form asked
    assert read_action("**Action:** `open door to kitchen`") == ("open door to kitchen", Field(
        "open door to kitchen", found=True, as_asked=False))
    assert read_action("I will look.\n**look around**") == ("look around", Field("", False, False))
    assert read_action("action : look")[1].as_asked


def test_a_huge_reply_is_read_in_linear_time():
    import time

    # runs of spaces inside a field's line made a lazy capture before `\s*$` quadratic
    replies = ["Action: look" + " " * 200_000 + "around", ("Action:" + " " * 5_000 + "\n") * 40,
               "*" * 200_000, "- " * 100_000 + "Action: look"]
    started = time.perf_counter()
    assert [parse_action(reply)[:4] for reply in replies] == ["look", "Acti", "", "look"]
    # linear: milliseconds; the quadratic capture took minutes (10 s: a margin for any load)
    assert time.perf_counter() - started < 10.0


def test_matcher_takes_exact_near_and_guarded_actions():
    from lifebench.embeddings import get_embedder

    valid = ["open door to kitchen", "go to kitchen", "focus on kitchen", "pick up thermometer"]
    matcher = ActionMatcher(get_embedder(), 0.9, guarded=("focus on",))
    assert matcher.match("Go to kitchen.", valid).action == "go to kitchen"
    near = matcher.match("walk into the kitchen", valid)
    assert near.action == "go to kitchen" and 0 < near.similarity < 1
    assert matcher.match("kitchen focus", valid).action != "focus on kitchen"  # never by accident
    assert matcher.match("focus on the kitchen", valid).action == "focus on kitchen"
    assert matcher.match("2", valid).action == "2"  # an answer to "which one?"


def test_learnings_reach_the_next_trial_of_the_same_instance_only(cli, llm_server, tmp_path):
    srv = llm_server(script=[
        {"match": SUMMARY, "replies": [f"1. LEARNING-{k} SHOULD BE NECESSARY to the task." for k in range(4)]},
        "Learnings used: none\nRationale: see first.\nAction: look"])
    out = tmp_path / "out"
    # two ALFWorld games (a few dozen valid actions a step: Plancraft's ~700 cost the
    # matcher 20 s of embeddings; test_runs_on_every_benchmark plays CLIN there)
    result = clin(cli, srv, out, "--benchmark", "alfworld", "--split", "valid_unseen", "--instances",
                  f"{ALARM_CLOCK},{BOOK}",
                  "--trials", "2", "--max-steps", "2")
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    assert len(records) == 4 and all(r["llm_usage"]["summary"]["calls"] == 1 for r in records)
    summaries = [r for r in srv.requests() if re.search(SUMMARY, r["messages"][-1]["content"])]
    written = {f"LEARNING-{k}": task_of(r["messages"]) for k, r in enumerate(summaries)}
    assert len(set(written.values())) == 2  # two instances
    executors = [r["messages"] for r in srv.requests() if r not in summaries]
    seen = 0
    for messages in executors:
        text = "\n".join(m["content"] for m in messages)
        for learning, task in written.items():
            if learning in text:
                seen += 1
                assert task_of(messages) == task, "learnings crossed to another instance"
    assert seen == 4  # each instance's second trial: 2 steps with its first trial's learnings
    # the summariser of a second trial reads the first trial's learnings
    assert "LEARNING-0" in summaries[1]["messages"][-1]["content"] or \
        "LEARNING-0" in summaries[3]["messages"][-1]["content"]


def test_an_unmatched_action_gets_feedback_then_the_nearest_is_played(cli, llm_server, tmp_path):
    srv = llm_server(script=[{"match": SUMMARY, "replies": ["1. X DOES NOT CONTRIBUTE to Y."]},
                             "Action: dance wildly around the crafting table"])
    out = tmp_path / "out"
    result = clin(cli, srv, out, "--benchmark", "plancraft", "--split", "val.small", "--limit", "1",
                  "--max-steps", "2", "--method-arg", "repeat_stop=0")
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    assert record["steps"] == 2 and record["llm_usage"]["actor"]["calls"] == 6
    assert record["extra"]["match_feedback"] == 4
    retried = [r for r in srv.requests() if "does not match any action" in r["messages"][-1]["content"]]
    assert len(retried) == 4


def test_identical_actions_end_the_episode(cli, llm_server, tmp_path):
    srv = llm_server(script=[{"match": SUMMARY, "replies": ["1. X DOES NOT CONTRIBUTE to Y."]},
                             "**Action:** look"])  # read, and counted as not the form asked
    out = tmp_path / "out"
    result = clin(cli, srv, out, "--benchmark", "textworld", "--limit", "1",
                  "--max-steps", "20", "--method-arg", "repeat_stop=3")
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    assert record["status"] == "ok" and record["steps"] == 3 and not record["success"]
    assert record["extra"]["stopped"] == "3 identical actions"
    assert record["extra"]["format_failures"] == {"actor": 3} and record["extra"]["format_fallbacks"] == {}


def test_gold_stop_ends_at_one_and_a_half_gold_paths(cli, llm_server, tmp_path):
    srv = llm_server(script=[{"match": SUMMARY, "replies": ["1. X DOES NOT CONTRIBUTE to Y."]},
                             "Action: impossible: nothing to do"])
    out = tmp_path / "out"
    result = clin(cli, srv, out, "--benchmark", "scienceworld", "--split", "step18-v1",
                  "--instances", "find-living-thing:225", "--method-arg", "gold_stop=true",
                  "--method-arg", "repeat_stop=0")
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    gold = next(json.loads(line)["gold_length"] for line in STEP18_V1.read_text().splitlines()
                if json.loads(line)["instance_id"] == "find-living-thing:225")
    assert int(1.5 * gold) < record["budget_steps"] == 37  # the stop comes before the budget
    assert record["status"] == "ok" and record["steps"] == int(1.5 * gold)
    assert record["extra"]["stopped"] == "1.5x the gold path"
    [summary] = [r["messages"][-1]["content"] for r in srv.requests()
                 if re.search(SUMMARY, r["messages"][-1]["content"])]
    assert "gold" not in summary, "the stop's reason would tell the writer the gold length"


def test_the_executor_sees_the_worlds_vocabulary_and_ends_when_it_says_complete(
        cli, llm_server, tmp_path):
    srv = llm_server(script=[{"match": SUMMARY, "replies": ["1. X DOES NOT CONTRIBUTE to Y."]},
                             {"match": "Observation: ", "replies": ["Action: look around",
                                                                    "Action: TASK COMPLETE"]}])
    out = tmp_path / "out"
    result = clin(cli, srv, out, "--benchmark", "scienceworld", "--split", "step18-v1",
                  "--instances", "use-thermometer:405")
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    assert record["steps"] == 1 and record["extra"]["stopped"] == "the executor said the task is complete"
    executor = [r["messages"][-1]["content"] for r in srv.requests()
                if not re.search(SUMMARY, r["messages"][-1]["content"])]
    assert len(executor) == 2
    forms = executor[0].split("The forms an action may take", 1)[1].split("\n\n", 1)[0]
    assert "open OBJ" in forms and "focus" not in forms and "reset" not in forms
    assert "What an action may name here:\nagent\nair\nart studio" in executor[0]
    assert 'write "Action: TASK COMPLETE"' in executor[0]


@pytest.mark.parametrize("benchmark,split", [
    pytest.param("plancraft", "val.small", marks=pytest.mark.slow(
        reason="the session's first embedding of Plancraft's valid actions (up to 2,000 a match, "
               "~30 s; later tests read them from the session's store) unless a test before it "
               "stored them")),
    ("alfworld", "valid_unseen"), ("textworld", "ige-cooking"), ("crafter", "seeds-100"),
    ("scienceworld", "step18-v1")])
def test_runs_on_every_benchmark(cli, llm_server, tmp_path, benchmark, split):
    srv = llm_server(script=[{"match": SUMMARY, "replies": ["1. LOOKING SHOULD BE NECESSARY to start."]},
                             "Learnings used: none\nRationale: see first.\nAction: look around"])
    out = tmp_path / "out"
    result = clin(cli, srv, out, "--benchmark", benchmark, "--split", split, "--limit", "2",
                  "--max-steps", "3", "--trials", "2")
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    assert len(records) == 4 and all(r["status"] in ("ok", "budget_exhausted") for r in records)
    assert all(r["llm_usage"]["summary"]["calls"] == 1 for r in records)
    second = [r for r in srv.requests() if "LOOKING SHOULD BE" in r["messages"][1]["content"]]
    assert second, "the second trials see the first trials' learnings"


def test_history_is_kept_within_the_token_budget():
    from lifebench.methods.clin import within_tokens

    turns = [(f"reply {i} " + "x" * 40, f"a{i}", "o" * 40) for i in range(6)]  # ~22 tokens each
    assert within_tokens(turns, 10_000) == turns
    assert within_tokens(turns, 1) == turns[-1:]  # the newest always, as it crosses
    assert within_tokens(turns, 30) == turns[-2:]  # the crossing turn is kept


def test_threshold_calibration_curve_and_choice():
    from lifebench.embeddings import get_embedder
    from lifebench.methods.clin.calibration import LabelledText, choose, curve, score

    valid = [["open door to kitchen", "open door to hallway", "pick up apple", "move apple to table"]]
    items = [LabelledText("open the door to kitchen", "open door to kitchen", 0, "articles"),
             LabelledText("take apple", "pick up apple", 0, "synonym"),
             LabelledText("open the fridge", None, 0, "absent object"),
             LabelledText("pick up the apple", "pick up apple", 0, "articles")]
    scored = score(items, valid, ActionMatcher(get_embedder(), 1.0, shortlist=2))
    assert [s.action for s in scored[:2]] == ["open door to kitchen", "pick up apple"]
    assert all(s.similarity < 1.0 and not s.exact for s in scored)
    # a shortlist of 2 by shared words keeps "open door to kitchen" and "... hallway" for
    # "open the fridge" alone: the check says whether it kept the full search's best
    assert [s.shortlist_kept_best for s in scored[:2]] == [True, True]
    near = scored[2].similarity
    points = curve(scored, [round(near - 0.01, 3), round(near + 0.001, 3)])
    assert points[0].accepted == 4 and points[0].right == 3 and points[0].precision == 0.75
    assert points[1].right == points[1].accepted and points[1].recall <= 1.0
    best, reached = choose(points, 0.95)
    assert reached and best is points[1]
    best, reached = choose(points[:1], 0.95)  # no threshold reaches the floor: the most precise
    assert not reached and best is points[0]
