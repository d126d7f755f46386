"""Every reply shape servers send for chat completions, read by the client against the local
server: content as parts (reasoning parts kept as reasoning), tool-call arguments as an
object, a refusal, several choices, an empty `choices`, text no prompt can encode; and a
run against servers that send them."""

from __future__ import annotations

import json

import pytest

from lifebench.api import EndpointUnusable
from lifebench.config.run import LLMConfig
from lifebench.llm import client as client_module
from lifebench.llm.client import LLMClient
from lifebench.testing import read_records

TOOL = {"type": "function", "function": {"name": "act", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}}}}


def client_for(srv) -> LLMClient:
    return LLMClient("m", LLMConfig(base_url=srv.url, max_retries=0, backoff_s=0.0))


def ask(client: LLMClient, text: str = "hi", tools=None):
    return client.chat([{"role": "user", "content": text}], tools=tools)


@pytest.fixture(autouse=True)
def fresh_first_calls(monkeypatch):
    """Each test starts a new run's count of first calls (a run is a process)."""
    monkeypatch.setattr(client_module, "_first_calls", {})


def test_content_parts_and_object_arguments_read_as_text_and_calls(llm_server):
    srv = llm_server(script=[{"message": {"content": [
        {"type": "reasoning", "text": "the door is north"}, {"type": "text", "text": "go "},
        {"type": "text", "text": "north"}]}},
        {"message": {"content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "act", "arguments": {"command": "open door"}}}]}}])
    client = client_for(srv)
    reply = ask(client)
    assert (reply.text, reply.reasoning) == ("go north", "the door is north")
    call = ask(client, tools=[TOOL]).tool_calls[0]
    assert (call.name, call.arguments) == ("act", {"command": "open door"})
    assert client.take_notes() == {} and srv.stats()["requests"] == 2  # nothing malformed


def test_a_refusal_and_several_choices_are_read_and_noted(llm_server):
    srv = llm_server(script=[{"message": {"content": None, "refusal": "I can't help with that."}},
                             "first"], shapes=("choices",))
    client = client_for(srv)
    refused = ask(client)
    assert (refused.text, refused.refusal) == ("", "I can't help with that.")
    assert ask(client).text == "first"  # the first of two choices
    assert client.take_notes() == {"refusals": 1, "several_choices": 2,
                                   "refusal_texts": ["I can't help with that."]}


def test_a_malformed_reply_is_asked_once_more_then_the_methods_unreadable_reply(llm_server):
    srv = llm_server(script=[{"message": {"content": {"not": "text"}}}])
    client = client_for(srv)
    reply = ask(client)
    assert (reply.text, reply.tool_calls, reply.finish_reason) == ("", (), "malformed")
    assert srv.stats()["requests"] == 2  # once more, not an infrastructure retry
    assert client.take_notes() == {"malformed": 1}
    calls = client.take_calls()
    assert [c.finish for c in calls] == ["malformed"]


def test_the_run_stops_when_its_first_calls_are_all_malformed_alike(llm_server):
    srv = llm_server(script=[{"message": {"content": 7}}])
    client = client_for(srv)
    for _ in range(client_module.FIRST_CALLS - 1):
        assert ask(client).finish_reason == "malformed"
    with pytest.raises(EndpointUnusable) as stopped:
        ask(client)
    line = str(stopped.value)
    assert len(line.splitlines()) == 1 and "its content is not text" in line
    assert '"content": 7' in line and "rerun to resume" in line
    assert EndpointUnusable.exit_code == 1


def test_a_read_reply_among_the_first_calls_lets_the_run_go_on(llm_server):
    srv = llm_server(script=["fine", {"message": {"content": 7}}])
    client = client_for(srv)
    assert ask(client).text == "fine"
    for _ in range(client_module.FIRST_CALLS + 2):
        assert ask(client).finish_reason == "malformed"


def test_text_that_cannot_be_encoded_is_replaced_and_counted(llm_server):
    # "\ud800" in the server's JSON, and in an observation sent back: neither fails a request
    srv = llm_server(script=[{"message": {"content": "broken \ud800 text"}}, "ok"])
    client = client_for(srv)
    reply = ask(client)
    assert reply.text == "broken \ufffd text"
    assert ask(client, "the screen shows \udfff").text == "ok"
    assert client.take_notes() == {"replaced_characters": 2}
    assert srv.requests()[-1]["messages"][0]["content"] == "the screen shows \ufffd"


@pytest.mark.parametrize("shape", ["parts", "object-arguments"])
def test_how2_plays_every_episode_against_servers_of_either_shape(llm_server, lifebench_cli,
                                                                    results_dir, shape):
    srv = llm_server(policy="scripted", shapes=(shape,))
    result = lifebench_cli("run", "--no-progress", "--benchmark", "corridor", "--split", "tiny",
                           "--method", "how2", "--model", "m", "--base-url", srv.url,
                           "--cache", "off", "--workers", "0", "--out", str(results_dir),
                           timeout=120)
    assert result.returncode == 0, result.stderr
    records = read_records(results_dir)
    assert len(records) == 3 and all(r["status"] == "ok" and r["success"] for r in records)
    assert not any("llm_replies" in r["extra"] for r in records)  # nothing malformed
    assert sum(r["llm_calls"] for r in records) == srv.stats()["requests"] - 1  # - the probe


def test_a_lone_surrogate_in_a_reply_is_counted_in_the_record(llm_server, lifebench_cli, results_dir):
    srv = llm_server(script=[{"message": {"content": "Action: go east \ud800"}}, "Action: go east"])
    result = lifebench_cli("run", "--no-progress", "--benchmark", "corridor", "--split", "tiny",
                           "--limit", "1", "--method", "react", "--method-arg", "examples=0",
                           "--model", "m", "--base-url", srv.url, "--cache", "off",
                           "--workers", "0", "--out", str(results_dir), timeout=120)
    assert result.returncode == 0, result.stderr
    [record] = read_records(results_dir)
    assert record["status"] in ("ok", "budget_exhausted")
    assert record["extra"]["llm_replies"]["replaced_characters"] >= 1
    assert "characters no prompt can encode, replaced by U+FFFD" in result.stdout
    assert json.dumps(record)  # the record holds encodable text only


def test_a_run_whose_first_calls_are_all_malformed_stops_with_exit_1(llm_server, lifebench_cli,
                                                                     results_dir):
    srv = llm_server(script=[{"message": {"content": {"not": "text"}}}])
    result = lifebench_cli("run", "--no-progress", "--benchmark", "corridor", "--split", "tiny",
                           "--method", "react", "--model", "m", "--base-url", srv.url,
                           "--cache", "off", "--workers", "0", "--out", str(results_dir),
                           timeout=120)
    assert result.returncode == 1
    [line] = [l for l in result.stderr.splitlines() if l.startswith("lifebench: error:")]
    assert "each of the first 5 calls of this run" in line and "its content is not text" in line
    assert not (results_dir / "episodes.jsonl").read_text()  # nothing recorded: a rerun resumes
