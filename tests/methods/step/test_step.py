"""STEP against the real local server, each role scripted by what its prompt asks: the
Planner's subtasks and their refinement, its malformed replies, the Evaluator's veto and
retries, the caps, the stops, the ablation without a Planner, and a smoke run on every
benchmark."""

from __future__ import annotations

import re

import pytest

from conftest import read_records
from lifebench.methods.step import field, numbered

# Each role's prompt ends with a request no other role's prompt makes.
PLANNER = r'write "Subtask: TASK COMPLETE"'
REFINER = r"Failure: <why"
RULES = r"Approved: <1"
CHECK = r"Complete: <1"
CHOOSER = r"Choice: <the number"
SUMMARY = r"CURRENT TRACE"
STRATEGY = r"ACTIONS THAT RAISED THE SCORE"

LEARNED = ("1. Looking around SHOULD BE NECESSARY to find the items.\n"
           "2. Moving into slot A9 DOES NOT CONTRIBUTE to crafting.")


def script(actor, planner="Learnings used: 1\nRationale: start.\nSubtask: look around",
           check="Rationale: not yet.\nComplete: 0", rules="Approved: 1",
           refiner="Failure: nothing moved.\nRationale: 1\nSubtask: look again",
           chooser="Choice: 0", summary=LEARNED, strategy="STRATEGY\n1. look around: to see."):
    return [{"match": PLANNER, "replies": [planner] if isinstance(planner, str) else planner},
            {"match": REFINER, "replies": [refiner]},
            {"match": RULES, "replies": [rules] if isinstance(rules, str) else rules},
            {"match": CHECK, "replies": [check] if isinstance(check, str) else check},
            {"match": CHOOSER, "replies": [chooser]},
            {"match": SUMMARY, "replies": [summary]}, {"match": STRATEGY, "replies": [strategy]},
            *actor]


def step(cli, srv, out, *args):  # one trial unless asked (the protocol's are 5)
    return cli("run", "--no-progress", "--method", "step", "--model", "m", "--base-url",
               srv.url, "--cache", "off", "--workers", "0", "--trials", "1", "--out", str(out),
               *args)


def requests_of(srv, pattern: str) -> list[dict]:
    return [r for r in srv.requests() if re.search(pattern, r["messages"][-1]["content"])]


def test_fields_and_numbered_learnings():
    assert field("Learnings used: 1, 3\nRationale: x\nSubtask: find the thermometer", "Subtask") \
        == "find the thermometer"
    assert field("no such line", "Action") is None
    # read tolerantly: markdown around the name or the value, case, spacing, the next line
    for reply in ("**Subtask:** find the bowl", "- *subtask* : `find the bowl`",
                  "### SUBTASK: **find the bowl**", "Subtask:\n  find the bowl"):
        assert field(reply, "Subtask") == "find the bowl", reply
    assert field("**Learnings  used**: 2", "Learnings used") == "2"
    assert field("Subtask:\nRationale: none", "Subtask") is None
    assert numbered(LEARNED) == {1: "Looking around SHOULD BE NECESSARY to find the items.",
                                 2: "Moving into slot A9 DOES NOT CONTRIBUTE to crafting."}


def test_table2_notes_the_tasks_where_instances_are_not_one_per_task():
    from types import SimpleNamespace

    from lifebench.methods.step.reporting import _tasks

    def run(instance, task):
        return SimpleNamespace(instance_id=instance, task_family=task)

    one_each = [run("boil:1", "1-1 boil"), run("melt:1", "1-2 melt")]
    assert _tasks(one_each, {"boil:1", "melt:1"}) == []  # step18-authors, step18-v1
    five_each = [run(f"boil:{v}", "1-1 boil") for v in range(5)]
    assert _tasks(five_each, {f"boil:{v}" for v in range(5)}) == ["All: 5 instances of 1 task"]


def test_learnings_and_strategy_reach_the_next_trial_and_only_chosen_learnings_the_executor(
        cli, llm_server, tmp_path):
    srv = llm_server(script=script(["Learnings used: 1\nRationale: see.\nAction: look"]))
    out = tmp_path / "out"
    result = step(cli, srv, out, "--benchmark", "textworld", "--limit", "1", "--trials", "2",
                  "--max-steps", "3")
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    assert [r["trial"] for r in records] == [0, 1]
    assert all(r["llm_usage"]["summary"]["calls"] == 1 and r["llm_usage"]["strategy"]["calls"] == 1
               for r in records)
    planners = requests_of(srv, PLANNER)
    first, second = [p for p in planners if "Learnings from" not in p["messages"][-1]["content"]], \
        [p for p in planners if "Learnings from" in p["messages"][-1]["content"]]
    assert first and second  # trial 0 plans without learnings, trial 1 with them
    assert all("A strategy written after your last attempt" in p["messages"][-1]["content"]
               and "1. look around: to see." in p["messages"][-1]["content"] for p in second)
    executors = [r for r in srv.requests() if "Your current subtask: look around" in r["messages"][-1]["content"]]
    with_learnings = [e["messages"][-1]["content"] for e in executors if "Learnings from" in e["messages"][-1]["content"]]
    assert with_learnings and all("Looking around SHOULD BE" in e and "slot A9" not in e
                                  for e in with_learnings), "only the learning the Planner chose"


def test_the_evaluator_vetoes_a_rule_breaking_action_and_the_executor_retries(cli, llm_server, tmp_path):
    srv = llm_server(script=script(  # a proposal that names no valid action exactly
        ["Rationale: x.\nAction: look around the room"],
        rules="Approved: 0\nFeedback: moving into A9 does not help."))
    out = tmp_path / "out"
    result = step(cli, srv, out, "--benchmark", "textworld", "--limit", "1", "--trials", "2",
                  "--max-steps", "2")
    assert result.returncode == 0, result.stderr
    first, second = read_records(out)
    assert "rules" not in first["llm_usage"]  # no learnings yet, so no rules to check
    assert first["llm_usage"]["chooser"]["calls"] == 2
    # each step: two proposals rejected, the third played as its nearest valid action
    # without the chooser (the code's)
    assert second["extra"]["step_rejected"] == 4 and second["llm_usage"]["rules"]["calls"] == 4
    assert second["steps"] == 2 and "chooser" not in second["llm_usage"]
    retried = [r for r in srv.requests() if 'was not approved: moving into A9 does not help'
               in r["messages"][-1]["content"]]
    assert retried, "the rejected proposal and the feedback reach the executor"


def test_a_subtask_that_runs_too_long_is_refined_and_the_cap_ends_the_episode(cli, llm_server, tmp_path):
    srv = llm_server(script=script(["Rationale: x.\nAction: look"]))
    out = tmp_path / "out"
    result = step(cli, srv, out, "--benchmark", "textworld", "--limit", "1", "--max-steps", "30",
                  "--method-arg", "subtask_actions=2", "--method-arg", "max_failed_subtasks=2",
                  "--method-arg", "repeat_stop=0")
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    # 2 actions per subtask, refined 3 times (the third is more than 2): 1 + 2 refinements played
    assert record["extra"]["stopped"] == "more than 2 subtasks refined"
    assert record["steps"] == 6 and record["extra"]["step_refined"] == 3
    assert len(requests_of(srv, REFINER)) == 2 and len(requests_of(srv, PLANNER)) == 1
    refine = requests_of(srv, REFINER)[0]["messages"][-1]["content"]
    assert 'The subtask "look around" was chosen because: start.' in refine


def test_a_done_subtask_plays_its_last_action_then_the_planner_moves_on(cli, llm_server, tmp_path):
    srv = llm_server(script=script(["Rationale: x.\nAction: look"],
                                   check=["Complete: 0", "Complete: 1"]))  # then always done
    out = tmp_path / "out"
    result = step(cli, srv, out, "--benchmark", "textworld", "--limit", "1", "--max-steps", "4",
                  "--method-arg", "repeat_stop=0")
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    # the check runs at every proposal, a subtask's first too (the code's): the first
    # subtask plays one action, then a second judged done and still played; each later
    # subtask is judged done at its first proposal, which is played
    assert record["steps"] == 4 and record["extra"]["step_subtasks"] == 3
    assert record["llm_usage"]["subtask_check"]["calls"] == 4
    second = requests_of(srv, PLANNER)[1]["messages"][-1]["content"]
    assert "Subtasks already done, in order" in second and "- look around" in second


def test_the_planner_ending_the_task_and_the_identical_actions_stop(cli, llm_server, tmp_path):
    srv = llm_server(script=script(["Rationale: x.\nAction: look"],
                                   planner="Rationale: all done.\nSubtask: TASK COMPLETE"))
    out = tmp_path / "done"
    assert step(cli, srv, out, "--benchmark", "textworld", "--limit", "1").returncode == 0
    [record] = read_records(out)
    assert record["steps"] == 0 and record["extra"]["stopped"] == "the planner said the task is complete"

    srv = llm_server(script=script(["Rationale: x.\nAction: look"],
                                   check=["Complete: 0", "Complete: 0", "Complete: 1"]))
    out = tmp_path / "repeat"
    assert step(cli, srv, out, "--benchmark", "textworld", "--limit", "1", "--max-steps", "30",
                "--method-arg", "repeat_stop=2").returncode == 0
    [record] = read_records(out)
    # checked between subtasks (the first of three actions): not after 2, at its end
    assert record["extra"]["stopped"] == "2 identical actions" and record["steps"] == 3


def test_a_malformed_planner_reply_does_not_end_the_trial_and_is_counted(cli, llm_server, tmp_path):
    # the authors' code goes on with an " UNKNOWN " subtask when the reply names none
    srv = llm_server(script=script(["Rationale: x.\nAction: look"], check="Complete: 1", planner=[
        "**Learnings used:** none\n**Rationale:** start.\n**Subtask:** look around",
        "I would look around the room first."]))  # then no Subtask field, again and again
    out = tmp_path / "out"
    result = step(cli, srv, out, "--benchmark", "textworld", "--limit", "1", "--max-steps", "3",
                  "--method-arg", "repeat_stop=0")
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    assert record["status"] == "budget_exhausted" and record["steps"] == 3
    assert "stopped" not in record["extra"] and record["extra"]["step_subtasks"] == 3
    # three Planner replies not as asked: the bold one read, the two without a field replaced
    assert record["extra"]["format_failures"] == {"planner": 3}
    assert record["extra"]["format_fallbacks"] == {"planner": 2}
    subtasks = [found for r in srv.requests()
                for found in re.findall(r"Your current subtask: (.*)", r["messages"][-1]["content"])]
    assert subtasks == ["look around", "UNKNOWN", "UNKNOWN"]


def test_an_unplayable_proposal_goes_to_the_chooser_and_back_to_the_executor(cli, llm_server, tmp_path):
    srv = llm_server(script=script(["Rationale: x.\nAction: dance with the fridge", "Rationale: y.\nAction: look"],
                                   chooser="Choice: none. There is nothing to dance with."))
    out = tmp_path / "out"
    result = step(cli, srv, out, "--benchmark", "textworld", "--limit", "1", "--max-steps", "2")
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    assert record["steps"] == 2 and record["extra"]["step_unplayable"] == 1
    chooser = requests_of(srv, CHOOSER)[0]["messages"][-1]["content"]
    assert 'wants to play the action "dance with the fridge"' in chooser and "0. " in chooser
    told = [r for r in srv.requests() if "There is nothing to dance with." in r["messages"][-1]["content"]]
    assert told, "the chooser's reason reaches the executor"


def test_without_the_planner_nothing_is_planned_checked_or_refined(cli, llm_server, tmp_path):
    srv = llm_server(script=script(["Rationale: x.\nAction: look"]))
    out = tmp_path / "out"
    result = step(cli, srv, out, "--benchmark", "textworld", "--limit", "1", "--trials", "2",
                  "--max-steps", "12", "--method-arg", "planner=false", "--method-arg", "repeat_stop=0")
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    for record in records:
        assert {"planner", "refiner", "subtask_check"}.isdisjoint(record["llm_usage"]), record["llm_usage"]
        assert record["steps"] == 12
    executor = [r["messages"][-1]["content"] for r in srv.requests()
                if "Your current subtask:" in r["messages"][-1]["content"]]
    assert executor and all("Your current subtask: look around" not in e for e in executor)
    assert any("slot A9" in e for e in executor), "the ablation's executor sees every learning"


def test_with_the_planner_only_the_planner_sees_the_task(cli, llm_server, tmp_path):
    # Section 3: the Executor, and the Evaluator's checks, see only the current subtask.
    srv = llm_server(script=script(["Learnings used: none\nRationale: see.\nAction: look around"]))
    out = tmp_path / "out"
    result = step(cli, srv, out, "--benchmark", "scienceworld", "--split", "step18-v1",
                  "--instances", "use-thermometer:405", "--trials", "2", "--max-steps", "4")
    assert result.returncode == 0, result.stderr
    task = "Your task is to measure the temperature"
    roles = {"planner": PLANNER, "actor": "Your current subtask:", "rules": RULES, "check": CHECK}
    shown = {role: ["\n".join(m["content"] for m in r["messages"]) for r in requests_of(srv, mark)]
             for role, mark in roles.items()}
    assert all(shown.values()), {role: len(texts) for role, texts in shown.items()}
    assert all(task in text for text in shown["planner"])
    for role in ("actor", "rules", "check"):
        assert not any(task in text for text in shown[role]), role
    # what the task leaves of the first observation, and the world's vocabulary, it does see
    assert any("What the world showed at the start: This room is called" in t for t in shown["actor"])
    forms = [t.split("The forms an action may take", 1)[-1].split("\n\n", 1)[0] for t in shown["actor"]]
    assert all("open OBJ" in block and "focus" not in block for block in forms)


@pytest.mark.parametrize("benchmark,split", [("plancraft", "val.small"), ("alfworld", "valid_unseen"),
                                             ("textworld", "ige-cooking"), ("crafter", "seeds-100"),
                                             ("scienceworld", "step18-v1")])
def test_runs_on_every_benchmark(cli, llm_server, tmp_path, benchmark, split):
    srv = llm_server(script=script(["Learnings used: none\nRationale: see first.\nAction: look around"]))
    out = tmp_path / "out"
    result = step(cli, srv, out, "--benchmark", benchmark, "--split", split, "--limit", "2",
                  "--max-steps", "3", "--trials", "2")
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    assert len(records) == 4 and all(r["status"] in ("ok", "budget_exhausted") for r in records)
    assert all(r["llm_usage"]["planner"]["calls"] >= 1 for r in records)
    second = [r for r in requests_of(srv, PLANNER) if "Looking around SHOULD BE" in r["messages"][-1]["content"]]
    assert second, "the second trials plan with the first trials' learnings"


def test_the_table1_spec_runs_the_authors_variation_on_three_seeds_with_the_papers_model():
    import argparse

    from lifebench.config.options import add_arguments, from_sources
    from lifebench.config.run import RunConfig, load_spec_file

    def config(*argv: str) -> RunConfig:
        parser = argparse.ArgumentParser()
        add_arguments(parser, RunConfig)
        return from_sources(RunConfig, load_spec_file("specs/step-table1.toml"), parser.parse_args(argv))

    spec = config()
    assert spec.seeds == (0, 1, 2) and spec.trials == 5 and spec.model == "gpt-4o-mini"
    assert "step18-authors" in str(spec.splits) and "step18-v1" not in str(spec.splits)
    assert config("--model", "mine").model == "mine"
