"""CLIN against the scripted model (`--policy scripted`) on corridor: the executor's replies
parse and match a valid action at once, the summariser writes learnings in CLIN's causal
forms, and the second trial of each instance reads them. The calls per role are this
deterministic run's."""

from __future__ import annotations

from lifebench.methods.clin import prompts
from lifebench.testing import read_records

NO_MATCH = prompts.NO_MATCH.split('"{action}"')[1].split(".")[0].strip()  # "does not match ..."
EXECUTOR = prompts.EXECUTOR_SYSTEM.split("{instructions}")[0]


def test_clin_scripted_on_corridor(llm_server, results_dir, lifebench_cli):
    srv = llm_server(policy="scripted")
    result = lifebench_cli("run", "--no-progress", "--benchmark", "corridor", "--split", "tiny",
                           "--trials", "2", "--method", "clin", "--model", "m",
                           "--base-url", srv.url, "--cache", "off", "--workers", "0",
                           "--out", str(results_dir), timeout=120)
    assert result.returncode == 0, result.stderr
    records = sorted(read_records(results_dir), key=lambda r: r["episode_index"])
    assert all(r["status"] in ("ok", "budget_exhausted") and not r["error"] for r in records)
    got = [(r["instance_id"], r["success"], r["steps"],
            {role: usage["calls"] for role, usage in r["llm_usage"].items()}) for r in records]
    assert got == [
        ("corridor-2", True, 2, {"actor": 2, "summary": 1}),
        ("corridor-2", True, 2, {"actor": 2, "summary": 1}),
        ("corridor-3", True, 3, {"actor": 3, "summary": 1}),
        ("corridor-3", True, 3, {"actor": 3, "summary": 1}),
        ("corridor-4", True, 4, {"actor": 4, "summary": 1}),
        ("corridor-4", True, 4, {"actor": 4, "summary": 1}),
    ]
    # no retry: every reply matched a valid action at once, and no prompt holds feedback
    assert all(r["extra"]["match_feedback"] == 0 and "stopped" not in r["extra"] for r in records)
    requests = srv.requests()
    assert not any(NO_MATCH in str(m.get("content") or "") for r in requests for m in r["messages"])
    # the first trial's learnings reach the second trial's executor, which names them
    learned = '1. Doing "right" first SHOULD BE NECESSARY to start the task.'
    executor = [r["messages"] for r in requests if r["messages"][0]["content"].startswith(EXECUTOR)]
    assert len(executor) == 2 * (2 + 3 + 4)
    second = [messages for messages in executor if learned in messages[1]["content"]]
    assert len(second) == 2 + 3 + 4
    replies = [m["content"] for messages in second for m in messages if m["role"] == "assistant"]
    assert "Learnings used: 1, 2\nRationale: Learnings 1, 2 name this action for the task.\n" \
           "Action: right" in replies
