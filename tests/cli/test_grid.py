"""`lifebench grid`: every installed method (a third party's too) on the benchmarks, each
cell with its method's declared protocol; refused cells said and kept; the grid table."""

from __future__ import annotations

import json

from conftest import read_records


def test_grid_runs_every_installed_method_with_its_protocol(cli, tmp_path):
    out = tmp_path / "out"
    result = cli("grid", "--benchmark", "plancraft", "--split", "val.small", "--limit", "2",
                 "--baseline", "random", "--no-progress", "--out", str(out))
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    ran = {r["method"] for r in records}
    # every installed method that can run without a model, the test plugin's included
    assert {"random", "oracle", "tally", "counter", "returner", "teacher-follower"} <= ran
    # the plugin's protocol: two trials, its argument on Plancraft (the first gives up)
    tally = [r for r in records if r["method"] == "tally"]
    assert sorted((r["instance_id"], r["trial"]) for r in tally) == \
        sorted((i, t) for i in {r["instance_id"] for r in tally} for t in (0, 1))
    assert not any(r["success"] for r in tally if r["trial"] == 0)
    assert all(r["success"] for r in tally if r["trial"] == 1)
    # one line per refused cell, with its reason; a broken plugin named, the rest run
    stderr = result.stderr
    assert "skipping react on plancraft:val.small: needs an LLM" in stderr
    assert "skipping reflexion on plancraft:val.small: needs an LLM" in stderr
    assert "skipping faulty on plancraft:val.small: faulty counts its attempts" in stderr
    assert "skipping method broken" in stderr
    manifest = json.loads((out / "manifest.json").read_text())["runs"][-1]
    refused = {(r["method"], r["benchmark"]) for r in manifest["refused"]}
    assert {("react", "plancraft"), ("faulty", "plancraft"), ("step", "plancraft")} <= refused
    cells = {c["method"]: c for c in manifest["cells"]}
    assert (cells["tally"]["trials"], cells["tally"]["scored_trial"]) == (2, "last")
    assert (cells["random"]["trials"], cells["random"]["scored_trial"]) == (1, None)

    board = cli("leaderboard", str(out))
    assert board.returncode == 0, board.stderr
    lines = board.stdout.split("\n\n")[1].splitlines()  # the first table, under its title
    assert board.stdout.startswith("The grid: methods × benchmarks\n")
    rows = {line.split("|")[1].strip(): line.split("|")[2].strip() for line in lines[2:]
            if line.startswith("| ")}
    # the last trial is scored: tally succeeds as the oracle does, in bold beside it
    assert rows["tally"].startswith("**1.000**") and rows["oracle"].startswith("**1.000**")
    assert rows["random"].startswith("0.000")
    assert rows["react"].startswith("×") and rows["faulty"].startswith("×")
    assert "needs an LLM: give --model NAME and --base-url URL" in board.stdout
    assert "faulty counts its attempts in files" in board.stdout
    assert "significantly better/worse than random" in board.stdout
    assert "mean rank" in lines[0]
