"""What real servers send that round 2 did not survive, each sent by the local server to a
ReAct run on Plancraft `val.small` (`--limit 3`): every server's context refusal, Retry-After
in seconds and as a date, gzip, Ollama's implicit `:latest`, end-of-turn tokens left in
replies, and misbehaviour that is retried and now counted. Each run exits 0, records no
`llm_error` and no infrastructure status, and counts its quirk where the records, the
manifest and the summary say it."""

from __future__ import annotations

import json
import re

import pytest

from conftest import one_line_error, read_records
from lifebench.llm.completion import END_OF_TURN_TOKENS, strip_end_tokens
from lifebench.llm.server_errors import CONTEXT_REFUSALS, is_context_overflow

PLANCRAFT = ["--benchmark", "plancraft", "--split", "val.small", "--limit", "3"]


def react(cli, srv, out, *more, model="qwen3"):
    return cli("run", "--no-progress", *PLANCRAFT, "--method", "react", "--model", model,
               "--base-url", srv.url, "--cache", "off", "--workers", "0", "--out", str(out),
               "--max-steps", "4", *more)


def manifest_endpoint(out) -> dict:
    return json.loads((out / "manifest.json").read_text())["runs"][-1]["llm_endpoint"]


def played_without_failures(result, out, statuses=("ok", "budget_exhausted")) -> list[dict]:
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    assert len(records) == 3 and {r["status"] for r in records} <= set(statuses), records
    return records


@pytest.mark.parametrize("row", CONTEXT_REFUSALS, ids=lambda r: r.server)
def test_every_servers_context_refusal_is_recognised(row):
    assert re.search(row.pattern, row.example, re.I) and is_context_overflow(row.example)
    assert row.source and row.statuses
    assert not is_context_overflow("Unrecognized request argument supplied: seed")
    assert not is_context_overflow("the model crashed while generating")


@pytest.mark.parametrize("server", ["TGI (prompt and completion)", "TGI (prompt alone)",
                                    "llama.cpp (older llama-server)", "LM Studio"])
def test_refusals_in_any_status_end_episodes_as_context_overflow(cli, llm_server, tmp_path, server):
    srv = llm_server(policy="plancraft", max_model_len=300, overflow=server)
    out = tmp_path / "run"
    records = played_without_failures(react(cli, srv, out, "--no-trim"), out, ("context_overflow",))
    assert all(r["llm_calls"] == 0 and r["attempt"] == 0 for r in records)  # none retried
    assert srv.stats()["requests"] == 3


@pytest.mark.parametrize("form", ["1", "date:1"])
def test_retry_after_is_honoured_in_seconds_and_as_a_date(cli, llm_server, tmp_path, form):
    srv = llm_server(policy="plancraft", fault_rate=0.3, faults=("429",), retry_after=form, seed=3)
    out = tmp_path / "run"
    result = react(cli, srv, out)
    records = played_without_failures(result, out)
    faults = [r["extra"].get("endpoint_faults", {}) for r in records]
    waits = sum(f.get("retry_after_waits", 0) for f in faults)
    assert waits == sum(f.get("rate_limited", 0) for f in faults) == srv.stats()["faults"] > 0
    assert srv.stats()["early"] == 0  # no request before the time the server gave
    assert manifest_endpoint(out)["faults"]["retry_after_waits"] == waits
    assert f"{waits} waits the server asked for (Retry-After)" in result.stdout


def test_a_retry_after_over_two_minutes_ends_the_call_in_one_line(cli, llm_server, tmp_path):
    srv = llm_server(policy="plancraft", fault_rate=1.0, faults=("429",), retry_after="600")
    out = tmp_path / "run"
    result = react(cli, srv, out, "--retries", "0", "--limit", "1")
    assert result.returncode == 1
    [record] = read_records(out)
    assert record["status"] == "llm_error" and "asked to be asked again in 600 s (Retry-After)" \
        in record["error"] and "waits at most 120 s" in record["error"]
    assert srv.stats()["requests"] == 1  # not asked again


def test_gzip_replies_are_read_and_an_unknown_encoding_is_named(cli, llm_server, tmp_path):
    srv = llm_server(policy="plancraft", shapes=("gzip",))
    out = tmp_path / "gzip"
    records = played_without_failures(react(cli, srv, out), out)
    assert all("endpoint_faults" not in r["extra"] for r in records)
    assert all(r["success"] for r in records)
    brotli = llm_server(policy="plancraft", shapes=("br",))
    result = react(cli, brotli, tmp_path / "br", "--llm-retries", "0", "--retries", "0",
                   "--limit", "1")
    [record] = read_records(tmp_path / "br")
    assert result.returncode == 1 and record["status"] == "llm_error"
    assert "encoded as 'br' (its Content-Encoding)" in record["error"]


def test_a_bare_name_is_ollamas_latest_and_other_near_names_still_stop(cli, llm_server, tmp_path):
    srv = llm_server(policy="plancraft", flavour="ollama", models=("qwen3:latest", "llama3:8b"))
    out = tmp_path / "run"
    result = react(cli, srv, out)
    records = played_without_failures(result, out)
    assert "serves 'qwen3' as 'qwen3:latest'" in result.stderr
    assert {r["model"] for r in records} == {"qwen3:latest"}
    assert manifest_endpoint(out)["model"] == "qwen3:latest"
    assert {r["model"] for r in srv.requests()} == {"qwen3:latest"}
    one_line_error(react(cli, srv, tmp_path / "llama", model="llama3"),
                   "does not serve model 'llama3'", "qwen3:latest, llama3:8b")


def test_end_of_turn_tokens_never_reach_an_action(cli, llm_server, tmp_path):
    srv = llm_server(policy="plancraft", shapes=("end-tokens",))
    out = tmp_path / "run"
    result = react(cli, srv, out)
    records = played_without_failures(result, out)
    assert all(r["success"] for r in records)
    stripped = sum(r["extra"]["llm_replies"]["end_tokens_stripped"] for r in records)
    assert stripped == 2 * sum(r["llm_calls"] for r in records)  # <|im_end|> and </s>, each
    assert "end-of-turn tokens stripped" in result.stdout
    actions = [s["action"] for path in (out / "trajectories").iterdir()
               for line in path.read_text().splitlines() for s in json.loads(line)["steps"][1:]]
    assert actions and not any(token in a for a in actions for token in END_OF_TURN_TOKENS)
    assert strip_end_tokens("move </s> on") == ("move </s> on", 0)  # only a trailing run


def test_misbehaviour_is_retried_and_counted(cli, llm_server, tmp_path):
    srv = llm_server(policy="plancraft", fault_rate=0.5, seed=10, hang_s=3,
                     faults=("in-band", "empty-choices", "500", "drop", "timeout"))
    out = tmp_path / "run"
    result = react(cli, srv, out, "--llm-timeout", "1")
    records = played_without_failures(result, out)
    counted = {}
    for record in records:
        for kind, n in record["extra"].get("endpoint_faults", {}).items():
            counted[kind] = counted.get(kind, 0) + n
    assert set(counted) >= {"in_band_error", "server_error", "reset", "timeout"}, counted
    assert manifest_endpoint(out)["faults"] == dict(sorted(counted.items()))
    assert "the endpoint misbehaved, each time retried: " in result.stdout
    board = cli("leaderboard", str(out), "--no-plots")
    assert f"{counted['server_error']} server errors (5xx)" in board.stdout, board.stdout
