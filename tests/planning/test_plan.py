"""`--plan`: what a run will cost, measured against the built-in scripted model, never
against the endpoint it plans for; checked against what the run then spends."""

from __future__ import annotations

import json
import math

from conftest import read_records

CELLS = ["--benchmark", "plancraft", "--split", "val.small", "--method", "react,reflexion,random",
         "--limit", "3"]


def plan_of(out):
    return {c["method"]: c for c in json.loads((out / "plan.json").read_text())["cells"]}


def test_plan_sends_nothing_and_brackets_what_the_run_spends(llm_server, lifebench_cli, tmp_path):
    endpoint = llm_server(policy="scripted")
    prices = tmp_path / "prices.json"
    prices.write_text('{"m": [0.5, 2.0]}')
    out = tmp_path / "out"
    result = lifebench_cli("grid", "--plan", *CELLS, "--model", "m", "--base-url", endpoint.url,
                           "--tokens-per-s", "1000", "--prices", str(prices), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert endpoint.stats()["requests"] == 0  # the endpoint planned for heard nothing
    assert not (out / "episodes.jsonl").exists()
    assert result.stdout.startswith("| method ") and "assumption: " in result.stdout
    # no window is known (no flag, no profile, no earlier run): said in one line
    assert [line for line in result.stdout.splitlines() if "context window" in line] == [
        "assumption: no context window known (--context-window N, the doctor's profile, or an "
        "earlier run into this --out that read /v1/models): the high end's prompts grow without a cap"]
    cells = plan_of(out)
    # episodes with each method's protocol: Reflexion's 3 trials
    assert {m: c["episodes"] for m, c in cells.items()} == {"react": 3, "reflexion": 9, "random": 3}
    assert cells["random"]["calls"] == [0.0, 0.0]
    react = cells["react"]
    assert 0 < react["calls"][0] <= react["calls"][1]
    assert 0 < react["tokens_in"][0] <= react["tokens_in"][1]
    # the central estimate: half the episodes at the low length, half at the budget
    for name in ("calls", "tokens_in"):
        assert react["calls"][0] < react["central"]["calls"] < react["calls"][1]
        assert react["central"][name] == (react[name][0] + react[name][1]) / 2
    assert "central, half the episodes at the low length and half at the budget" in result.stdout
    # hours at 1000 tokens/s, USD at the price table's rates
    low_tokens = react["tokens_in"][0] + react["tokens_out"][0]
    assert math.isclose(react["hours"][0], low_tokens / 1000 / 3600)
    assert math.isclose(react["cost_usd"][0],
                        (react["tokens_in"][0] * 0.5 + react["tokens_out"][0] * 2.0) / 1e6)
    # paired, alpha 0.05, power 0.8, p 0.5, correlation 0.5, n = 3 instances (seeds add nothing)
    assert react["instances"] == 3
    assert math.isclose(react["mde"], min(1.0, 2.8015852 * math.sqrt(0.25 / 3)), rel_tol=1e-6)

    # the run itself, on the same scripted model: its spending lies within the plan's range
    run = lifebench_cli("grid", *CELLS, "--model", "m", "--base-url", endpoint.url,
                        "--cache", "off", "--no-progress", "--out", str(out))
    assert run.returncode == 0, run.stderr
    records = read_records(out)
    for method in ("react", "reflexion"):
        spent = [r for r in records if r["method"] == method]
        calls = sum(r["llm_calls"] for r in spent)
        tokens = sum(r["tokens_in"] for r in spent)
        low, high = cells[method]["calls"]
        assert low <= calls <= high, (method, low, calls, high)
        assert cells[method]["tokens_in"][0] <= tokens <= cells[method]["tokens_in"][1]
    # the leaderboard sets the plan beside what was spent
    board = lifebench_cli("leaderboard", str(out))
    assert board.returncode == 0, board.stderr
    section = board.stdout.split("The plan against what was spent\n\n")[1]
    rows = {line.split("|")[1].strip(): line for line in section.splitlines()[2:]
            if line.startswith("| ")}
    assert set(rows) == {"react", "reflexion", "random"}
    assert rows["react"].count("| within ") == 2 and "| 3 " in rows["react"]
    (out / "plan.json").write_text('{"format": "lifebench-plan", "cells": 5}')
    board = lifebench_cli("leaderboard", str(out))
    assert board.returncode == 0 and "The plan against what was spent" not in board.stdout
    assert [line for line in board.stderr.splitlines() if "plan.json" in line] == [
        f"note: {out / 'plan.json'} is unreadable (not a plan `--plan` wrote); the plan is left out"]


def test_plan_reads_the_doctors_profile(lifebench_cli, tmp_path):
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps({
        "format": "lifebench-endpoint-profile", "version": 1, "model": "m",
        "base_url": "http://127.0.0.1:9/v1", "tools": False, "context_window": 4096,
        "prefill_tokens_per_s": 2000.0, "decode_tokens_per_s": 50.0}))
    out = tmp_path / "out"
    result = lifebench_cli("grid", "--plan", "--benchmark", "plancraft", "--split", "val.small",
                           "--method", "react,how2", "--limit", "1", "--model", "m",
                           "--base-url", "http://127.0.0.1:9/v1", "--server-profile", str(profile),
                           "--out", str(out))
    assert result.returncode == 0, result.stderr
    react = plan_of(out)["react"]
    expected = react["tokens_in"][1] / 2000 / 3600 + react["tokens_out"][1] / 50 / 3600
    assert math.isclose(react["hours"][1], expected)
    assert "run the methods that offer tools (How²) with --llm-tool-protocol text" in result.stdout
    # prompts never grow past the profile's context window
    assert react["tokens_in"][1] <= react["calls"][1] * 4096
    assert "every prompt capped at the context window, 4,096 tokens (the doctor's profile)" \
        in result.stdout
    bad = lifebench_cli("grid", "--plan", "--benchmark", "plancraft", "--method", "react",
                        "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
                        "--server-profile", str(tmp_path / "missing.json"), "--out", str(out))
    assert bad.returncode == 2 and "lifebench doctor" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_plan_counts_tokens_with_the_models_tokenizer(lifebench_cli, tmp_path):
    """With a tokenizer file (here MiniLM's, the one model whose files are on this machine),
    every token count is the 4-characters estimate times the ratio measured on the probe's
    prompts; a file that is not a tokenizer is one line."""
    from lifebench.embeddings import find_model

    tokenizer = find_model()[0] / "tokenizer.json"
    args = ["grid", "--plan", "--benchmark", "plancraft", "--split", "val.small", "--method",
            "react", "--limit", "1", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"]
    plain = lifebench_cli(*args, "--out", str(tmp_path / "a"))
    counted = lifebench_cli(*args, "--tokenizer", str(tokenizer), "--out", str(tmp_path / "b"))
    assert plain.returncode == 0 and counted.returncode == 0, counted.stderr
    [line] = [line for line in counted.stdout.splitlines() if "tokens counted with" in line]
    ratio = float(line.split(": ")[2].split(" of the")[0])
    assert 0.3 < ratio < 3 and ratio != 1.0
    a, b = plan_of(tmp_path / "a")["react"], plan_of(tmp_path / "b")["react"]
    assert b["calls"] == a["calls"]
    assert math.isclose(b["tokens_in"][1], a["tokens_in"][1] * ratio, rel_tol=2e-3)
    bad = lifebench_cli(*args, "--tokenizer", str(tmp_path / "prices.json"), "--out", str(tmp_path / "c"))
    assert bad.returncode == 2 and "not a tokenizer file" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
