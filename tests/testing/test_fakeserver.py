"""The local OpenAI-compatible server itself: requests in flight overlap (latency is a
timer, not a thread), connections are kept alive or closed as HTTP says, and the usage it
reports counts words as `str.split` does."""

from __future__ import annotations

import http.client
import json
import socket
import threading

from lifebench.testing.fakeserver import plancraft_next_action


def chat(text: str) -> bytes:
    return json.dumps({"model": "m", "messages": [{"role": "system", "content": "be brief"},
                                                  {"role": "user", "content": text}]}).encode()


def post(version: str = "HTTP/1.1", extra: str = "", text: str = "hi") -> bytes:
    body = chat(text)
    head = (f"POST /v1/chat/completions {version}\r\nHost: x\r\n{extra}"
            f"Content-Length: {len(body)}\r\n\r\n")
    return head.encode() + body


def exchange(port: int, data: bytes, wait: float = 1.0) -> tuple[bytes, bool]:
    """What the server sends back, and whether it closed the connection."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.settimeout(wait)
        sock.sendall(data)
        got = b""
        try:
            while chunk := sock.recv(65536):
                got += chunk
            return got, True
        except socket.timeout:
            return got, False


def concurrent_requests(srv, count: int) -> dict:
    """`count` requests sent at once from as many threads: each answered 200, and the
    server's stats."""
    port = int(srv.url.rsplit(":", 1)[1].split("/")[0])
    answers: list[bytes] = []

    def one() -> None:
        answers.append(exchange(port, post(extra="Connection: close\r\n"), wait=60)[0])

    threads = [threading.Thread(target=one) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(answers) == count and all(a.startswith(b"HTTP/1.1 200 OK") for a in answers)
    return srv.stats()


def test_requests_in_flight_overlap(llm_server):
    """The server holds every answer until 64 requests are in flight at once (a barrier,
    30 s at most): however slowly the threads start, the barrier opens only if requests
    overlap; no clock is read."""
    stats = concurrent_requests(llm_server(script=["ok"], hold_until=64), 64)
    assert stats["barrier"] == "opened" and stats["max_in_flight"] == 64
    assert (stats["requests"], stats["faults"]) == (64, 0)


def test_the_overlap_test_fails_on_a_server_that_serves_one_at_a_time(llm_server):
    """The test of the test: a serial server never has two requests in flight, so the
    barrier above stays closed (each answer goes at its 0.2 s deadline instead)."""
    stats = concurrent_requests(llm_server(script=["ok"], hold_until=4, hold_s=0.2, serial=True), 4)
    assert stats["barrier"] == "closed" and stats["max_in_flight"] == 1


def test_keep_alive_and_closing(llm_server):
    srv = llm_server(script=["one", "two", "three"])
    port = int(srv.url.rsplit(":", 1)[1].split("/")[0])
    # HTTP/1.1: three requests on one connection (pipelined), answered in order, kept open
    got, closed = exchange(port, post() + post() + post(), wait=0.5)
    assert got.count(b"HTTP/1.1 200 OK") == 3 and not closed
    assert [m in got for m in (b'"one"', b'"two"', b'"three"')] == [True] * 3
    assert got.index(b'"one"') < got.index(b'"two"') < got.index(b'"three"')
    # HTTP/1.0 and `Connection: close`: answered, then closed
    for data in (post("HTTP/1.0"), post(extra="Connection: close\r\n")):
        got, closed = exchange(port, data)
        assert got.startswith(b"HTTP/1.1 200 OK") and closed
    # http.client keeps its connection
    conn = http.client.HTTPConnection("127.0.0.1", port)
    for _ in range(3):
        conn.request("POST", "/v1/chat/completions", body=chat("hi"))
        assert conn.getresponse().read() and conn.sock is not None
    conn.close()


def test_usage_counts_words_as_split_does(llm_server):
    srv = llm_server(script=["a b"])
    conn = http.client.HTTPConnection("127.0.0.1", int(srv.url.rsplit(":", 1)[1].split("/")[0]))
    texts = ["x " * 300, "tab\tand\x1cfile\x1fsep " * 40 + " ", "é\xa0non\x85ascii " * 50,
             "\x00\x08ctl\x0b\x0c words" * 30]
    for text in texts:
        conn.request("POST", "/v1/chat/completions", body=chat(text))
        usage = json.loads(conn.getresponse().read())["usage"]
        assert usage["prompt_tokens"] == len("be brief".split()) + len(text.split())
        assert usage["completion_tokens"] == 2
    conn.close()


def test_the_last_plancraft_observation_is_planned():
    first = "Craft an item of type: stick\ninventory:\n - oak_planks [I1] quantity 2"
    last = "Craft an item of type: oak_planks\ninventory:\n - oak_log [I3] quantity 1"
    action = plancraft_next_action(f"{first}\n\nthen\n{last}\n\n - stone [I9] quantity 1")
    assert action == plancraft_next_action(last) == "move: from [I3] to [A1] with quantity 1"
    assert plancraft_next_action("no observation here") is None
