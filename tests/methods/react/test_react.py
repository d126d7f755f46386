"""ReAct against the real local server: on every benchmark, with generated examples,
format feedback, and the planner policy on Plancraft."""

from __future__ import annotations

import json

import pytest

from conftest import read_records
from lifebench.methods.react import parse_reply


def react(cli, srv, out, *args):
    return cli("run", "--no-progress", "--method", "react", "--model", "m", "--base-url",
               srv.url, "--cache", "off", "--workers", "0", "--out", str(out), *args)


def test_parse_reply():
    assert parse_reply("Thought: the key is here.\nAction: take key") == ("the key is here.", "take key")
    assert parse_reply("go to desk 1") == (None, "go to desk 1")
    assert parse_reply("Thought: hmm\nI wonder") == ("hmm", None)
    assert parse_reply("Thought: a\nAction: look\nThought: b\nAction: inventory")[1] == "inventory"


@pytest.mark.parametrize("benchmark,split", [("plancraft", "val.small"), ("alfworld", "valid_unseen"),
                                             ("textworld", "ige-cooking"), ("crafter", "seeds-100"),
                                             ("scienceworld", "step18-v1")])
def test_runs_on_every_benchmark(cli, llm_server, tmp_path, benchmark, split):
    srv = llm_server(script=["Thought: I should look around first.\nAction: look"])
    out = tmp_path / "out"
    result = react(cli, srv, out, "--benchmark", benchmark, "--split", split, "--limit", "1",
                   "--max-steps", "3")
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    assert record["status"] in ("ok", "budget_exhausted") and record["llm_calls"] == record["steps"]
    messages = srv.requests()[-1]["messages"]
    assert messages[0]["role"] == "system" and "Action:" in messages[0]["content"]
    assert messages[-1]["content"].startswith("Observation: ")
    examples = [m for m in messages if m["content"].startswith("Here are solved episodes")]
    if benchmark == "crafter":  # no oracle: zero-shot
        assert not examples
        return
    # the oracle on the benchmark's support split gives two examples
    assert len(examples) == 1 and examples[0]["content"].count("Example ") == 2
    same_family = {"alfworld": "Your task is to: look at",  # the same task type
                   "scienceworld": "Your task is to boil",  # the same task (boil:21's)
                   "plancraft": "Craft an item of type:", "textworld": "recipe"}[benchmark]
    assert same_family in examples[0]["content"]


def test_a_reply_without_an_action_gets_feedback_and_costs_no_step(cli, llm_server, tmp_path):
    srv = llm_server(script=["Thought: I am not sure what to do.\nMaybe I should wait.", "Thought: inventory first.\nAction: inventory"])
    out = tmp_path / "out"
    result = react(cli, srv, out, "--benchmark", "textworld", "--limit", "1", "--max-steps", "1")
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    assert record["steps"] == 1 and record["llm_calls"] == 2


def test_solves_plancraft_with_the_planner_policy(cli, llm_server, tmp_path):
    srv = llm_server(policy="plancraft")
    out = tmp_path / "out"
    result = react(cli, srv, out, "--benchmark", "plancraft", "--split", "val.small",
                   "--limit", "40")
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    assert len(records) == 40 and all(r["success"] for r in records)


def test_reflexion_reflects_after_failed_trials_and_remembers_the_last_three(cli, llm_server, tmp_path):
    srv = llm_server(script=["Thought: the fridge may hold food.\nAction: open fridge"])
    out = tmp_path / "out"
    result = cli("run", "--no-progress", "--method", "reflexion", "--model", "m", "--base-url",
                 srv.url, "--cache", "off", "--workers", "0", "--out", str(out),
                 "--benchmark", "textworld", "--limit", "1", "--max-steps", "2", "--trials", "5")
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    assert [r["trial"] for r in records] == [0, 1, 2, 3, 4] and not any(r["success"] for r in records)
    assert all(r["llm_usage"]["reflection"]["calls"] == 1 for r in records)
    actor_prompts = [req["messages"] for req in srv.requests()
                     if not req["messages"][0]["content"].startswith("You tried the task")]
    first_turns = [m for m in actor_prompts if m[-1]["content"].startswith("Observation: ")
                   and all(x["role"] != "assistant" or x["content"] == "Understood." for x in m)]
    memories = [next((x["content"] for x in m if x["content"].startswith("You have tried this task")), "")
                for m in first_turns]
    assert [mem.count("\n- ") for mem in memories] == [0, 1, 2, 3, 3], "the last 3 reflections"
    state_files = sorted((out / "state").rglob("*.json"))
    state = json.loads(state_files[-1].read_text())["state"]
    assert len(next(iter(state["reflections"].values()))) == 5


def test_history_zero_keeps_the_whole_episode_and_the_reflection_the_whole_trial(cli, llm_server, tmp_path):
    """AutoContext's baselines (issue 62): `history = 0` sends every turn of a 40-step
    episode (the default keeps the last 30), and Reflexion's `reflect_steps = 0` shows its
    reflection the whole failed trial."""
    srv = llm_server(script=["Thought: wait.\nAction: look"])
    corridor = ("--benchmark", "corridor", "--split", "tiny", "--limit", "1", "--max-steps", "40")

    def turns_in_last_request(*args: str) -> int:
        before = len(srv.requests())
        out = tmp_path / f"react{before}"
        result = react(cli, srv, out, *corridor, "--method-arg", "examples=0", *args)
        assert result.returncode == 0, result.stderr
        [record] = read_records(out)
        assert record["steps"] == 40
        return sum(m["role"] == "assistant" for m in srv.requests()[-1]["messages"])

    assert turns_in_last_request() == 30
    assert turns_in_last_request("--method-arg", "history=0") == 39
    out = tmp_path / "reflexion"
    result = cli("run", "--no-progress", "--method", "reflexion", "--model", "m", "--base-url",
                 srv.url, "--cache", "off", "--workers", "0", "--out", str(out), *corridor,
                 "--trials", "2", "--method-arg", "examples=0", "--method-arg", "reflect_steps=0")
    assert result.returncode == 0, result.stderr
    reflections = [r for r in srv.requests() if "> look" in r["messages"][-1]["content"]]
    assert reflections and reflections[0]["messages"][-1]["content"].count("> look") == 40
