"""IGE under the scripted model (`fakeserver --policy scripted`): both roles get replies
IGE's parsers take on the first try (no random state choice, no unmatched action), the
explore role plays the oracle's walk, and the calls per role are the deterministic run's.
Corridor's states all share one cell, so it never asks `select`; Plancraft's first
validation game does."""

from __future__ import annotations

from conftest import read_records
from lifebench.methods.ige import EXPLORE, SELECT, prompts, scripted
from lifebench.methods.ige.replies import parse_choice


def run_ige(lifebench_cli, srv, out, *args):
    result = lifebench_cli("run", "--no-progress", "--method", "ige", "--model", "m",
                           "--base-url", srv.url, "--cache", "off", "--workers", "0",
                           "--out", str(out), *args)
    assert result.returncode == 0, result.stderr
    return read_records(out)


def check(record, select: int, explore: int) -> None:
    extra = record["extra"]
    assert record["status"] in ("ok", "budget_exhausted"), record["error"]
    assert record["success"]
    usage = {role: u["calls"] for role, u in record["llm_usage"].items()}
    assert usage == {role: n for role, n in ((SELECT, select), (EXPLORE, explore)) if n}
    assert extra["ige_llm_calls"] == {SELECT: select, EXPLORE: explore}
    # one call per decision, each parsed as it came: no random choice, no unmatched action
    assert record["llm_calls"] == select + explore
    assert record["steps"] - extra.get("replayed_steps", 0) == explore
    assert extra["ige_random_choices"] == 0 and extra["ige_unmatched_actions"] == 0


def test_the_roles_are_the_methods():
    assert (scripted.SELECT, scripted.EXPLORE) == (SELECT, EXPLORE)


def test_select_reply_names_the_furthest_state_and_parses():
    blocks = [f"State {i}: {n} actions from the start\n  Tried from here: []"
              for i, n in enumerate((0, 3, 3, 1))]
    prompt = prompts.select("Reach the exit.", None, blocks, scored=False)
    reply = scripted.select_reply(prompt)
    assert parse_choice(reply, 4) == (2, [])  # 3 actions, the newer of the two
    # where states show scores, the highest score first
    blocks = [f"State {i}: {n} actions from the start, score {s:g}\n  Tried from here: []"
              for i, (n, s) in enumerate(((0, 0), (4, 2), (6, 1)))]
    reply = scripted.select_reply(prompts.select("Cook the meal.", None, blocks, scored=True))
    assert parse_choice(reply, 3) == (1, []) and "highest score in the archive is 2" in reply


def test_scripted_ige_on_corridor_and_plancraft(llm_server, lifebench_cli, results_dir):
    srv = llm_server(policy="scripted")
    corridor = run_ige(lifebench_cli, srv, results_dir / "corridor", "--benchmark", "corridor",
                       "--split", "tiny")
    assert [r["instance_id"] for r in corridor] == ["corridor-2", "corridor-3", "corridor-4"]
    for record, length in zip(corridor, (2, 3, 4)):
        check(record, select=0, explore=length)  # the oracle's way out, one call a step
        assert record["steps"] == length

    [record] = run_ige(lifebench_cli, srv, results_dir / "plancraft", "--benchmark", "plancraft",
                       "--split", "val", "--limit", "1")
    check(record, select=2, explore=7)
    assert record["steps"] == 7 and record["extra"]["ige_iterations"] == 3
