"""RAP against the scripted model (`--policy scripted`) on corridor (no support split: the
memory fills with RAP's own successes along the stream): the planner's plan, the actor's
thought and action and the retrieval key all parse at first. The calls per role are this
deterministic run's. On Plancraft, a support memory of plain ReAct's successes
(`support_paths=agent`)."""

from __future__ import annotations

import json
from pathlib import Path

from lifebench.api import ScriptedRequest
from lifebench.methods.rap import RapMethod, prompts
from lifebench.methods.rap.memory import RetrievalKey, parse_key
from lifebench.testing import read_records


def run_rap(cli, srv, out: Path, *args: str) -> list[dict]:
    """The records of a RAP run against `srv`, in episode order."""
    result = cli("run", "--no-progress", "--method", "rap", "--model", "m", "--base-url", srv.url,
                 "--cache", "off", "--workers", "0", "--out", str(out), *args, timeout=120)
    assert result.returncode == 0, result.stderr
    return sorted(read_records(out), key=lambda r: r["episode_index"])


def test_rap_scripted_on_corridor(llm_server, results_dir, lifebench_cli):
    srv = llm_server(policy="scripted")
    records = run_rap(lifebench_cli, srv, results_dir, "--benchmark", "corridor", "--split", "tiny")
    assert all(r["status"] in ("ok", "budget_exhausted") and not r["error"] for r in records)
    got = [(r["instance_id"], r["success"], r["steps"],
            {role: usage["calls"] for role, usage in r["llm_usage"].items()}) for r in records]
    assert got == [
        ("corridor-2", True, 2, {"actor": 2, "planner": 1}),
        ("corridor-3", True, 3, {"actor": 3, "planner": 1, "retrieval_key": 1}),
        ("corridor-4", True, 4, {"actor": 4, "planner": 1, "retrieval_key": 1}),
    ]
    # each success joins the memory; every key written parsed (none left the windows as they were)
    assert [r["extra"]["rap_memory_size"] for r in records] == [0, 1, 2]
    assert all(r["extra"]["rap_added"] for r in records)
    assert [r["extra"]["rap_keys"] for r in records] == [[], ["action: right"], ["action: right"]]
    assert all(r["extra"]["rap_plan"].startswith('To solve the task, begin with "right"')
               for r in records)
    # no retry: one actor call per step (checked above) and no prompt holds format feedback
    assert not any(prompts.NO_ACTION_FEEDBACK in str(m.get("content") or "")
                   for r in srv.requests() for m in r["messages"])


def reply(role: str, messages: tuple[dict, ...], act=lambda text: "go to desk 2") -> str:
    request = ScriptedRequest(role=role, messages=messages, tools=(), benchmark="alfworld", act=act)
    return str(RapMethod.scripted_reply(request))


def test_rap_scripted_key_and_thought_parse():
    system = {"role": "system", "content": prompts.KEY_SYSTEM}
    thought = "This starts a new sub-goal: next I go to desk 2."
    ask = {"role": "user", "content": prompts.KEY_REQUEST.format(task="put a pen on the desk",
                                                                 thought=thought)}
    assert parse_key(reply("retrieval_key", (system, ask))) == RetrievalKey("search", "desk 2")
    ask = {"role": "user", "content": prompts.KEY_REQUEST.format(
        task="put a pen on the desk", thought="This starts a new sub-goal: next I take pen 1.")}
    assert parse_key(reply("retrieval_key", (system, ask))) == RetrievalKey("action", "take")
    # the actor acts on its own episode only: the retrieved examples never reach the player
    seen = []
    examples = "Example 1. Task: t\nPlan: p\nAction: go to desk 1\nObservation: OTHER EPISODE"
    user = {"role": "user", "content": examples + "\n\n" + prompts.TASK.format(
        observation="MY TASK", plan="p")}
    text = reply("actor", ({"role": "system", "content": "manual"}, user),
                 act=lambda text: seen.append(text) or "go to desk 2")
    assert text == f"Thought: {thought}\nAction: go to desk 2"
    assert "MY TASK" in seen[0] and "OTHER EPISODE" not in seen[0]
    turn = ({"role": "assistant", "content": "Action: go to desk 1"},
            {"role": "user", "content": "You arrive at desk 1."})
    assert reply("actor", ({"role": "system", "content": "manual"}, user, *turn)) == \
        "Action: go to desk 2"  # the same sub-goal goes on: no new thought


def test_without_own_memory_the_memory_stays_the_support_data(llm_server, tmp_path, lifebench_cli):
    """own_memory=false: the stream's successes do not join the memory (corridor has no
    support split, so it stays empty), where by default each one does."""
    srv = llm_server(policy="scripted")
    seen = {}
    for own in ("true", "false"):
        records = run_rap(lifebench_cli, srv, tmp_path / own, "--benchmark", "corridor",
                          "--split", "tiny", "--method-arg", f"own_memory={own}")
        assert all(r["success"] for r in records)
        seen[own] = [(r["extra"]["rap_memory_size"], r["extra"]["rap_added"]) for r in records]
    assert seen == {"true": [(0, True), (1, True), (2, True)],
                    "false": [(0, False), (0, False), (0, False)]}


# Plancraft's support instances that `support_limit=2` takes (one per target), and the
# reply that makes the second one's ReAct episode fail: it declares a craftable target
# impossible (a routed reply comes before the scripted model's).
SUPPORT = ("TRAIN0000", "TRAIN0001")
FAIL_RED_DYE = {"match": "Craft an item of type: red_dye",
                "replies": ["Action: impossible: it cannot be crafted"]}


def test_support_memory_from_plain_react_successes(llm_server, tmp_path, lifebench_cli):
    """support_paths=agent: plain ReAct plays each support instance (role `support`) and
    only its wins join the memory, as support entries; with own_memory=false the memory
    is the same for every scored episode."""
    srv = llm_server(policy="scripted", script=[FAIL_RED_DYE])
    out = tmp_path / "out"
    records = run_rap(lifebench_cli, srv, out, "--benchmark", "plancraft", "--split", "val.small",
                      "--limit", "2", "--max-steps", "3", "--method-arg", "support_paths=agent",
                      "--method-arg", "support_limit=2", "--method-arg", "own_memory=false")
    assert [r["extra"]["rap_memory_size"] for r in records] == [1, 1]
    assert not any(r["extra"]["rap_added"] for r in records)
    won = f"support:train:{SUPPORT[0]}"
    assert records[0]["extra"]["rap_plan_examples"] == [won]
    # the support episodes' calls are in the first record, under their own role
    assert records[0]["llm_usage"]["support"]["calls"] >= 2
    assert "support" not in records[1]["llm_usage"]
    # the red dye was played and lost: only the won instance is in memory
    assert any("Craft an item of type: red_dye" in str(r["messages"][-1]["content"])
               for r in srv.requests())
    [prepared] = (out / "prepared").glob("*.json")  # the memory `prepare` made
    [entry] = json.loads(prepared.read_text())["state"]["memory"]["entries"]
    assert (entry["entry_id"], entry["source"], entry["instance_id"]) == (won, "support", SUPPORT[0])
    assert entry["steps"] and entry["plan"].startswith("To solve the task, ")
