"""RAP against the scripted model (`--policy scripted`) on corridor (no support split: the
memory fills with RAP's own successes along the stream): the planner's plan, the actor's
thought and action and the retrieval key all parse at first. The calls per role are this
deterministic run's."""

from __future__ import annotations

from lifebench.api import ScriptedRequest
from lifebench.methods.rap import RapMethod, prompts
from lifebench.methods.rap.memory import RetrievalKey, parse_key
from lifebench.testing import read_records


def test_rap_scripted_on_corridor(llm_server, results_dir, lifebench_cli):
    srv = llm_server(policy="scripted")
    result = lifebench_cli("run", "--no-progress", "--benchmark", "corridor", "--split", "tiny",
                           "--method", "rap", "--model", "m", "--base-url", srv.url,
                           "--cache", "off", "--workers", "0", "--out", str(results_dir),
                           timeout=120)
    assert result.returncode == 0, result.stderr
    records = sorted(read_records(results_dir), key=lambda r: r["episode_index"])
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
