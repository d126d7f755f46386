"""Methods that return to earlier states of their episode (`needs.restore`, IGE): the
harness restores natively where the env can (Plancraft), else resets and replays, counting
the replayed actions as steps of the episode; a return gives back the observation of the
snapshot; a budget that runs out during a replay ends the episode as budget_exhausted."""

from __future__ import annotations

import json

from conftest import read_records


def returner(cli, out, benchmark, *more):
    limit = () if "--instances" in more else ("--limit", "1")
    return cli("run", "--no-progress", "--benchmark", benchmark, "--method", "returner",
               *limit, "--workers", "0", "--out", str(out), *more)


def trajectory(out) -> list[dict]:
    [path] = (out / "trajectories").glob("*.jsonl")
    return json.loads(path.read_text().splitlines()[0])["steps"]


def test_replayed_returns_count_their_steps_and_give_back_the_same_observation(cli, tmp_path):
    out = tmp_path / "tw"
    result = returner(cli, out, "textworld", "--max-steps", "20")
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    extra = record["extra"]
    assert extra["returned_same"] == [True, True]
    assert extra["restores"] == 2 and extra["replayed_steps"] == 2 * 2
    # 2 lead + 2 x (3 wandered + 2 replayed), then sampled actions until the budget.
    assert record["steps"] == 20 and record["status"] == "budget_exhausted"
    steps = trajectory(out)
    returns = [i for i, s in enumerate(steps) if i and "action" not in s]
    assert len(returns) == 2 and len(steps) == 1 + 20 + 2
    assert [s["action"] for s in steps[returns[0] + 1: returns[0] + 3]] == \
        [s["action"] for s in steps[1:3]]  # the lead, replayed


def test_native_returns_cost_no_step(cli, tmp_path):
    out = tmp_path / "pc"
    result = returner(cli, out, "plancraft", "--split", "val.small", "--instances", "VAL0274",
                      "--max-steps", "12")
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    assert record["extra"]["returned_same"] == [True, True]
    assert record["extra"]["replayed_steps"] == 0 and record["extra"]["restores"] == 2


def test_a_budget_that_ends_during_a_replay_ends_the_episode(cli, tmp_path):
    out = tmp_path / "short"
    result = returner(cli, out, "textworld", "--max-steps", "6", "--method-arg", "lead=3",
                      "--method-arg", "wander=2")
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    # 3 lead + 2 wandered = 5; the return replays 1 of its 3 actions, then the budget ends.
    assert record["status"] == "budget_exhausted" and record["steps"] == 6
    assert record["error"] is None and record["extra"]["returned_same"] == []
