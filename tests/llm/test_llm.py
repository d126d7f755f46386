"""The LLM client and cache against the real local OpenAI-compatible llm_server (HTTP on
loopback, scripted replies, latency and faults); nothing is patched."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from conftest import CANARY
from lifebench.api import LLMError, RoleParams, UserError
from lifebench.config.run import LLMConfig
from lifebench.llm.cache import ResponseCache
from lifebench.llm.client import LLMClient


def client_for(srv, cache=None, model="fake-model", **settings) -> LLMClient:
    defaults = dict(base_url=srv.url, timeout_s=5, max_retries=4, backoff_s=0.01,
                    backoff_max_s=0.05, api_key_env="LIFEBENCH_TEST_KEY")
    defaults.update(settings)
    return LLMClient(model, LLMConfig(**defaults), cache)


def hello(text="hello") -> list[dict]:
    return [{"role": "user", "content": text}]


def test_text_tool_calls_and_accounting_per_role(llm_server):
    srv = llm_server(script=["Thought: look first.\nAction: look",
                         {"tool_call": {"name": "move", "arguments": {"slot_from": "I1", "quantity": 2}}}])
    client = client_for(srv)
    first = client.chat(hello("where am I"), role="actor",
                        params=RoleParams(temperature=0.6, max_tokens=64))
    assert srv.requests()[-1]["temperature"] == 0.6 and srv.requests()[-1]["max_tokens"] == 64
    assert first.text.endswith("Action: look") and first.tool_calls == ()
    second = client.chat(hello(), role="teacher",
                         tools=[{"type": "function", "function": {"name": "move", "parameters": {}}}])
    assert second.tool_calls[0].name == "move"
    assert second.tool_calls[0].arguments == {"slot_from": "I1", "quantity": 2}
    usage = client.take_usage()
    assert usage["actor"].calls == 1 and usage["actor"].tokens_in == 3
    assert usage["actor"].tokens_out == len(first.text.split())
    assert usage["teacher"].calls == 1
    assert client.take_usage() == {}


def test_faults_are_retried_until_an_answer(llm_server):
    srv = llm_server(script=["ok"], fault_rate=0.5, faults=("429", "500", "malformed", "drop"), seed=3)
    client = client_for(srv, max_retries=12)
    replies = [client.chat(hello(f"q{i}")) for i in range(20)]
    assert all(r.text == "ok" for r in replies)
    seen = srv.stats()
    assert seen["faults"] > 0 and seen["requests"] == 20 + seen["faults"]


def test_exhausted_retries_are_an_llm_error_without_the_key(llm_server, monkeypatch):
    monkeypatch.setenv("LIFEBENCH_TEST_KEY", CANARY)
    srv = llm_server(fault_rate=1.0, faults=("500",))
    client = client_for(srv, max_retries=2)
    with pytest.raises(LLMError) as error:
        client.chat(hello(CANARY))  # even a prompt holding the key does not leak it
    message = str(error.value)
    assert "failed 3 times" in message and "HTTP 500" in message
    assert CANARY not in message and len(message.splitlines()) == 1
    assert srv.stats()["requests"] == 3


def test_timeouts_are_retried_then_reported(llm_server):
    srv = llm_server(fault_rate=1.0, faults=("timeout",), hang_s=2.0)
    client = client_for(srv, timeout_s=0.3, max_retries=1)
    with pytest.raises(LLMError, match="timed out after 0.3 s"):
        client.chat(hello())


def test_cache_modes(llm_server, tmp_path, monkeypatch):
    monkeypatch.setenv("LIFEBENCH_TEST_KEY", CANARY)
    srv = llm_server()  # echoes the prompt
    path = tmp_path / "cache.sqlite"
    rw = client_for(srv, ResponseCache(path, "rw"))
    assert rw.chat(hello("one")).cached is False
    again = rw.chat(hello("one"))
    assert again.cached and again.text == "one"
    assert rw.chat(hello("one"), sample=1).cached is False, "a new sample index is a new answer"
    assert srv.stats()["requests"] == 2
    replay = client_for(srv, ResponseCache(path, "replay"))
    assert replay.chat(hello("one")).text == "one"
    with pytest.raises(UserError, match="cache miss in replay mode"):
        replay.chat(hello("two"))
    assert srv.stats()["requests"] == 2, "replay makes no request"
    off = client_for(srv, ResponseCache(path, "off"))
    off.chat(hello("one"))
    assert srv.stats()["requests"] == 3
    other_model = client_for(srv, ResponseCache(path, "rw"), model="other")
    assert other_model.chat(hello("one")).cached is False
    assert ResponseCache(path).stats()["entries"] == 3
    assert CANARY.encode() not in path.read_bytes()


def test_cache_is_shared_safely_by_processes(llm_server, tmp_path):
    srv = llm_server()
    path = tmp_path / "cache.sqlite"
    # The workers open the fresh cache file at the same instant (after their imports):
    # that is when SQLite's switch to WAL used to fail with "database is locked".
    start_at = time.time() + 3.0
    code = ("import time\n"
            "from lifebench.config.run import LLMConfig\n"
            "from lifebench.llm.cache import ResponseCache\n"
            "from lifebench.llm.client import LLMClient\n"
            "while time.time() < {start}: pass\n"
            "c = LLMClient('m', LLMConfig(base_url={url!r}, backoff_s=0.01), "
            "ResponseCache({path!r}))\n"
            "for i in range(40): c.chat([{{'role': 'user', 'content': f'q{{i % 25}}'}}])\n")
    procs = [subprocess.Popen([sys.executable, "-c",
                               code.format(url=srv.url, path=str(path), start=start_at)])
             for _ in range(4)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    assert ResponseCache(path).stats()["entries"] == 25


def test_requests_in_flight_are_limited_per_endpoint(llm_server):
    srv = llm_server(latency_s=0.2)
    client = client_for(srv, concurrency=2)
    threads = [threading.Thread(target=client.chat, args=(hello(f"t{i}"),)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert srv.stats()["max_in_flight"] == 2
