"""STEP against the scripted model (`--policy scripted`) on corridor: the Planner, the
Executor, the subtask check, the rule check (second trial: the first trial's learnings hold
a "DOES NOT" rule), the summariser and the strategy writer all parse at first; the Refiner
when a subtask runs out of actions; the chooser's reply directly. The calls per role are
this deterministic run's."""

from __future__ import annotations

from lifebench.api import ScriptedRequest
from lifebench.methods.step import StepMethod, field, numbers, prompts
from lifebench.testing import read_records

REJECTED = prompts.REJECTED.split('"{action}"')[1].split(":")[0].strip()  # "was not approved"


def run_step(lifebench_cli, srv, out, *args):
    result = lifebench_cli("run", "--no-progress", "--benchmark", "corridor", "--split", "tiny",
                           "--method", "step", "--model", "m", "--base-url", srv.url,
                           "--cache", "off", "--workers", "0", "--trials", "1", "--out", str(out),
                           *args, timeout=120)
    assert result.returncode == 0, result.stderr
    records = sorted(read_records(out), key=lambda r: r["episode_index"])
    assert all(r["status"] in ("ok", "budget_exhausted") and not r["error"] for r in records)
    # no retry: nothing proposed was rejected or unplayable, and no prompt holds feedback
    assert all(r["extra"]["step_rejected"] == 0 and r["extra"]["step_unplayable"] == 0
               and "stopped" not in r["extra"] for r in records)
    assert not any(REJECTED in str(m.get("content") or "")
                   for r in srv.requests() for m in r["messages"])
    return [(r["instance_id"], r["trial"], r["success"], r["steps"],
             {role: usage["calls"] for role, usage in r["llm_usage"].items()}) for r in records]


def test_step_scripted_on_corridor(llm_server, results_dir, lifebench_cli):
    srv = llm_server(policy="scripted")
    got = run_step(lifebench_cli, srv, results_dir, "--trials", "2")
    after = {"strategy": 1, "summary": 1}
    # the subtask check at every proposal, a subtask's first too (the authors' code)
    assert got == [
        ("corridor-2", 0, True, 2, {"actor": 2, "planner": 1, "subtask_check": 2, **after}),
        ("corridor-2", 1, True, 2, {"actor": 2, "planner": 1, "rules": 2, "subtask_check": 2,
                                    **after}),
        ("corridor-3", 0, True, 3, {"actor": 3, "planner": 2, "subtask_check": 3, **after}),
        ("corridor-3", 1, True, 3, {"actor": 3, "planner": 2, "rules": 3, "subtask_check": 3,
                                    **after}),
        ("corridor-4", 0, True, 4, {"actor": 4, "planner": 3, "subtask_check": 4, **after}),
        ("corridor-4", 1, True, 4, {"actor": 4, "planner": 3, "rules": 4, "subtask_check": 4,
                                    **after}),
    ]
    assert all(not r["extra"]["format_failures"] for r in read_records(results_dir))
    # the second trial plans with the strategy and the learnings, and the Planner forwards
    # the learning that names its subtask to the Executor
    planner = [r["messages"][-1]["content"] for r in srv.requests()
               if prompts.PLAN.split("{task}")[0] in r["messages"][-1]["content"]]
    later = [p for p in planner if "A strategy written after your last attempt" in p]
    assert len(later) == 1 + 2 + 3 and all("1. right: it moved the task on" in p for p in later)
    assert all("3. Repeating an action whose answer changed nothing DOES NOT CONTRIBUTE" in p
               for p in later)
    executor = [r["messages"][-1]["content"] for r in srv.requests()
                if "Your current subtask: right" in r["messages"][-1]["content"]]
    assert sum("1. Doing 'right' SHOULD BE NECESSARY" in e and "Repeating an action" not in e
               for e in executor) == 2 + 3 + 4


def test_step_scripted_refiner_on_corridor(llm_server, results_dir, lifebench_cli):
    srv = llm_server(policy="scripted")
    got = run_step(lifebench_cli, srv, results_dir, "--instances", "corridor-3",
                   "--method-arg", "subtask_actions=1")
    # refined after its one action, the subtask is judged done at its refined form's first
    # proposal (the last action played is the one it names), so the Planner names the next
    assert got == [("corridor-3", 0, True, 3, {"actor": 3, "planner": 2, "refiner": 1,
                                               "subtask_check": 3, "strategy": 1, "summary": 1})]


def reply(role: str, user: str) -> str:
    request = ScriptedRequest(role=role, messages=({"role": "system", "content": "manual"},
                                                   {"role": "user", "content": user}),
                              tools=(), benchmark="corridor", act=lambda text: "right")
    return str(StepMethod.scripted_reply(request))


def test_step_scripted_chooser_and_checks_parse():
    choices = "\n".join(f"{i}. {a}" for i, a in enumerate(["go to desk 1", "take pen", "look"]))
    ask = prompts.ACTION_CHOICE.format(action="take pen", rationale="the pen is here",
                                       choices=choices)
    assert numbers(field(reply("chooser", ask), "Choice")) == [1]  # the proposal itself
    ask = prompts.ACTION_CHOICE.format(action="grab pen", rationale="x", choices=choices)
    assert numbers(field(reply("chooser", ask), "Choice")) == [0]  # else the nearest
    turn = prompts.TURN.format(action="right", observation="You are in cell 1.")
    check = prompts.SUBTASK_CHECK.format(subtask="right", state="")
    assert numbers(field(reply("subtask_check", f"{turn}\n\n{check}"), "Complete")) == [1]
    check = prompts.SUBTASK_CHECK.format(subtask="left", state="")
    assert numbers(field(reply("subtask_check", f"{turn}\n\n{check}"), "Complete")) == [0]
    rules = prompts.RULE_CHECK.format(subtask="right", action="right", rules="1. X DOES NOT help",
                                      state="")
    assert numbers(field(reply("rules", rules), "Approved")) == [1]
