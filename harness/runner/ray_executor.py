"""`--executor ray`: work units as Ray tasks, on a local Ray instance or an existing cluster.

Each unit (a stream, or a shard of a stateless one) is one Ray task that builds its method
and plays its episodes in a Ray worker process, which owns the environments it starts
(ScienceWorld's JVM, ALFWorld's games): they live and die with that process. The task
streams its events back as it plays (a Ray streaming generator); the driver is the only
writer and hands them to the same `Writer` as the local executor, so records, resume and
retries are the same. A task whose worker or node is lost is recorded like a crashed
local worker and its unit continues, from the method's last committed memory, as a new
task; an episode past its hard timeout has its task cancelled (the worker is killed).
Ray's own task retries are off: a retry from the start would replay committed episodes.

A preparation's independent jobs (`lifebench.api.jobs`) are Ray tasks too, submitted by
the unit's task while it waits for them (`ray_jobs`): each asks for its benchmark's
resources, and one whose worker dies is played again by Ray (twice at most), then counts
as lost (`JobLost`).

Tasks ask Ray for the resources their benchmark declares (`Benchmark.ray_resources`:
CPUs, and memory for a JVM), divided by `--concurrency` for LLM-bound runs. The
per-endpoint LLM concurrency limit is held by one named actor for the whole cluster
(`lifebench.llm.ray_slots`).
"""

from __future__ import annotations

import collections
import logging
import os
import queue
import socket
import threading
import time
from typing import Any, Callable, Optional

from lifebench import registry
from lifebench.api.errors import UserError
from lifebench.api.records import Status
from lifebench.llm.cache import flush_all
from lifebench.runner.jobs import JOB_PLAYS, JobOutcome, JobSpec, lost, play_job
from lifebench.runner.unit import UnitFinished, WorkUnit, run_unit
from lifebench.runner.writer import RunOutcome, Writer
from lifebench.store.results import ResultsStore

NAMESPACE = "lifebench"
# Environment variables the workers of a local Ray instance need from the driver, besides
# those the benchmarks declare (a remote cluster's nodes must have their own: see docs/running.md).
_FORWARDED_PREFIXES = ("LIFEBENCH_", "PYTHONPATH")

# Events go to the driver in batches: each yield is a round trip through Ray, too costly
# per event for short episodes. A batch waits at most this long for more events.
BATCH_LINGER_S = 0.02
BATCH_MAX = 256


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UserError("--executor ray needs Ray: pip install 'lifebench[ray]'") from None
    return ray


_AUTH_MODE_ENV = "RAY_AUTH_MODE"


def _refused_for_a_token(exc: BaseException) -> bool:
    """Whether a failed connection was the cluster's token authentication (Ray 2.52 on: a
    `ray start` after any local Ray instance made ~/.ray/auth_token turns it on, while a
    driver uses a token only with RAY_AUTH_MODE=token)."""
    seen: BaseException | None = exc
    for _ in range(8):  # the causes Ray chains
        if seen is None:
            return False
        if "InvalidAuthToken" in str(seen) or "Unauthenticated" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _check_reachable(address: str) -> None:
    """A HOST:PORT nobody listens on, refused at once: Ray itself retries for minutes.
    (`auto` and ray:// addresses are left to Ray.)"""
    host, sep, port = address.rpartition(":")
    if not sep or not host or "/" in host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=10).close()
    except OSError as exc:
        raise ConnectionError(f"nothing answers at {address} ({exc.strerror or exc})") from None


def play_unit(unit: WorkUnit, record_trajectories: bool):
    """The task's body: run the unit in a thread, yield its events in batches as they come.
    (Events not yet sent when the worker dies are replayed: the driver recovers the unit
    from what it has committed.)"""
    events: "queue.Queue[Any]" = queue.Queue()
    finished = object()
    failure: list[BaseException] = []

    def target() -> None:
        try:
            run_unit(unit, events.put, record_trajectories, ray_jobs)
            flush_all()  # the LLM answers written behind (Ray's workers outlive tasks)
        except BaseException as exc:  # raised in the task, after the events sent so far
            failure.append(exc)
        finally:
            events.put(finished)

    threading.Thread(target=target, daemon=True, name=f"unit-{unit.unit_id}").start()
    done = False
    while not done:
        batch = [events.get()]
        deadline = time.monotonic() + BATCH_LINGER_S
        while len(batch) < BATCH_MAX and batch[-1] is not finished:
            try:
                batch.append(events.get(timeout=max(0.0, deadline - time.monotonic())))
            except queue.Empty:
                break
        if batch[-1] is finished:
            batch.pop()
            done = True
        if batch:
            yield batch
    if failure:
        raise failure[0]


_remote_play_job: Any = None
_remote_lock = threading.Lock()


def ray_jobs(specs: list[JobSpec]) -> Callable[[], list[JobOutcome]]:
    """A batch of jobs as Ray tasks; the function that waits for their outcomes, in order
    (Ray's own retries cover a worker lost under a job: it raises no exception of its own,
    `play_job` returns it)."""
    ray = import_ray()
    global _remote_play_job
    with _remote_lock:
        if _remote_play_job is None:  # made once per process: Ray exports it each time
            _remote_play_job = ray.remote(max_retries=JOB_PLAYS - 1, retry_exceptions=False)(play_job)
        remote = _remote_play_job
    declared = dict(registry.benchmark_class(specs[0].stream.benchmark).ray_resources)
    refs = [remote.options(**declared).remote(spec) for spec in specs]

    def wait() -> list[JobOutcome]:
        outcomes = []
        for spec, ref in zip(specs, refs):
            try:
                outcomes.append(ray.get(ref))
            except ray.exceptions.RayError as exc:  # its worker or node, each time
                outcomes.append(lost(spec, f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"))
        return outcomes
    return wait


def task_resources(unit: WorkUnit, concurrency: int) -> dict[str, Any]:
    declared = dict(registry.benchmark_class(unit.stream.benchmark).ray_resources)
    declared["num_cpus"] = declared.get("num_cpus", 1) / concurrency
    return declared


class RayExecutor:
    def __init__(self, workers: int, record_trajectories: bool = True, concurrency: int = 1,
                 address: Optional[str] = None) -> None:
        self.workers = max(1, workers)
        self.record_trajectories = record_trajectories
        self.concurrency = max(1, concurrency)
        self.address = address

    def run(self, units: list[WorkUnit], store: ResultsStore,
            on_episode: Callable[[bool, bool], None]) -> RunOutcome:
        ray = import_ray()
        started_here = self._start(ray)
        try:
            writer = Writer(store, units, on_episode)
            _RayRun(self, ray, units, writer).run()
            return writer.outcome
        finally:
            if started_here:
                ray.shutdown()

    def _start(self, ray: Any) -> bool:
        """Connect (or start a local instance); True when this run started it."""
        if ray.is_initialized():
            return False
        from lifebench.llm.ray_slots import ENV as SLOTS_ENV

        declared = set()
        for name in registry.benchmark_names():
            try:
                declared.update(registry.benchmark_class(name).environment)
            except UserError:  # a broken plugin is reported where it is used
                continue
        env = {k: v for k, v in os.environ.items()
               if k.startswith(_FORWARDED_PREFIXES) or k in declared}
        for key, value in env.items():
            if value and not os.path.isabs(value) and os.path.exists(value):
                env[key] = os.path.abspath(value)  # workers run in another directory
        env[SLOTS_ENV] = "1"  # LLM clients in the workers share the cluster's slots
        options: dict[str, Any] = dict(namespace=NAMESPACE, include_dashboard=False,
                                       log_to_driver=False, logging_level=logging.ERROR,
                                       configure_logging=True, runtime_env={"env_vars": env})
        try:
            if self.address:
                _check_reachable(self.address)
                ray.init(address=self.address, **options)
            else:  # a local instance with this machine's --workers as its CPUs
                ray.init(num_cpus=self.workers, **options)
        # (RayError: RAY_AUTH_MODE=token here without a token)
        except (ConnectionError, RuntimeError, ValueError, ray.exceptions.RayError) as exc:
            what = str(exc).splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
            fix = "start one with `ray start --head` or give --ray-address"
            if _refused_for_a_token(exc):
                fix = (f"it asks for its token: set {_AUTH_MODE_ENV}=token here, with the token "
                       f"it was started with in ~/.ray/auth_token or RAY_AUTH_TOKEN")
            raise UserError(f"cannot reach the Ray cluster at {self.address}: {what}; {fix}") from None
        return True


class _RayRun:
    """One run's tasks: submitted while slots are free, their batches handed to the
    writer, lost or hung ones recovered."""

    def __init__(self, executor: RayExecutor, ray: Any, units: list[WorkUnit], writer: Writer) -> None:
        self.executor = executor
        self.ray = ray
        self.writer = writer
        self.pending = collections.deque(units)
        self.running: dict[Any, WorkUnit] = {}  # streaming generator -> its unit
        self.killed: dict[int, tuple[Status, str]] = {}  # unit id -> why the driver cancelled it
        self.finished: set[int] = set()  # units whose task reported their end
        self.remote = ray.remote(max_retries=0, num_returns="streaming")(play_unit)
        cpus = ray.cluster_resources().get("CPU", executor.workers)
        self.slots = max(1, int(cpus)) * executor.concurrency

    def run(self) -> None:
        from lifebench.llm.ray_slots import ensure_slots_actor

        slots_actor = ensure_slots_actor()  # held for the run: the actor lives while referenced
        try:
            while self.pending or self.running:
                while self.pending and len(self.running) < 2 * self.slots:  # queued in Ray
                    self._submit(self.pending.popleft())
                ready, _ = self.ray.wait(list(self.running), num_returns=len(self.running),
                                         timeout=0.05)
                for generator in ready:
                    self._take_batch(generator)
                self._cancel_hung()
        finally:
            for generator in self.running:
                try:
                    self.ray.cancel(generator, force=True)
                except Exception:  # already gone
                    pass
            del slots_actor

    def _submit(self, unit: WorkUnit) -> None:
        task = self.remote.options(**task_resources(unit, self.executor.concurrency))
        self.running[task.remote(unit, self.executor.record_trajectories)] = unit

    def _take_batch(self, generator: Any) -> None:
        unit = self.running[generator]
        try:
            batch = self.ray.get(next(generator))
        except StopIteration:
            if unit.unit_id in self.finished:
                del self.running[generator]
            else:  # cannot happen unless the task broke its protocol
                self._lost(generator, RuntimeError("the task ended without finishing its unit"))
            return
        except Exception as exc:  # the worker, its node or the task died
            self._lost(generator, exc)
            return
        for event in batch:
            self.writer.handle(event)
            if isinstance(event, UnitFinished):
                self.finished.add(event.unit_id)

    def _lost(self, generator: Any, exc: BaseException) -> None:
        unit = self.running.pop(generator)
        cause = getattr(exc, "cause", None) or exc  # a RayTaskError wraps what the task raised
        what = "the task failed" if cause is not exc else "ray worker lost"
        lines = str(cause).strip().splitlines() or [""]
        status, error = self.killed.pop(unit.unit_id, (
            Status.ENV_ERROR, f"{what} ({type(cause).__name__}: {lines[-1][:160]})"))
        continuation = self.writer.recover(unit.unit_id, status, error)
        if continuation is not None:
            self.pending.appendleft(continuation)

    def _cancel_hung(self) -> None:
        for generator, unit in list(self.running.items()):
            if unit.unit_id in self.killed:
                continue
            why = self.writer.hung(unit.unit_id)
            if why:
                self.killed[unit.unit_id] = (Status.TIMEOUT, why)
                self.ray.cancel(generator, force=True)
