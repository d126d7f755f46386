"""`--executor ray`: work units as Ray tasks, on a local Ray instance or an existing cluster.

Each unit (a stream, or a shard of a stateless one) is one Ray task that builds its method
and plays its episodes in a Ray worker process, which owns the environments it starts
(ScienceWorld's JVM, ALFWorld's games): they live and die with that process. The task
streams its events back as it plays (a Ray streaming generator); the driver is the only
writer and handles them exactly as the local executor does (`executor.Writer`), so records,
resume and retries are the same. A task whose worker or node is lost is recorded like a
crashed local worker and its unit continues, from the method's last committed memory, as a
new task; an episode past its hard timeout has its task cancelled (the worker is killed).
Ray's own task retries are off: a retry from the start would replay committed episodes.

Tasks ask Ray for the resources their benchmark declares (`Benchmark.ray_resources`:
CPUs, and memory for a JVM), divided by `--concurrency` for LLM-bound runs. The
per-endpoint LLM concurrency limit is held by one named actor for the whole cluster
(`harness.llm.ray_slots`).
"""

from __future__ import annotations

import collections
import os
import time
from typing import Any, Callable, Optional

from harness.errors import UserError
from harness.executor import RunOutcome, Writer, hard_timeout_s
from harness.store import ResultsStore
from harness.stream import UnitFinished, WorkUnit, run_unit

NAMESPACE = "lifebench"
# Environment variables the workers of a local Ray instance need from the driver (a remote
# cluster's nodes must have their own: see the README).
_FORWARDED_PREFIXES = ("LIFEBENCH_", "JAVA_TOOL_OPTIONS", "PYTHONPATH", "ALFWORLD_DATA")


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UserError("--executor ray needs Ray: pip install 'lifebench[ray]'") from None
    return ray


# Events go to the driver in batches: each yield is a round trip through Ray, too costly
# per event for short episodes. A batch waits at most this long for more events.
BATCH_LINGER_S = 0.02
BATCH_MAX = 256


def play_unit(unit: WorkUnit, record_trajectories: bool):
    """The task's body: run the unit in a thread, yield its events in batches as they come.
    (Events not yet sent when the worker dies are replayed: the driver recovers the unit
    from what it has committed.)"""
    import queue
    import threading

    events: "queue.Queue[Any]" = queue.Queue()
    finished = object()
    failure: list[BaseException] = []

    def target() -> None:
        try:
            run_unit(unit, events.put, record_trajectories)
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


def task_resources(unit: WorkUnit, concurrency: int) -> dict[str, Any]:
    from harness import registry

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

    def _start(self, ray: Any) -> bool:
        """Connect (or start a local instance); True when this run started it."""
        if ray.is_initialized():
            return False
        import logging

        from harness.llm.ray_slots import ENV as SLOTS_ENV

        env = {k: v for k, v in os.environ.items() if k.startswith(_FORWARDED_PREFIXES)}
        for key in ("LIFEBENCH_DATA", "LIFEBENCH_CACHE", "ALFWORLD_DATA", "LIFEBENCH_IGE_COOKING"):
            if key in env and not os.path.isabs(env[key]):  # workers run in another directory
                env[key] = os.path.abspath(env[key])
        env[SLOTS_ENV] = "1"  # LLM clients in the workers share the cluster's slots
        options: dict[str, Any] = dict(namespace=NAMESPACE, include_dashboard=False,
                                       log_to_driver=False, logging_level=logging.ERROR,
                                       configure_logging=True)
        try:
            if self.address:
                ray.init(address=self.address, runtime_env={"env_vars": env}, **options)
            else:  # a local instance with this machine's --workers as its CPUs
                ray.init(num_cpus=self.workers, runtime_env={"env_vars": env}, **options)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise UserError(f"cannot reach the Ray cluster at {self.address}: "
                            f"{str(exc).splitlines()[0][:200]}; start one with `ray start "
                            f"--head` or give --ray-address") from None
        return True

    def run(self, units: list[WorkUnit], store: ResultsStore,
            on_episode: Callable[[bool, bool], None]) -> RunOutcome:
        ray = import_ray()
        started_here = self._start(ray)
        try:
            return self._run(ray, units, store, on_episode)
        finally:
            if started_here:
                ray.shutdown()

    def _run(self, ray: Any, units: list[WorkUnit], store: ResultsStore,
             on_episode: Callable[[bool, bool], None]) -> RunOutcome:
        from harness.llm.ray_slots import ensure_slots_actor

        slots_actor = ensure_slots_actor()  # held for the run: the actor lives while referenced
        remote = ray.remote(max_retries=0, num_returns="streaming")(play_unit)
        writer = Writer(store, units, on_episode)
        pending = collections.deque(units)
        running: dict[Any, WorkUnit] = {}  # streaming generator -> its unit
        killed: dict[int, tuple[str, str]] = {}  # unit id -> why the driver cancelled it
        finished: set[int] = set()  # units whose task reported their end
        slots = max(1, int(ray.cluster_resources().get("CPU", self.workers))) * self.concurrency

        def submit(unit: WorkUnit) -> None:
            task = remote.options(**task_resources(unit, self.concurrency))
            running[task.remote(unit, self.record_trajectories)] = unit

        def lost(generator: Any, unit: WorkUnit, exc: BaseException) -> None:
            del running[generator]
            cause = getattr(exc, "cause", None) or exc  # a RayTaskError wraps what the task raised
            what = "the task failed" if cause is not exc else "ray worker lost"
            lines = str(cause).strip().splitlines() or [""]
            status, error = killed.pop(unit.unit_id, (
                "env_error", f"{what} ({type(cause).__name__}: {lines[-1][:160]})"))
            continuation = writer.recover(unit.unit_id, status, error)
            if continuation is not None:
                pending.appendleft(continuation)

        try:
            while pending or running:
                while pending and len(running) < 2 * slots:  # queued in Ray, ready to start
                    submit(pending.popleft())
                # the tasks with a batch (or an end) ready, after at most a short wait
                ready, _ = ray.wait(list(running), num_returns=len(running), timeout=0.05)
                for generator in ready:
                    unit = running[generator]
                    try:
                        batch = ray.get(next(generator))
                    except StopIteration:
                        if unit.unit_id in finished:
                            del running[generator]
                        else:  # cannot happen unless the task broke its protocol
                            lost(generator, unit, RuntimeError("the task ended without finishing its unit"))
                        continue
                    except Exception as exc:  # the worker, its node or the task died
                        lost(generator, unit, exc)
                        continue
                    for event in batch:
                        writer.handle(event)
                        if isinstance(event, UnitFinished):
                            finished.add(event.unit_id)
                for generator, unit in list(running.items()):
                    flight = writer.in_flight.get(unit.unit_id)
                    if flight is not None and unit.unit_id not in killed and \
                            time.monotonic() - flight[2] > hard_timeout_s(unit.stream.timeout_s):
                        killed[unit.unit_id] = ("timeout", f"episode exceeded --timeout "
                                                f"{unit.stream.timeout_s:g}s and was killed")
                        ray.cancel(generator, force=True)
        finally:
            for generator in running:
                try:
                    ray.cancel(generator, force=True)
                except Exception:  # already gone
                    pass
            del slots_actor
        return writer.outcome
