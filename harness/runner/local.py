"""The local executor: worker processes play units, this process is the one writer.

Workers are spawned (not forked) so they share no file descriptors, locks or threads with
the writer. Every episode reports its start; a worker that dies, or runs an episode past
its timeout plus a grace period, is killed and replaced, the episode is recorded with
status `env_error` or `timeout`, and its unit continues from the last committed memory.

`concurrency` units (streams) play at once in each worker, one thread each, or one
greenlet each with `scheduler="greenlets"` (see lifebench.api.cooperative): for LLM-bound runs,
many streams keep one endpoint busy. Threads cannot be killed one by one, so a worker whose
episode hangs is killed whole; its other units continue elsewhere from their last
committed memory without being charged an attempt.

With more than one worker (and threads), a preparation's independent jobs
(`lifebench.api.jobs`) run on job workers beside the unit workers: the unit's thread sends
its batch to the writer (`JobsRequested`) and waits (its core is then free); the writer
hands each job to a job worker with a free slot (started when jobs wait, up to `--workers`
of them, and kept for the run), and passes each outcome back (`JobResult`). Jobs never run
in a unit's process, so a job that kills its process costs the stream nothing: it is
played again on another job worker, twice at most.
"""

from __future__ import annotations

import collections
import itertools
import multiprocessing as mp
import os
import pickle
import queue
import signal
import sys
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import connection as mp_connection
from multiprocessing.connection import Connection
from typing import Any, Callable, Iterator, Optional

from lifebench.api.processes import die_with_parent
from lifebench.api.records import Status
from lifebench.api import cooperative
from lifebench.api.cooperative import Hub
from lifebench.llm.cache import flush_all
from lifebench.runner.jobs import (JOB_PLAYS, JobOutcome, JobSpec, lost, play_job,
                                   portable_outcome)
from lifebench.runner.unit import Event, UnitFinished, WorkUnit, run_unit
from lifebench.runner.writer import RunOutcome, Writer
from lifebench.store.results import ResultsStore


@dataclass
class JobsRequested:
    """A unit's batch of jobs (worker -> writer); the unit waits for their results."""

    unit_id: int
    batch: int
    specs: list[JobSpec]


@dataclass
class JobStart:
    """A job to play (writer -> worker)."""

    job_id: int
    spec: JobSpec


@dataclass
class JobFinished:
    """A job's outcome (worker -> writer)."""

    job_id: int
    outcome: JobOutcome


@dataclass
class JobResult:
    """A job's outcome for the unit that asked (writer -> worker)."""

    batch: int
    outcome: JobOutcome


class _JobRequests:
    """A worker's units waiting for their jobs: each batch is sent to the writer, and its
    outcomes are delivered by the worker's reader as they come back."""

    def __init__(self, emit: Callable[[object], None]) -> None:
        self.emit = emit
        self.lock = threading.Lock()
        self.batches = 0
        self.waiting: dict[int, "queue.Queue[JobOutcome]"] = {}

    def transport(self, unit_id: int) -> Callable[[list[JobSpec]], Callable[[], list[JobOutcome]]]:
        return lambda specs: self.start(unit_id, specs)

    def start(self, unit_id: int, specs: list[JobSpec]) -> Callable[[], list[JobOutcome]]:
        """Send a batch to the writer; the function that waits for its outcomes."""
        inbox: "queue.Queue[JobOutcome]" = queue.Queue()
        with self.lock:
            self.batches += 1
            batch = self.batches
            self.waiting[batch] = inbox
        self.emit(JobsRequested(unit_id, batch, specs))

        def wait() -> list[JobOutcome]:
            got: dict[int, JobOutcome] = {}
            try:
                while len(got) < len(specs):
                    outcome = inbox.get()
                    got[outcome.index] = outcome
            finally:
                with self.lock:
                    self.waiting.pop(batch, None)
            return [got[i] for i in range(len(specs))]
        return wait

    def deliver(self, result: JobResult) -> None:
        with self.lock:
            inbox = self.waiting.get(result.batch)
        if inbox is not None:
            inbox.put(result.outcome)


def _play_job(start: JobStart, emit: Callable[[object], None]) -> None:
    try:
        outcome = play_job(start.spec)
    except Exception as exc:  # building its context failed: the job's failure all the same
        outcome = portable_outcome(JobOutcome(start.spec.index, error=RuntimeError(
            f"{type(exc).__name__}: {exc}")))
    emit(JobFinished(start.job_id, outcome))


def _or_die(target: Callable[..., None], *args: Any) -> None:
    """`target(*args)` in a worker's thread; what it fails to catch ends the process, as it
    would on the main thread: the writer then records the worker lost and its units go on
    elsewhere (a dead thread alone would leave its unit waiting for ever)."""
    try:
        target(*args)
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(70)


def _worker_main(conn: Connection, record_trajectories: bool, concurrency: int = 1,
                 scheduler: str = "threads", jobs: bool = False) -> None:
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the writer decides how to stop
    parent = os.getppid()
    send_lock = threading.Lock()
    threads: list[threading.Thread] = []

    def emit(event: Event) -> None:
        # A pipe send is synchronous: an event sent is in the writer's pipe even if this
        # process dies right after (a queue's feeder thread would lose it).
        with send_lock:
            conn.send(event)

    if scheduler == "greenlets" and concurrency > 1:
        hub = Hub()

        def receive() -> None:  # a greenlet among the units it starts
            for unit in _units_sent(conn, parent, lambda s: cooperative.wait_readable(conn, s)):
                hub.spawn(run_unit, unit, emit, record_trajectories)

        hub.spawn(receive)
        hub.run()
    else:
        # With jobs, this thread only reads the pipe: units and jobs play in threads, and
        # a waiting unit's job outcomes are delivered here.
        requests = _JobRequests(emit) if jobs else None
        for message in _units_sent(conn, parent, conn.poll):
            if isinstance(message, JobResult):
                assert requests is not None
                requests.deliver(message)
                continue
            if isinstance(message, JobStart):
                target, args = _play_job, (message, emit)
            else:
                transport = requests.transport(message.unit_id) if requests else None
                target, args = run_unit, (message, emit, record_trajectories, transport)
            if concurrency == 1 and requests is None:  # one stream at a time: played here
                target(*args)
                continue
            thread = threading.Thread(target=_or_die, args=(target, *args), daemon=True)
            thread.start()
            threads = [t for t in threads if t.is_alive()] + [thread]
        for thread in threads:
            thread.join()
    flush_all()  # the LLM answers written behind


def _units_sent(conn: Connection, parent: int, ready: Callable[[float], bool]) -> Iterator[Any]:
    """The units the writer sends (never more than --concurrency at a time; and jobs and
    their results), until it says stop, its pipe closes or it dies; `ready(seconds)` waits
    for the pipe."""
    while True:
        if not ready(0.2):
            if os.getppid() != parent:
                return
            continue
        try:
            unit = conn.recv()
        except (EOFError, OSError):
            return
        if unit is None:
            return
        yield unit


@dataclass
class _Worker:
    process: mp.process.BaseProcess
    conn: Connection
    units: dict[int, WorkUnit] = field(default_factory=dict)  # playing now, by unit id
    broken: bool = False  # its pipe closed or carried a torn message
    lost: bool = False  # replaced: what it asked for is no longer wanted
    jobs: dict[int, "_Job"] = field(default_factory=dict)  # playing now, by job id
    # its units' batches of jobs not yet all answered: batch -> outcomes still to come
    batches: dict[int, int] = field(default_factory=dict)


@dataclass
class _Job:
    job_id: int
    requester: _Worker
    batch: int
    spec: JobSpec
    plays: int = 0
    why_lost: str = ""


class LocalExecutor:
    def __init__(self, workers: int, record_trajectories: bool = True,
                 concurrency: int = 1, scheduler: str = "threads") -> None:
        self.workers = workers
        self.record_trajectories = record_trajectories
        self.concurrency = max(1, concurrency)
        self.scheduler = scheduler
        self.jobs = True  # a preparation's jobs are shared out across the workers

    def run(self, units: list[WorkUnit], store: ResultsStore,
            on_episode: Callable[[bool, bool], None]) -> RunOutcome:
        writer = Writer(store, units, on_episode)
        if self.workers <= 1 or self.scheduler == "greenlets":
            self.jobs = False  # a preparation's jobs run inline (one core; one hub)
        if self.workers == 0:
            try:
                self._run_here(units, writer)
            finally:
                flush_all()  # the LLM answers written behind
        else:
            _Pool(self, units, writer).run()
        return writer.outcome

    def _run_here(self, units: list[WorkUnit], writer: Writer) -> None:
        """In this process: `concurrency` units at a time, one thread each."""
        if self.concurrency == 1:
            for unit in units:
                run_unit(unit, writer.handle, self.record_trajectories)
            return
        if self.scheduler == "greenlets":
            return _run_greenlets(units, writer.handle, self.record_trajectories,
                                  self.concurrency)
        lock = threading.Lock()

        def handle(event: Event) -> None:
            with lock:
                writer.handle(event)

        with ThreadPoolExecutor(self.concurrency) as pool:
            for future in [pool.submit(run_unit, u, handle, self.record_trajectories) for u in units]:
                future.result()


def _run_greenlets(units: list[WorkUnit], emit: Callable[[Event], None],
                   record_trajectories: bool, concurrency: int) -> None:
    """`units`, `concurrency` at a time, as greenlets of this thread (see
    lifebench.api.cooperative); events are handled where they are emitted (one thread: no lock)."""
    pending = collections.deque(units)
    hub = Hub()

    def lane() -> None:  # one of `concurrency` lanes, each playing units until none is left
        while pending:
            run_unit(pending.popleft(), emit, record_trajectories)

    for _ in range(min(concurrency, len(units))):
        hub.spawn(lane)
    hub.run()


class _Pool:
    """Worker processes for one run: units go to the least busy worker; a lost worker is
    replaced and its units continue."""

    def __init__(self, executor: LocalExecutor, units: list[WorkUnit], writer: Writer) -> None:
        self.executor = executor
        self.writer = writer
        self.pending = collections.deque(units)
        self.jobs: collections.deque[_Job] = collections.deque()  # waiting for a slot
        self.job_ids = itertools.count()
        self.job_workers: list[_Worker] = []  # started when jobs first wait
        self.context = mp.get_context("spawn")
        count = min(executor.workers, -(-len(units) // executor.concurrency))
        self.workers: list[_Worker] = []
        for _ in range(count):
            self.workers.append(self._start_worker())

    def run(self) -> None:
        finished = False
        try:
            while self.pending or any(w.units for w in self.workers):
                self._dispatch()
                self._receive_ready()
                for i, worker in enumerate(self.workers):
                    if worker.units and self._replace_if_lost(worker):
                        self.workers[i] = self._start_worker()
                self.job_workers = [w for w in self.job_workers
                                    if not (w.jobs and self._replace_if_lost(w))]
            finished = True
        finally:
            if finished:
                self._shutdown()
            else:  # an interrupt or a failing write: what the workers play is not recorded
                self._stop_all()

    def _start_worker(self) -> _Worker:
        ours, theirs = self.context.Pipe()
        process = self.context.Process(
            target=_worker_main, daemon=True,
            args=(theirs, self.executor.record_trajectories, self.executor.concurrency,
                  self.executor.scheduler, self.executor.jobs))
        process.start()
        theirs.close()
        return _Worker(process, ours)

    def _dispatch(self) -> None:
        """Jobs first (a unit waits for them), each to the job worker with the fewest (one
        is started while none has a free slot and --workers allows); then units, to the
        least busy workers first, so they spread over the processes."""
        concurrency = self.executor.concurrency
        self.job_workers = [w for w in self.job_workers if w.jobs or self._usable(w)]
        while self.jobs:
            ready = [w for w in self.job_workers if self._usable(w) and len(w.jobs) < concurrency]
            if not ready and len(self.job_workers) < self.executor.workers:
                self.job_workers.append(self._start_worker())
                continue
            if not ready:
                break
            worker = min(ready, key=lambda w: len(w.jobs))
            job = self.jobs.popleft()
            job.plays += 1
            worker.jobs[job.job_id] = job
            try:
                worker.conn.send(JobStart(job.job_id, job.spec))
            except (OSError, ValueError):  # it died idle: found lost in this turn's check
                worker.broken = True
        for worker in sorted(self.workers, key=lambda w: len(w.units)):
            while len(worker.units) < concurrency and self.pending and not worker.broken:
                unit = self.pending.popleft()
                worker.units[unit.unit_id] = unit
                worker.conn.send(unit)

    @staticmethod
    def _usable(worker: _Worker) -> bool:
        return not worker.broken and worker.process.is_alive()

    def _receive_ready(self) -> None:
        busy = [w for w in self.workers + self.job_workers if (w.units or w.jobs) and not w.broken]
        ready = mp_connection.wait([w.conn for w in busy], timeout=0.2)
        for worker in busy:
            if worker.conn in ready:
                self._receive(worker)

    def _receive(self, worker: _Worker) -> None:
        """Handle everything the worker has sent so far. A pipe that breaks marks the
        worker lost; the writer's own failures (the results directory cannot be written)
        are not the worker's and stop the run."""
        while not worker.broken:
            try:
                if not worker.conn.poll():
                    return
                event = worker.conn.recv()
            except (EOFError, OSError, pickle.UnpicklingError):
                worker.broken = True
                return
            if isinstance(event, JobsRequested):
                self._requested(worker, event)
                continue
            if isinstance(event, JobFinished):
                self._job_finished(worker, event)
                continue
            self.writer.handle(event)
            if isinstance(event, UnitFinished):
                worker.units.pop(event.unit_id, None)

    def _requested(self, worker: _Worker, event: JobsRequested) -> None:
        worker.batches[event.batch] = len(event.specs)
        for spec in event.specs:
            self.jobs.append(_Job(next(self.job_ids), worker, event.batch, spec))

    def _job_finished(self, worker: _Worker, event: JobFinished) -> None:
        job = worker.jobs.pop(event.job_id, None)
        if job is not None:
            self._answer(job, event.outcome)

    def _answer(self, job: _Job, outcome: JobOutcome) -> None:
        """Pass a job's outcome to the unit that asked, unless its worker is gone."""
        requester = job.requester
        if requester.lost or requester.broken or job.batch not in requester.batches:
            return
        requester.batches[job.batch] -= 1
        if not requester.batches[job.batch]:
            del requester.batches[job.batch]
        try:
            requester.conn.send(JobResult(job.batch, outcome))
        except (OSError, ValueError):
            requester.broken = True

    def _jobs_lost(self, worker: _Worker, why: str) -> None:
        """A replaced worker: its jobs are played again elsewhere (or, played too often,
        answered as lost); the jobs its units asked for are dropped."""
        worker.lost = True
        for job in worker.jobs.values():
            job.why_lost = why
            if job.plays >= JOB_PLAYS:
                self._answer(job, lost(job.spec, why))
            else:
                self.jobs.appendleft(job)
        worker.jobs.clear()
        self.jobs = collections.deque(j for j in self.jobs if j.requester is not worker)
        for other in self.job_workers:
            for job_id, job in list(other.jobs.items()):
                if job.requester is worker:
                    del other.jobs[job_id]  # its outcome, when it comes, is not wanted

    def _replace_if_lost(self, worker: _Worker) -> bool:
        """Kill a worker that died or hangs, record what it was playing and queue the
        continuations of its units; True when it must be replaced."""
        culprit: Optional[int] = None
        if worker.process.is_alive() and not worker.broken:
            hung = ((u, self.writer.hung(u)) for u in worker.units)
            culprit, error = next(((u, why) for u, why in hung if why), (None, ""))
            if culprit is None:
                return False
            status = Status.TIMEOUT
        if worker.process.is_alive():
            worker.process.kill()
        worker.process.join(timeout=10)  # reaped: its exit code is known
        if culprit is None:
            status = Status.ENV_ERROR
            error = f"worker process died (exit code {worker.process.exitcode})"
        self._receive(worker)  # what it sent before dying still counts
        self._jobs_lost(worker, error)
        for unit_id in list(worker.units):
            # A dead process fails all its episodes in flight; a hung episode only its own:
            # the others were stopped through no fault of theirs.
            charge = culprit is None or unit_id == culprit
            continuation = self.writer.recover(unit_id, status, error, charge=charge)
            if continuation is not None:
                self.pending.appendleft(continuation)
        worker.units.clear()
        worker.conn.close()
        return True

    def _shutdown(self) -> None:
        """After the last unit: every worker is told to stop, and is joined."""
        everyone = self.workers + self.job_workers
        for worker in everyone:
            if worker.process.is_alive():
                try:
                    worker.conn.send(None)
                except (OSError, ValueError):
                    pass
        for worker in everyone:
            worker.process.join(timeout=5)
            if worker.process.is_alive():
                worker.process.kill()
            worker.process.join()
            worker.conn.close()

    def _stop_all(self) -> None:
        """At once, whatever the number of workers: kill them all, then reap them (a
        worker's simulators die with it)."""
        everyone = self.workers + self.job_workers
        for worker in everyone:
            if worker.process.is_alive():
                worker.process.kill()
        for worker in everyone:
            worker.process.join()
            worker.conn.close()
