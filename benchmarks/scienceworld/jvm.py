"""One ScienceWorld simulator (a JVM) per process, reused across episodes.

Starting a JVM costs ~1.5 s and each holds hundreds of MB, so a worker keeps one and loads
each episode's task into it (one per stream when a worker plays several at once:
a simulator holds one task). Its heap is capped (`LIFEBENCH_SCIENCEWORLD_HEAP`, default
768m), or its resident memory grows to gigabytes over long runs. A JVM that dies is
discarded and the next episode starts a new one. No JVM outlives its Python process: py4j
starts it with `die_on_exit` (it exits when its stdin closes, which also happens when the
Python process is killed), and `atexit` shuts it down on a normal exit.
"""

from __future__ import annotations

import atexit
import os
import threading
from typing import Any, Optional

from lifebench.api.cooperative import current_stream, stream_ended

HEAP_ENV = "LIFEBENCH_SCIENCEWORLD_HEAP"
DEFAULT_HEAP = "768m"
# The package's own per-episode move cap; lifebench enforces budgets itself.
_NO_STEP_LIMIT = 10**9

_lock = threading.Lock()
# Every simulator of the process, with the stream using it (a thread, or a greenlet under
# --scheduler greenlets). A worker plays each unit in a stream of its own: a simulator whose
# stream has ended is handed to the next, so a worker holds as many JVMs as streams it plays
# at once (one, by default).
_owners: list[tuple[Any, Any]] = []  # (simulator, the stream using it: thread or greenlet)


# The simulator iterates over hash sets of objects, whose order follows the JVM's identity
# hash codes: random per JVM by default, so the same actions gave different scores and gold
# paths from run to run (allenai/ScienceWorld#15 fixed some of these places, not all).
# Identity hashes from a sequence make every run of the same episodes identical.
DETERMINISTIC_HASHES = "-XX:+UnlockExperimentalVMOptions -XX:hashCode=2"


def _java_options() -> str:
    heap = os.environ.get(HEAP_ENV, DEFAULT_HEAP)
    existing = os.environ.get("JAVA_TOOL_OPTIONS", "")
    return f"{existing} -Xmx{heap} {DETERMINISTIC_HASHES}".strip()


def _start() -> Any:
    from scienceworld import ScienceWorldEnv

    # py4j launches java with this process's environment: cap the heap through it.
    previous = os.environ.get("JAVA_TOOL_OPTIONS")
    os.environ["JAVA_TOOL_OPTIONS"] = _java_options()
    try:
        return ScienceWorldEnv("", envStepLimit=_NO_STEP_LIMIT)
    finally:
        if previous is None:
            os.environ.pop("JAVA_TOOL_OPTIONS", None)
        else:
            os.environ["JAVA_TOOL_OPTIONS"] = previous


def java_process(simulator: Any) -> Any:
    return simulator._gateway.java_process


def is_alive(simulator: Any) -> bool:
    return java_process(simulator).poll() is None


def _mine() -> Optional[Any]:
    """This stream's simulator, claiming one whose stream has ended; None if none is free."""
    me = current_stream()
    with _lock:
        for sim, owner in _owners:
            if owner is me:
                return sim
        for i, (sim, owner) in enumerate(_owners):
            if stream_ended(owner):
                _owners[i] = (sim, me)
                return sim
    return None


def simulator() -> Any:
    """This thread's simulator, started (or restarted after a crash) on demand."""
    sim = _mine()
    if sim is not None and not is_alive(sim):
        discard()
        sim = None
    if sim is None:
        with _lock:  # py4j reads JAVA_TOOL_OPTIONS from the process environment
            sim = _start()
            _owners.append((sim, current_stream()))
    return sim


def discard() -> None:
    """Stop and forget this stream's simulator (after a failure)."""
    me = current_stream()
    with _lock:
        mine = [sim for sim, owner in _owners if owner is me]
    for sim in mine:
        _stop(sim)


def discard_all() -> None:
    """Stop every simulator of the process (at exit)."""
    with _lock:
        sims = [sim for sim, _ in _owners]
    for sim in sims:
        _stop(sim)


def _stop(sim: Any) -> None:
    with _lock:
        _owners[:] = [(other, owner) for other, owner in _owners if other is not sim]
    proc = java_process(sim)
    try:
        sim._gateway.shutdown()
    except Exception:  # a dead gateway cannot be shut down politely
        pass
    if proc.poll() is None:
        proc.kill()
    try:
        proc.wait(timeout=10)
    except Exception:
        pass


atexit.register(discard_all)
