"""How² against the scripted model (`--policy scripted`) on corridor: every role gets a
reply its parser takes at once, the first trial of each instance misses the memory (ask,
the non-executable teacher, parse), the second hits it (relevance), and the actor plays
the oracle's way to the exit. The calls per role are this deterministic run's."""

from __future__ import annotations

import json

from lifebench.methods.how2 import prompts
from lifebench.testing import read_records

INVALID = prompts.INVALID_CALL.split(":")[0]


def test_how2_scripted_on_corridor(llm_server, results_dir, lifebench_cli):
    srv = llm_server(policy="scripted")
    result = lifebench_cli("run", "--no-progress", "--benchmark", "corridor", "--split", "tiny",
                           "--trials", "2", "--method", "how2",
                           "--method-arg", "teacher=non-executable", "--model", "m",
                           "--base-url", srv.url, "--cache", "off", "--workers", "0",
                           "--out", str(results_dir), timeout=120)
    assert result.returncode == 0, result.stderr
    records = sorted(read_records(results_dir), key=lambda r: r["episode_index"])
    assert all(r["status"] in ("ok", "budget_exhausted") and not r["error"] for r in records)
    got = [(r["instance_id"], r["success"], r["steps"],
            {role: usage["calls"] for role, usage in r["llm_usage"].items()}) for r in records]
    assert got == [
        ("corridor-2", True, 2, {"actor": 3, "ask": 1, "teacher": 1, "parse": 1}),
        ("corridor-2", True, 2, {"actor": 3, "relevance": 1}),
        ("corridor-3", True, 3, {"actor": 4, "ask": 1, "teacher": 1, "parse": 1}),
        ("corridor-3", True, 3, {"actor": 4, "relevance": 1}),
        ("corridor-4", True, 4, {"actor": 5, "ask": 1, "teacher": 1, "parse": 1}),
        ("corridor-4", True, 4, {"actor": 5, "relevance": 1}),
    ]
    # no retry anywhere: no invalid call, no forced no-op, no feedback in any prompt
    assert all(r["extra"]["invalid_tool_calls"] == 0 and r["extra"]["forced_noops"] == 0
               for r in records)
    assert [(r["extra"]["cache_misses"], r["extra"]["memory_hits"], r["extra"]["stored"],
             r["extra"]["relevance_rejected"]) for r in records] == [(1, 0, 1, 0), (0, 1, 0, 0)] * 3
    requests = srv.requests()
    assert not any(INVALID in str(m.get("content") or "") for r in requests for m in r["messages"])
    # the parse role's entry has the four sections, stored with the teacher's steps
    state = json.loads(sorted((results_dir / "state").rglob("*.json"))[-1].read_text())["state"]
    entry = state["memory"]["you are in cell 0 of a corridor; the exit is cell 4"][0]["text"]
    assert entry.startswith("RECIPE: You are in cell 0") and "RELATED ITEMS: []" in entry
    assert "first right, then right, then right, then right" in entry


def test_table1_sr_counts_solvable_examples_and_all_examples_apart(llm_server, results_dir, lifebench_cli):
    """The scripted How² on a solvable example it cannot finish in one step (VAL0274,
    brown_dye) and an impossible one it declares impossible (VAL0382): Plancraft counts both
    outcomes, so all examples give 0.5; the paper's SR counts the solvable one alone: 0."""
    from conftest import markdown_table

    srv = llm_server(policy="scripted")
    result = lifebench_cli("run", "--no-progress", "--benchmark", "plancraft", "--split", "val",
                           "--instances", "VAL0274,VAL0382", "--max-steps", "1", "--method", "how2",
                           "--model", "m", "--base-url", srv.url, "--cache", "off",
                           "--workers", "0", "--out", str(results_dir), timeout=120)
    assert result.returncode == 0, result.stderr
    records = {r["instance_id"]: r for r in read_records(results_dir)}
    assert records["VAL0382"]["success"] and records["VAL0382"]["extra"]["impossible_truth"]
    assert not records["VAL0274"]["success"] and not records["VAL0274"]["extra"]["impossible_truth"]
    board = lifebench_cli("leaderboard", str(results_dir), "--no-plots")
    assert board.returncode == 0, board.stderr
    title = next(line for line in board.stdout.splitlines() if line.startswith("How² on Plancraft"))
    [row] = markdown_table(board.stdout, title)
    solvable = [r["success"] for r in records.values() if not r["extra"]["impossible_truth"]]
    assert row["low SR"] == f"{sum(solvable) / len(solvable):.3f} ± -" == "0.000 ± -"
    assert row["low SR all examples"] == "0.500"
    # the grid keeps Plancraft's own success (both outcomes count), and says so
    assert "| how2 " in board.stdout and "0.500" in next(
        line for line in board.stdout.splitlines() if line.startswith("| how2"))
    assert "plancraft: success as Plancraft's evaluator counts it" in board.stdout
