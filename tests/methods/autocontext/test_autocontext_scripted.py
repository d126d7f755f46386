"""AutoContext against the scripted model (`--policy scripted`). Corridor describes no
instance-context schema, so the provider skips it there; the build runs on Plancraft's
VAL0000 (seven oracle actions, native snapshots, actions that hold ": "). The scripted
explorer walks the oracle's path: each iteration probes the newest state with the no-op,
tries the oracle's next action and promotes the node it reached, until the episode ends.
Every reply is taken at once: no Planner feedback, no rejected edit. The calls per role
are this deterministic run's."""

from __future__ import annotations

import json

from lifebench.testing import read_records


def run(lifebench_cli, srv, out, *args: str):
    result = lifebench_cli("run", "--no-progress", "--method", "react", "--model", "m",
                           "--base-url", srv.url, "--cache", "off", "--workers", "0",
                           "--out", str(out), *args, timeout=120)
    assert result.returncode == 0, result.stderr
    return result


def test_autocontext_scripted_walks_the_oracle_path(llm_server, results_dir, lifebench_cli):
    srv = llm_server(policy="scripted")
    run(lifebench_cli, srv, results_dir, "--benchmark", "plancraft", "--split", "val",
        "--instances", "VAL0000", "--context", "autocontext")
    [record] = read_records(results_dir)
    assert record["status"] in ("ok", "budget_exhausted") and not record["error"]
    assert record["success"] and record["extra"]["context"]["name"] == "autocontext"
    [line] = [json.loads(x) for x in (results_dir / "contexts.jsonl").read_text().splitlines()]
    assert line["status"] == "ok" and not line["error"]
    assert (line["explore_steps"], line["llm_calls"]) == (14, 84)
    assert {role: usage["calls"] for role, usage in line["llm_usage"].items()} == {
        "plan": 23, "extract": 16, "check": 23, "apply": 15, "loop_control": 7}
    saved = json.loads((results_dir / "contexts" / f"{line['key']}.json").read_text())
    artefacts = saved["artefacts"]
    # loop control (Section 4.3) ends the build once the walk has nothing left to try
    assert (artefacts["iterations"], artefacts["stop"]) == (7, "no gaps left (loop control)")
    assert artefacts["planner"]["loop_control"] == ["yes"] * 6 + ["no"]
    planner, extractor = artefacts["planner"], artefacts["extractor"]
    # the winning move ended the episode, and nothing the build reads says so: the scripted
    # promoter picks that node, and only the forest's refusal turns it away
    winning = "move: from [0] to [I1] with quantity 16"
    assert planner["feedback"] and all(f.startswith(f"Nothing can be run after '{winning}'")
                                       for f in planner["feedback"]), planner["feedback"]
    assert planner["proposed"] == planner["admitted"] == 14
    sent = "\n".join(m["content"] for r in srv.requests() for m in r["messages"])
    assert winning in sent and not any(mark in sent for mark in ("ended here", "had ended", "episode ended"))
    assert len(planner["promoted"]) == 6 and planner["promoted"][0].startswith("s1_move_from")
    assert (extractor["proposed"], extractor["accepted"], extractor["rejected"],
            extractor["revised"]) == (23, 23, 0, 0)
    document = saved["document"]
    assert "- after `init_state -> move: from [I17] to [A1] with quantity 1`: " in document
    assert "- action: move: from [0] to [I1] with quantity 16" in document
    # no prompt was asked again but the refused promotions of the node the episode ended at
    asked_again = [r for r in srv.requests() if r["messages"][0]["content"].startswith("# AutoContext")
                   and len(r["messages"]) > 1]
    assert asked_again and all("Nothing can be run after" in r["messages"][-1]["content"] for r in asked_again)


def test_corridor_has_no_context_schema_so_autocontext_skips_it(llm_server, results_dir,
                                                                 lifebench_cli):
    srv = llm_server(policy="scripted")
    result = run(lifebench_cli, srv, results_dir, "--benchmark", "corridor", "--split", "tiny",
                 "--limit", "1", "--context", "none,autocontext")
    assert "corridor describes no instance-context schema" in result.stderr
    [record] = read_records(results_dir)
    assert record["status"] == "ok" and record["success"] and "context" not in record["extra"]
    assert not (results_dir / "contexts.jsonl").exists()


def test_no_build_input_holds_the_instances_task(llm_server, results_dir, lifebench_cli):
    """A context is task-agnostic: on ALFWorld, whose first observation states the task
    ("Your task is to: ..."), no request of the build holds that sentence; the method's own
    episode, played after the build, is shown it as always."""
    import json as _json

    srv = llm_server(policy="scripted")
    result = lifebench_cli("run", "--no-progress", "--benchmark", "alfworld", "--split",
                           "valid_unseen", "--limit", "1", "--method", "react", "--model", "m",
                           "--base-url", srv.url, "--cache", "off", "--workers", "0",
                           "--max-steps", "3", "--context", "autocontext", "--context-arg",
                           "explore_steps=20", "--context-arg", "max_iterations=2",
                           "--out", str(results_dir))
    assert result.returncode == 0, result.stderr
    [build] = [_json.loads(line) for line in (results_dir / "contexts.jsonl").read_text().splitlines()]
    requests = [_json.dumps(r["messages"]) for r in srv.requests()]
    built, played = requests[:build["llm_calls"]], requests[build["llm_calls"]:]
    assert built and played
    assert not any("Your task is to:" in text for text in built)
    assert any("Your task is to:" in text for text in played)
    document = (results_dir / "contexts" / f"{build['key']}.json").read_text()
    assert "Your task is to:" not in document
