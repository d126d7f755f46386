"""Servers that never finish: a Content-Length of 10^12, a body that drips a byte a second,
a chunk of 2^60 bytes, an unlengthed stream of zeros. Each call ends within `--llm-timeout`
plus a second, with bounded memory, as a failed attempt (retried like one), never a
MemoryError."""

from __future__ import annotations

import json
import socket
import threading
import time
import tracemalloc

import pytest

from lifebench.api import LLMError
from lifebench.config.run import LLMConfig
from lifebench.llm.client import LLMClient

TIMEOUT_S = 2.0


def huge_length(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\n" + b"{" * 65536)
    time.sleep(TIMEOUT_S + 2)


def drip(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")
    for _ in range(int(TIMEOUT_S) + 4):
        conn.sendall(b" ")
        time.sleep(1)


def huge_chunk(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000\r\n")
    time.sleep(TIMEOUT_S + 2)


def endless(conn: socket.socket) -> None:  # no length: the body would end with the connection
    conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
    deadline = time.monotonic() + TIMEOUT_S + 2
    zeros = b"0" * 65536
    while time.monotonic() < deadline:
        conn.sendall(zeros)


class RawServer:
    """A socket server that answers every connection with `behaviour`, counting them."""

    def __init__(self, behaviour) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.behaviour = behaviour
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                self.behaviour(conn)
            except OSError:
                pass  # the client gave up: as it should

    def close(self) -> None:
        self.sock.close()


@pytest.mark.parametrize("behaviour", [huge_length, drip, huge_chunk, endless],
                         ids=lambda b: b.__name__)
def test_a_hostile_answer_ends_the_call_within_the_timeout(behaviour):
    server = RawServer(behaviour)
    client = LLMClient("m", LLMConfig(base_url=server.url, timeout_s=TIMEOUT_S, max_retries=0,
                                      max_response_mb=1.0))
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(LLMError, match="failed 1 times"):
            client.chat([{"role": "user", "content": "hi"}])
        took = time.monotonic() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        server.close()
    # the promise is the timeout plus a second (measured quiet: docs/serving.md); asserted
    # with 5x the timeout, so that load never fails it (a drip unbounded takes for ever)
    assert took <= 5 * TIMEOUT_S, f"the call took {took:.1f} s"
    assert peak < 16 << 20, f"{peak / 2**20:.0f} MiB allocated"


def test_each_retry_is_bounded_the_same_way():
    server = RawServer(drip)
    client = LLMClient("m", LLMConfig(base_url=server.url, timeout_s=1.0, max_retries=1,
                                      backoff_s=0.0, backoff_max_s=0.0))
    started = time.monotonic()
    try:
        with pytest.raises(LLMError, match="failed 2 times, last: timed out"):
            client.chat([{"role": "user", "content": "hi"}])
    finally:
        server.close()
    # two attempts of a 1 s deadline each: bounded (a drip would hold a call for ever);
    # 5x the promise, for any load
    assert time.monotonic() - started <= 5 * 2 * 1.0 and server.connections == 2


def test_every_kind_of_request_is_bounded_by_one_deadline():
    """The start-up check's model list, the tool probe (doctor and start-up), the server's
    tokenizer and a completion: against a server that drips a byte a second, each ends
    within the timeout plus a second, through the one bounded transport."""
    from lifebench.llm.client import token_counter
    from lifebench.llm.doctor import probe_tools
    from lifebench.llm.models import list_models

    server = RawServer(drip)
    config = LLMConfig(base_url=server.url, timeout_s=TIMEOUT_S, max_retries=0)
    client = LLMClient("m", config)
    requests = {
        "GET /models": lambda: list_models(config).reachable is False,
        "tool probe": lambda: probe_tools("m", config).tools is None,
        "/tokenize": lambda: token_counter(server.url, "m", TIMEOUT_S)("some text") == 3,
        "completion": lambda: pytest.raises(LLMError, client.chat, [{"role": "user", "content": "hi"}]),
    }
    try:
        for name, request in requests.items():
            started = time.monotonic()
            assert request(), name  # each says it got no answer (the estimate, for /tokenize)
            took = time.monotonic() - started
            assert took <= 5 * TIMEOUT_S, f"{name} took {took:.1f} s"  # as above
    finally:
        server.close()


def test_a_run_against_a_dripping_server_records_its_episode_as_failed_in_seconds(lifebench_cli, tmp_path):
    """Every path a run takes drips (the model list, the tool probe, the completion; the
    tokenizer's is bounded above): the run records its one episode as failed and ends
    within 30 s, start-up included (three calls of a 2 s deadline: 6 s promised, 5x for any
    load; a drip without deadlines would hold the run for ever)."""
    server = RawServer(drip)
    out = tmp_path / "out"
    started = time.monotonic()
    try:
        result = lifebench_cli("run", "--no-progress", "--benchmark", "corridor", "--split", "tiny",
                               "--limit", "1", "--method", "how2", "--model", "m",
                               "--base-url", server.url, "--llm-timeout", "2", "--llm-retries", "0",
                               "--retries", "0", "--cache", "off",
                               "--workers", "0", "--out", str(out), timeout=60)
        took = time.monotonic() - started
    finally:
        server.close()
    assert result.returncode == 1, result.stderr
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert [r["status"] for r in records] == ["llm_error"]
    assert took < 30, f"the run took {took:.1f} s"
