"""The hub that runs streams as greenlets of one thread (`--scheduler greenlets`): waits
on sockets and timers let the others run, timeouts fire, errors reach `run`, and outside
a hub the same calls are the plain blocking ones."""

from __future__ import annotations

import socket
import time

import pytest

from lifebench.api import cooperative
from lifebench.api.cooperative import Hub


def test_streams_interleave_where_they_wait():
    order = []

    def stream(name, pause):
        order.append(f"{name} starts")
        cooperative.sleep(pause)
        order.append(f"{name} ends")

    hub = Hub()
    hub.spawn(stream, "slow", 0.05)
    hub.spawn(stream, "fast", 0.01)
    hub.run()
    # the pauses overlapped: the fast one began and ended while the slow one paused (the
    # order, not the time, which load stretches)
    assert order == ["slow starts", "fast starts", "fast ends", "slow ends"]


def test_a_socket_wait_wakes_on_data_and_times_out_without_it():
    quiet_a, quiet_b = socket.socketpair()
    busy_a, busy_b = socket.socketpair()
    seen = {}

    def waits_in_vain():
        seen["quiet"] = cooperative.wait_readable(quiet_a, 0.05)

    def waits_for_data():
        seen["busy"] = cooperative.wait_readable(busy_a, 5.0)
        seen["data"] = busy_a.recv(10)

    def writes_later():
        cooperative.sleep(0.1)
        busy_b.sendall(b"hello")

    hub = Hub()
    for stream in (waits_in_vain, waits_for_data, writes_later):
        hub.spawn(stream)
    hub.run()
    assert seen == {"quiet": False, "busy": True, "data": b"hello"}
    for sock in (quiet_a, quiet_b, busy_a, busy_b):
        sock.close()


def test_many_waits_on_reused_descriptors():
    """The same socket waited on again and again (epoll one-shot re-armed), and a new
    socket given the number of a closed one."""
    count = {"n": 0}

    def echo_rounds():
        for _ in range(3):
            a, b = socket.socketpair()
            for i in range(20):
                b.sendall(b"x")
                assert cooperative.wait_readable(a, 1.0)
                assert a.recv(1) == b"x"
                count["n"] += 1
            a.close()
            b.close()

    hub = Hub()
    for _ in range(4):
        hub.spawn(echo_rounds)
    hub.run()
    assert count["n"] == 240


def test_an_error_of_one_stream_is_raised_after_the_others_end():
    finished = []

    def fails():
        cooperative.sleep(0.01)
        raise ValueError("broken stream")

    def works():
        cooperative.sleep(0.03)
        finished.append(True)

    hub = Hub()
    hub.spawn(fails)
    hub.spawn(works)
    with pytest.raises(ValueError, match="broken stream"):
        hub.run()
    assert finished == [True]


def test_outside_a_hub_the_calls_block_as_usual():
    assert not cooperative.active()
    a, b = socket.socketpair()
    assert cooperative.wait_readable(a, 0.01) is True  # the caller's read blocks instead
    began = time.monotonic()
    cooperative.sleep(0.02)
    assert time.monotonic() - began >= 0.02
    a.close()
    b.close()


def test_stream_locals_and_owners_tell_greenlets_apart():
    """Greenlets of one thread share its threading.local: plugins keep per-stream things
    (Crafter's engines, ScienceWorld's simulators) in a StreamLocal or on current_stream()."""
    local = cooperative.StreamLocal()
    local.name = "main thread"
    seen, owners = {}, []

    def stream(name):
        assert not hasattr(local, "name")
        local.name = name
        owners.append(cooperative.current_stream())
        cooperative.sleep(0.01)  # the other stream runs and sets its own
        seen[name] = (local.name, local.__dict__.setdefault("engines", {"of": name})["of"])

    hub = Hub()
    hub.spawn(stream, "a")
    hub.spawn(stream, "b")
    hub.run()
    assert seen == {"a": ("a", "a"), "b": ("b", "b")}
    assert local.name == "main thread"
    assert owners[0] is not owners[1] and all(cooperative.stream_ended(o) for o in owners)
    assert not cooperative.stream_ended(cooperative.current_stream())
