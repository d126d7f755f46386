"""Instance contexts as a harness service (`--context`): built once per instance in a stage
before the episodes, stored in the results directory, given to every method through its
task, charged once, reused on resume and by later runs. The test plugin's
`scripted-context` walks a few random steps and asks the local server once (role "ctx")."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import read_records, without_timings
from lifebench.api import SCHEMA_VERSION

BUILDER = "SCRIPTED-CONTEXT builder"
MARKER = "CONTEXT-MARKER"


def run(cli, srv, out: Path, *more: str, methods: str = "parrot", limit: str = "2"):
    return cli("run", "--no-progress", "--benchmark", "plancraft", "--split", "val.small",
               "--method", methods, "--model", "fake-model", "--base-url", srv.url,
               "--limit", limit, "--max-steps", "2", "--workers", "0", "--out", str(out),
               "--cache-path", str(out.parent / f"{out.name}-llm.sqlite"), "--llm-retries", "0",
               *more)


def server(llm_server):
    return llm_server(script=[{"match": BUILDER, "replies": ["ROOM-FACTS"]},
                              {"match": ".", "replies": ["think: what now?"]}])


def builds(srv) -> list[dict]:
    return [r for r in srv.requests() if r["messages"][0]["content"] == BUILDER]


def system_messages(srv) -> list[str]:
    return [r["messages"][0]["content"] for r in srv.requests()
            if r["messages"][0]["role"] == "system" and r["messages"][0]["content"] != BUILDER]


def context_lines(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "contexts.jsonl").read_text().splitlines()]


def test_a_context_is_built_once_per_instance_and_reaches_every_method(cli, llm_server, tmp_path):
    srv = server(llm_server)
    out = tmp_path / "run"
    result = run(cli, srv, out, "--context", "scripted-context", methods="parrot,react")
    assert result.returncode == 0, result.stderr
    lines = context_lines(out)
    assert len(lines) == 2 and all(line["status"] == "ok" for line in lines)
    assert len(builds(srv)) == 2  # two instances, two methods: each context built once
    assert all(line["explore_steps"] == 2 and line["llm_calls"] == 1 for line in lines)
    for line in lines:
        saved = json.loads((out / "contexts" / f"{line['key']}.json").read_text())
        assert saved["document"].startswith(f"{MARKER} ROOM-FACTS")
        assert saved["artefacts"] == {"walked": 2}
    prompts = system_messages(srv)
    assert prompts and all(MARKER in p and "ROOM-FACTS" in p for p in prompts)
    records = read_records(out)
    assert len(records) == 4 and {r["method"] for r in records} == {"parrot", "react"}
    by_instance: dict[str, list[dict]] = {}
    for r in records:
        assert r["context"] == "scripted-context" and r["context_config_hash"]
        assert r["steps"] <= 2 and r["schema_version"] == SCHEMA_VERSION
        context = r["extra"]["context"]
        assert context["name"] == "scripted-context" and context["explore_steps"] == 2
        assert r["llm_calls"] == r["llm_usage"]["actor"]["calls"]  # building is not the episode's
        by_instance.setdefault(r["instance_id"], []).append(r)
    for played in by_instance.values():  # the exploration is charged once, to one episode
        charged = [r for r in played if r["extra"]["context"]["charged"]]
        assert len(charged) == 1 and charged[0]["explore_steps"] == 2
        assert all(r["explore_steps"] == 0 for r in played if r is not charged[0])

    # A rerun finds everything recorded and builds nothing.
    before = len(builds(srv))
    again = run(cli, srv, out, "--context", "scripted-context", methods="parrot,react")
    assert again.returncode == 0 and "nothing to do" in again.stdout + again.stderr
    assert len(builds(srv)) == before

    # Another results directory reuses the contexts through --context-cache: no build, and
    # no episode there is charged an exploration.
    other = tmp_path / "other"
    reused = run(cli, srv, other, "--context", "scripted-context", "--context-cache", str(out))
    assert reused.returncode == 0, reused.stderr
    assert len(builds(srv)) == before
    assert {line["key"] for line in context_lines(other)} == {line["key"] for line in lines}
    assert all(line["reused_from"] == str(out) for line in context_lines(other))
    for r in read_records(other):
        assert r["explore_steps"] == 0 and not r["extra"]["context"]["charged"]
        assert r["extra"]["context"]["reused_from"] == str(out)


def test_the_context_axis_runs_baseline_and_context_arms_side_by_side(cli, llm_server, tmp_path):
    srv = server(llm_server)
    out = tmp_path / "run"
    result = run(cli, srv, out, "--context", "none,scripted-context",
                 "--context-grid", "show=all,head", limit="1")
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    arms = {(r["context"], r["context_config_hash"]) for r in records}
    assert len(records) == 3 and len(arms) == 3 and ("", "") in arms
    assert len(builds(srv)) == 1  # `show` only changes what is shown: one build serves both
    prompts = system_messages(srv)
    assert len(prompts) == 3 and sum(MARKER not in p for p in prompts) == 1
    head = [r for r in records if r["extra"].get("context", {}).get("config") == {"show": "head"}]
    assert len(head) == 1
    assert not any("ROOM-FACTS" in p and MARKER not in p for p in prompts)
    assert any(MARKER in p and "ROOM-FACTS" not in p for p in prompts)  # the head only
    board = cli("leaderboard", str(out))
    assert board.returncode == 0, board.stderr
    rows = [line for line in board.stdout.splitlines() if line.startswith("| val.small | parrot")]
    assert len(rows) == 3 and sum("| parrot + scripted-context [" in row for row in rows) == 2


def test_methods_that_cannot_use_a_context_are_refused_in_one_line(cli, llm_server, tmp_path):
    srv = server(llm_server)
    alone = run(cli, srv, tmp_path / "a", "--context", "scripted-context", methods="random")
    assert alone.returncode == 2
    assert "random cannot use an instance context" in alone.stderr
    assert len(alone.stderr.strip().splitlines()) == 1
    mixed = run(cli, srv, tmp_path / "b", "--context", "scripted-context", methods="random,parrot")
    assert mixed.returncode == 0, mixed.stderr
    assert "skipping random with --context scripted-context on plancraft:val.small: random " \
           "cannot use an instance context" in mixed.stderr
    assert {r["method"] for r in read_records(tmp_path / "b")} == {"parrot"}
    typo = run(cli, srv, tmp_path / "c", "--context", "scripted-contxt")
    assert typo.returncode == 2 and "did you mean 'scripted-context'" in typo.stderr
    listed = cli("list", "contexts")
    assert listed.returncode == 0 and "scripted-context" in listed.stdout
    assert "broken-context  (unavailable" in listed.stdout


def test_a_context_that_cannot_be_built_fails_its_episodes_after_its_retries(cli, llm_server, tmp_path):
    srv = server(llm_server)
    out = tmp_path / "run"
    result = run(cli, srv, out, "--context", "scripted-context", "--context-arg",
                 "fail_with=llm", "--retries", "1", limit="1")
    assert result.returncode == 1
    lines = context_lines(out)
    assert [(line["status"], line["attempt"]) for line in lines] == [("llm_error", 0), ("llm_error", 1)]
    assert "scripted endpoint failure" in lines[0]["error"]
    records = read_records(out)
    assert len(records) == 1 and records[0]["status"] == "llm_error"  # not retried in vain
    assert records[0]["error"].startswith("instance context not built: LLMError")
    assert not system_messages(srv)  # the method never played without its context
    # A bug in the provider is no infrastructure failure: not retried.
    crash = run(cli, srv, tmp_path / "crash", "--context", "scripted-context", "--context-arg",
                "fail_with=crash", limit="1")
    assert crash.returncode == 1
    assert [line["status"] for line in context_lines(tmp_path / "crash")] == ["agent_error"]


def test_exploration_stops_at_its_budget_and_keeps_the_last_reported_document(cli, llm_server, tmp_path):
    srv = server(llm_server)
    out = tmp_path / "run"
    result = run(cli, srv, out, "--context", "scripted-context", "--context-arg",
                 "explore_steps=1", "--context-arg", "walk=5", limit="1")
    assert result.returncode == 0, result.stderr
    (line,) = context_lines(out)
    assert line["status"] == "ok" and line["explore_steps"] == 1 and line["explore_budget"] == 1
    document = json.loads((out / "contexts" / f"{line['key']}.json").read_text())["document"]
    assert document.startswith(MARKER) and len(document.splitlines()) == 3  # marker, 2 views
    assert not builds(srv)  # the budget ended the build before its LLM call
    (record,) = read_records(out)
    assert record["extra"]["context"]["charged"] and record["explore_steps"] == 1


def test_workers_and_in_process_runs_give_the_same_records(cli, llm_server, tmp_path):
    srv = server(llm_server)
    records = {}
    for workers in ("0", "2"):
        out = tmp_path / f"w{workers}"
        result = run(cli, srv, out, "--context", "scripted-context", "--workers", workers)
        assert result.returncode == 0, result.stderr
        records[workers] = sorted((without_timings(r) for r in read_records(out)),
                                  key=lambda r: (r["instance_id"], r["method"]))
    assert len(records["0"]) == 2 and records["0"] == records["2"]
