"""`--plan --pilot N`: the first N instances of every cell played on the endpoint planned
for (here the local scripted server plays it), kept as the run's own results, and the rest
extrapolated with a central estimate and a 90% interval; the full run then plays none of
the pilot's episodes again, and lands inside the interval."""

from __future__ import annotations

import json

import pytest

from conftest import one_line_error, read_records

# Episodes that vary in length: Plancraft's (1 to 13 steps for the scripted model), ALFWorld's,
# and TextWorld's (25 to 80: half its games run to the budget), for a stateless method and
# a lifelong one with 3 trials (Reflexion: the full run resumes its streams from the memory
# the pilot saved).
SLICE = ["--method", "react,reflexion", "--benchmark", "plancraft,alfworld,textworld",
         "--split", "plancraft:val", "--limit", "8", "--model", "m", "--cache", "off",
         "--no-progress"]


@pytest.mark.slow(reason="a pilot and the full run of 6 cells x 8 instances whose lengths vary "
                         "(TextWorld's run to 80 steps, Reflexion's 3 trials): fewer instances "
                         "or shorter episodes would not show the extrapolation")
def test_pilot_then_run_lands_inside_the_interval_and_replays_nothing(llm_server, lifebench_cli,
                                                                      tmp_path):
    endpoint = llm_server(policy="scripted")
    out = tmp_path / "out"
    planned = lifebench_cli("grid", "--plan", "--pilot", "3", *SLICE, "--base-url", endpoint.url,
                            "--out", str(out))
    assert planned.returncode == 0, planned.stderr
    plan = json.loads((out / "plan.json").read_text())
    assert plan["version"] == 2 and plan["interval"] == "90%"
    pilot_records = read_records(out)
    # the pilot: the first 3 instances of every cell, every trial (Reflexion's until its
    # first success), real results in OUT
    stops_at_success(pilot_records, instances=3)
    assert {r["episode_index"] for r in pilot_records if r["method"] == "react"} == {0, 1, 2}
    # its cost, printed: exactly what the endpoint served
    sent = endpoint.stats()["requests"]
    assert plan["pilot"]["calls"] == sent == sum(r["llm_calls"] for r in pilot_records)
    n = len(pilot_records)
    assert f"pilot: {n} episodes ({n} attempts) on {endpoint.url}: {sent:,} LLM calls" in planned.stdout
    pilot_requests = {json.dumps(r, sort_keys=True) for r in endpoint.requests()}
    cells = {(c["method"], c["benchmark"]): c for c in plan["cells"]}
    # what is left: every episode not recorded, but Reflexion's trials after a success
    for (method, _), c in cells.items():
        left = c["episodes"] - c["recorded"]["episodes"]
        assert c["episodes_to_run"] == left if method == "react" else c["episodes_to_run"] <= left
    # planned again on what the pilot recorded: nothing to play, and the same plan (the
    # bootstrap is seeded)
    again = lifebench_cli("grid", "--plan", "--pilot", "3", *SLICE, "--base-url", endpoint.url,
                          "--out", str(out))
    assert again.returncode == 0 and endpoint.stats()["requests"] == sent
    replanned = json.loads((out / "plan.json").read_text())
    for mine, theirs in zip(plan["cells"], replanned["cells"]):
        assert [mine[k] for k in ("calls", "tokens_in", "tokens_out")] == \
            [theirs[k] for k in ("calls", "tokens_in", "tokens_out")]

    run = lifebench_cli("grid", *SLICE, "--base-url", endpoint.url, "--out", str(out))
    assert run.returncode == 0, run.stderr
    assert f"{n} recorded before" in run.stdout
    records = read_records(out)
    assert records[:len(pilot_records)] == pilot_records  # kept, not played again
    new = records[len(pilot_records):]
    keys = [(r["method"], r["benchmark"], r["instance_id"], r["trial"]) for r in records]
    assert len(keys) == len(set(keys))  # each episode once
    stops_at_success(records, instances=8)
    # every request the full run sent belongs to an episode the pilot did not play ...
    assert endpoint.stats()["requests"] - sent == sum(r["llm_calls"] for r in new)
    # ... and none of the pilot's requests came again (the server keeps the last 1000; a
    # request may repeat within an episode's trials: Reflexion replays a won trial)
    assert not pilot_requests & {json.dumps(r, sort_keys=True) for r in endpoint.requests()}

    totals = {"calls": 0, "tokens_in": 0}
    central = {"calls": 0.0, "tokens_in": 0.0}
    for (method, benchmark), cell in cells.items():
        mine = [r for r in records if (r["method"], r["benchmark"]) == (method, benchmark)]
        for name, field in (("calls", "llm_calls"), ("tokens_in", "tokens_in")):
            spent = sum(r[field] for r in mine)
            held = cell["recorded"][name]
            low, high = cell[name]
            # every cell inside its 90% interval (what the pilot recorded plus the rest's)
            assert held + low <= spent <= held + high, (method, benchmark, name, low, spent, high)
            totals[name] += spent
            central[name] += held + cell["central"][name]
    # The total's central estimate within 25% of what was spent. A cell's own central
    # estimate is no better than its 3 instances: the scripted model never fails ALFWorld's
    # first games, so the share of long instances a small pilot cannot rule out puts ReAct's
    # there well above what it spent, while TextWorld's first games are its shortest; the
    # intervals hold both. (A pilot of 2, enough while Reflexion played every trial, left
    # its TextWorld cell with two instances won at their first trial: too few to see that
    # the rest lose every trial at the budget.)
    for name in totals:
        assert abs(central[name] - totals[name]) <= 0.25 * totals[name], (name, central, totals)

    board = lifebench_cli("leaderboard", str(out), "--no-plots")
    assert board.returncode == 0, board.stderr
    section = board.stdout.split("The plan against what was spent\n\n")[1].split("\n\n")[0]
    rows = [line for line in section.splitlines()[2:] if line.startswith("| ")]
    assert len(rows) == 6 and all(row.count("| within ") == 2 for row in rows), section
    assert "a pilot's 90% interval" in board.stdout


def test_pilot_needs_an_endpoint_and_a_plan(lifebench_cli, tmp_path):
    base = ["grid", "--method", "react", "--benchmark", "plancraft", "--split", "val.small",
            "--limit", "1", "--out", str(tmp_path / "out")]
    endpoint = ["--model", "m", "--base-url", "http://127.0.0.1:9/v1"]
    one_line_error(lifebench_cli(*base, "--plan", "--pilot", "2"), "--pilot", "--model NAME")
    one_line_error(lifebench_cli(*base, *endpoint, "--plan", "--pilot", "0"), "--pilot 0", "1 or more")
    one_line_error(lifebench_cli(*base, *endpoint, "--pilot", "2"), "give --plan --pilot N")
    one_line_error(lifebench_cli(*base, *endpoint, "--plan", "--pilot-full-preparation"),
                   "--pilot-full-preparation", "--pilot N")
    assert not (tmp_path / "out").exists()


def stops_at_success(records: list[dict], instances: int) -> None:
    """ReAct: one episode per instance of each benchmark; Reflexion: trials from 0 until the
    first success, or all 3 failing (its protocol stops an instance at its first success)."""
    assert sum(r["method"] == "react" for r in records) == instances * 3
    trials: dict = {}
    for r in records:
        if r["method"] == "reflexion":
            trials.setdefault((r["benchmark"], r["instance_id"]), []).append((r["trial"], r["success"]))
    assert len(trials) == instances * 3
    for played in trials.values():
        assert [t for t, _ in played] == list(range(len(played)))
        assert [won for _, won in played[:-1]] == [False] * (len(played) - 1)
        assert played[-1][1] or len(played) == 3
