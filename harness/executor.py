"""The local executor: worker processes play units, the main process is the one writer.

Workers are spawned (not forked) so they share no file descriptors, locks or threads with
the writer. Every episode reports its start; a worker that dies, or runs an episode past
its timeout plus a grace period, is killed and replaced, the episode is recorded with
status `env_error` or `timeout`, and its unit continues from the last committed memory.

`concurrency` units (streams) play at once in each worker, one thread each: for LLM-bound
runs, many streams keep one endpoint busy. Threads cannot be killed one by one, so a
worker whose episode hangs is killed whole; its other units continue elsewhere from their
last committed memory without being charged an attempt.
"""

from __future__ import annotations

import collections
import ctypes
import multiprocessing as mp
from multiprocessing import connection as mp_connection
from multiprocessing.connection import Connection
import os
import pickle
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Optional

from harness.records import RETRIED_STATUSES
from harness.store import ResultsStore
from harness.stream import (EpisodeCommitted, EpisodeStarted, Event, UnitFinished, WorkUnit,
                            failure_record, run_unit)


def hard_timeout_s(timeout_s: float) -> float:
    """When the writer kills a worker whose episode does not return: the episode's own
    timeout (checked cooperatively between steps) plus a grace period."""
    return timeout_s + max(1.0, min(30.0, 0.5 * timeout_s))


@dataclass
class RunOutcome:
    committed: int = 0
    results: int = 0
    successes: int = 0
    failures: int = 0
    stopped: list[str] = field(default_factory=list)


class Writer:
    """Commits events to the store and tracks each unit's progress for recovery."""

    def __init__(self, store: ResultsStore, units: list[WorkUnit],
                 on_episode: Callable[[bool, bool], None]) -> None:
        self.store = store
        self.units = {u.unit_id: u for u in units}
        self.on_episode = on_episode
        self.outcome = RunOutcome()
        # Per unit: positions settled (a result, or a failure past its retries), and the
        # episode in flight.
        self.settled: dict[int, set[int]] = collections.defaultdict(set)
        self.in_flight: dict[int, tuple[int, int, float]] = {}

    def handle(self, event: Event) -> None:
        if isinstance(event, EpisodeStarted):
            self.in_flight[event.unit_id] = (event.position, event.attempt, time.monotonic())
        elif isinstance(event, EpisodeCommitted):
            self.store.commit(event.stream_id, event.record, event.trajectory, event.saved)
            self.in_flight.pop(event.unit_id, None)
            self._count(event.unit_id, event.record)
        elif isinstance(event, UnitFinished):
            self.in_flight.pop(event.unit_id, None)
            if event.stopped:
                self.outcome.stopped.append(event.stopped)

    def _count(self, unit_id: int, record) -> None:
        unit = self.units[unit_id]
        self.outcome.committed += 1
        final = record.is_result or record.status not in RETRIED_STATUSES or \
            record.extra.get("attempt", 0) >= unit.stream.retries
        if final:
            self.settled[unit_id].add(record.episode_index)
        if record.is_result:
            if unit.stateful:
                unit.saved = None  # superseded: recovery reads the committed state file
            self.outcome.results += 1
            self.outcome.successes += int(record.success)
        else:
            self.outcome.failures += 1
        if final:
            self.on_episode(record.is_result, record.success)

    def recover(self, unit_id: int, status: str, error: str, charge: bool = True) -> Optional[WorkUnit]:
        """After a worker was lost mid-unit: record the episode in flight and return the
        unit's continuation, or None when the unit cannot continue. With `charge` False
        (the unit was a bystander of another unit's failure) nothing is recorded and the
        episode in flight is replayed at the same attempt."""
        unit = self.units[unit_id]
        flight = self.in_flight.pop(unit_id, None)
        done = self.settled[unit_id]
        remaining = [p for p in unit.positions if p not in done]
        if not remaining:
            return None
        if not charge:
            attempt = flight[1] if flight is not None and flight[0] == remaining[0] else (
                unit.first_attempt if remaining[0] == unit.positions[0] else 0)
            return self._continuation(unit, remaining, done, attempt)
        if flight is None:
            # Died between episodes (e.g. while building the method): charge the next one,
            # so that repeated deaths still end after a bounded number of attempts.
            first = remaining[0]
            flight = (first, unit.first_attempt if first == unit.positions[0] else 0,
                      time.monotonic())
        position, attempt, started = flight
        record = failure_record(unit.stream, position, status, error, attempt,
                                time.monotonic() - started)
        self.store.commit(unit.stream.stream_id, record, None, None)
        self._count(unit_id, record)
        retry = attempt < unit.stream.retries
        if not retry:
            if unit.stateful:
                self.outcome.stopped.append(
                    f"stream {unit.stream.stream_id} stopped at episode {position}: {status} "
                    f"after {attempt + 1} attempt(s): {error}")
                return None
            remaining = [p for p in remaining if p != position]
        if not remaining:
            return None
        return self._continuation(unit, remaining, done, attempt + 1 if retry else 0)

    def _continuation(self, unit: WorkUnit, remaining: list[int], done: set[int],
                      first_attempt: int) -> WorkUnit:
        saved = unit.saved
        if unit.stateful and remaining[0] > 0 and (done or saved is None):
            saved = self.store.read_state(unit.stream.stream_id, remaining[0] - 1)
        new_unit = WorkUnit(unit_id=max(self.units) + 1, stream=unit.stream, positions=remaining,
                            stateful=unit.stateful, saved=saved, first_attempt=first_attempt)
        self.units[new_unit.unit_id] = new_unit
        return new_unit


# ---------------------------------------------------------------- worker processes

def _die_with_parent() -> None:
    """Linux: the kernel kills this worker if the writer dies (even by SIGKILL)."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except OSError:
            pass


def _worker_main(conn: Connection, record_trajectories: bool, concurrency: int = 1) -> None:
    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the writer decides how to stop
    parent = os.getppid()
    send_lock = threading.Lock()
    threads: list[threading.Thread] = []

    def emit(event: Event) -> None:
        # A pipe send is synchronous: an event sent is in the writer's pipe even if this
        # process dies right after (a queue's feeder thread would lose it).
        with send_lock:
            conn.send(event)

    while True:
        if not conn.poll(0.2):
            if os.getppid() != parent:
                return
            continue
        try:
            unit = conn.recv()
        except (EOFError, OSError):
            return
        if unit is None:
            for thread in threads:
                thread.join()
            return
        if concurrency == 1:  # one stream at a time: played in this thread, as always
            run_unit(unit, emit, record_trajectories)
            continue
        thread = threading.Thread(target=run_unit, args=(unit, emit, record_trajectories),
                                  daemon=True)
        thread.start()
        threads = [t for t in threads if t.is_alive()] + [thread]


@dataclass
class _Worker:
    process: mp.process.BaseProcess
    conn: Connection
    units: dict[int, WorkUnit] = field(default_factory=dict)  # playing now, by unit id
    broken: bool = False  # its pipe closed or carried a torn message


class LocalExecutor:
    def __init__(self, workers: int, record_trajectories: bool = True,
                 concurrency: int = 1) -> None:
        self.workers = workers
        self.record_trajectories = record_trajectories
        self.concurrency = max(1, concurrency)

    def run(self, units: list[WorkUnit], store: ResultsStore,
            on_episode: Callable[[bool, bool], None]) -> RunOutcome:
        writer = Writer(store, units, on_episode)
        if self.workers == 0:
            self._run_here(units, writer)
            return writer.outcome
        return self._run_pool(units, writer)

    def _run_here(self, units: list[WorkUnit], writer: Writer) -> None:
        """In this process: `concurrency` units at a time, one thread each."""
        if self.concurrency == 1:
            for unit in units:
                run_unit(unit, writer.handle, self.record_trajectories)
            return
        lock = threading.Lock()

        def handle(event: Event) -> None:
            with lock:
                writer.handle(event)

        with ThreadPoolExecutor(self.concurrency) as pool:
            for future in [pool.submit(run_unit, u, handle, self.record_trajectories) for u in units]:
                future.result()

    def _run_pool(self, units: list[WorkUnit], writer: Writer) -> RunOutcome:
        ctx = mp.get_context("spawn")
        pending = collections.deque(units)
        pool: list[_Worker] = []

        def start_worker() -> _Worker:
            ours, theirs = ctx.Pipe()
            proc = ctx.Process(target=_worker_main,
                               args=(theirs, self.record_trajectories, self.concurrency),
                               daemon=True)
            proc.start()
            theirs.close()
            return _Worker(proc, ours)

        def receive(w: _Worker) -> None:
            """Handle everything the worker has sent so far."""
            try:
                while not w.broken and w.conn.poll():
                    event = w.conn.recv()
                    writer.handle(event)
                    if isinstance(event, UnitFinished):
                        w.units.pop(event.unit_id, None)
            except (EOFError, OSError, pickle.UnpicklingError):
                w.broken = True

        try:
            for _ in range(min(self.workers, -(-len(units) // self.concurrency))):
                pool.append(start_worker())
            while pending or any(w.units for w in pool):
                # Fill the least busy workers first, so units spread over the processes.
                for w in sorted(pool, key=lambda w: len(w.units)):
                    while len(w.units) < self.concurrency and pending and not w.broken:
                        unit = pending.popleft()
                        w.units[unit.unit_id] = unit
                        w.conn.send(unit)
                busy = [w for w in pool if w.units and not w.broken]
                ready = mp_connection.wait([w.conn for w in busy], timeout=0.2)
                for w in busy:
                    if w.conn in ready:
                        receive(w)
                for i, w in enumerate(pool):
                    if not w.units:
                        continue
                    lost = self._lost(w, writer)
                    if lost is None:
                        continue
                    culprit, status, error = lost
                    if w.process.is_alive():
                        w.process.kill()
                    w.process.join(timeout=10)
                    error = error.format(exit_code=w.process.exitcode)
                    receive(w)  # what it sent before dying still counts
                    for unit_id in list(w.units):
                        # A dead process fails all its episodes in flight; a hung episode
                        # only its own: the others were stopped through no fault of theirs.
                        charge = culprit is None or unit_id == culprit
                        continuation = writer.recover(unit_id, status, error, charge=charge)
                        if continuation is not None:
                            pending.appendleft(continuation)
                    w.units.clear()
                    w.conn.close()
                    pool[i] = start_worker()
        finally:
            for w in pool:
                if w.process.is_alive():
                    try:
                        w.conn.send(None)
                    except (OSError, ValueError):
                        pass
            for w in pool:
                w.process.join(timeout=5)
                if w.process.is_alive():
                    w.process.kill()
                w.conn.close()
        return writer.outcome

    @staticmethod
    def _lost(w: _Worker, writer: Writer) -> Optional[tuple[Optional[int], str, str]]:
        """(the unit at fault, or None for all of them; status; error) when the worker must
        be replaced."""
        if not w.process.is_alive() or w.broken:
            # the exit code is known once the process is reaped: filled in by the caller
            return None, "env_error", "worker process died (exit code {exit_code})"
        for unit_id, unit in w.units.items():
            flight = writer.in_flight.get(unit_id)
            if flight is not None and time.monotonic() - flight[2] > hard_timeout_s(unit.stream.timeout_s):
                return unit_id, "timeout", (f"episode exceeded --timeout {unit.stream.timeout_s:g}s "
                                            f"and was killed")
        return None
