"""The LLM client and cache against the real local OpenAI-compatible llm_server (HTTP on
loopback, scripted replies, latency and faults); nothing is patched."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import CANARY
from lifebench.api import LLMError, RoleParams, UserError
from lifebench.config.run import LLMConfig
from lifebench.llm.cache import ResponseCache, body_and_key, request_key
from lifebench.llm.completion import completion_problem
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
    # the infrastructure's faults (a malformed reply is no outage: tests/llm/test_reply_shapes.py)
    srv = llm_server(script=["ok"], fault_rate=0.5, faults=("429", "500", "drop"), seed=3)
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


def test_a_completion_of_the_wrong_shape_is_a_malformed_answer(llm_server):
    for body in ({"choices": [1]}, {"choices": [{"message": {"content": 7}}]},
                 {"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": "many"}}):
        assert completion_problem(body)
    assert completion_problem({"choices": [{"message": {"content": "x"}}]}) is None


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


class _Recorder(BaseHTTPRequestHandler):
    """A bare HTTP/1.1 server for what the scripted server does not do: it counts
    connections, answers `status` with `body`, records the request line's target, and
    with `close_after_s` closes each connection that long after answering, as servers do
    with idle keep-alive connections."""

    protocol_version = "HTTP/1.1"
    status = 200
    body = b'{"choices": [{"message": {"content": "ok"}}]}'
    close_after_s: float | None = None
    connections = 0
    targets: list[str] = []

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        type(self).connections += 1

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        type(self).targets.append(self.path)
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)
        self.wfile.flush()
        if self.close_after_s is not None:
            time.sleep(self.close_after_s)
            self.close_connection = True


@pytest.fixture
def recorder():
    servers = []

    def start(**behaviour):
        handler = type("Handler", (_Recorder,), {"targets": [], **behaviour})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server, handler

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_connections_are_kept_alive_and_reused_by_threads(recorder):
    server, handler = recorder()
    client = client_for(_Url(server), max_retries=0)
    threads = [threading.Thread(target=lambda: [client.chat(hello()) for _ in range(10)])
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(handler.targets) == 40 and handler.targets[0] == "/v1/chat/completions"
    assert handler.connections <= 4, "one connection per request in flight, then reused"


def test_a_connection_the_server_closed_while_idle_costs_no_attempt(recorder):
    server, handler = recorder(close_after_s=0.05)
    client = client_for(_Url(server), max_retries=0)  # any failed attempt would raise
    for _ in range(3):
        assert client.chat(hello()).text == "ok"
        time.sleep(0.2)  # the server closes the idle connection meanwhile
    assert len(handler.targets) == 3 and handler.connections == 3


def test_a_rejected_request_is_one_line_with_the_servers_reason(recorder, monkeypatch):
    monkeypatch.setenv("LIFEBENCH_TEST_KEY", CANARY)
    server, handler = recorder(status=400, body=(
        b'{"error": {"message": "max_tokens is too large: ' + CANARY.encode() +
        b'\\nsecond line", "type": "invalid_request_error"}}'))
    client = client_for(_Url(server), max_retries=3)
    with pytest.raises(LLMError) as error:
        client.chat(hello())
    message = str(error.value)
    assert "rejected the request (400): max_tokens is too large" in message
    assert CANARY not in message and "second line" not in message
    assert len(handler.targets) == 1, "a rejected request is not retried"


def test_requests_go_through_the_proxy_of_the_environment(recorder, monkeypatch):
    proxy, handler = recorder()
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.server_address[1]}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    client = LLMClient("m", LLMConfig(base_url="http://llm.invalid:8000/v1", max_retries=0))
    assert client.chat(hello()).text == "ok"
    assert handler.targets == ["http://llm.invalid:8000/v1/chat/completions"]


class _Url:
    """What `client_for` needs of a server: its URL."""

    def __init__(self, server):
        self.url = f"http://127.0.0.1:{server.server_address[1]}/v1"


@pytest.mark.parametrize("request_", [
    {"model": "m", "messages": [{"role": "user", "content": "héllo \u2603 \"q\""}], "temperature": 0.0},
    {"model": "m", "messages": [], "temperature": 0.7, "max_tokens": 5, "top_p": 0.9, "seed": 3,
     "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]},
    {"a_field_before_base_url": 1, "model": "m"},  # takes the long way, same key
    {"model": "m", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": 5},
                                {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]},
                                {"content": "c", "name": "n"}, "odd", ["nested"]]},
])
def test_one_serialisation_gives_the_body_and_the_same_cache_key(request_):
    for sample, seed in ((0, None), (2, 7)):
        body, key = body_and_key(request_, "http://host:1/v1", sample, seed)
        assert json.loads(body) == request_
        assert key == request_key({**request_, "base_url": "http://host:1/v1"}, sample, seed)


def test_chunked_answers_and_answers_that_end_with_the_connection(recorder):
    payload = b'{"choices": [{"message": {"content": "chunked ok"}}]}'

    class Chunked(_Recorder):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            type(self).targets.append(self.path)
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (payload[:10], payload[10:]):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")

    class Unsized(_Recorder):
        protocol_version = "HTTP/1.0"  # no length: the body ends when the server closes

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            type(self).targets.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(payload)

    for handler_class, text in ((Chunked, "chunked ok"), (Unsized, "chunked ok")):
        server = ThreadingHTTPServer(("127.0.0.1", 0), type("H", (handler_class,), {"targets": []}))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            client = client_for(_Url(server), max_retries=0)
            assert [client.chat(hello()).text for _ in range(3)] == [text] * 3
        finally:
            server.shutdown()
            server.server_close()
