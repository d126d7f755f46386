"""A preparation's independent jobs (`lifebench.api.jobs`), the harness's side.

`StreamJobs` is a stream's `ctx.jobs`: it sends its jobs, as `JobSpec`s, through the
executor's transport (a function of a batch of specs, giving their outcomes in order):
the local executor's workers (lifebench.runner.local), or Ray tasks
(lifebench.runner.ray_executor). `play_job` plays one spec wherever it lands. Then the
outcomes are counted to the stream in the payloads' order, as if the jobs had run there
one after another.
"""

from __future__ import annotations

import dataclasses
import importlib
import pickle
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from lifebench import registry
from lifebench.api.jobs import JobFunction, JobLost
from lifebench.api.protocols import StreamContext
from lifebench.api.records import RoleUsage
from lifebench.llm.cache import flush_all, refresh_all
from lifebench.runner.clients import make_llm_client
from lifebench.runner.streams import StreamSpec

JOB_PLAYS = 3  # a job is played at most this often when its worker dies under it


@dataclass(frozen=True)
class JobSpec:
    """One job as it travels: its stream (what its context is built from), its function
    by module and name, its payload, and where the stream's client stood when the batch
    was handed out (its tags, and the episode its calls' answers are kept under)."""

    index: int  # in its batch
    stream: StreamSpec
    function: str  # "module:qualified.name"
    payload: Any
    tags: dict[str, str] = field(default_factory=dict)
    scope: str = ""


@dataclass
class JobOutcome:
    """What a job gave: its result, or what it raised; what its calls spent (an
    `LLMClient.take_spend`, None without an LLM) and the tags it left."""

    index: int
    result: Any = None
    error: Optional[BaseException] = None
    spend: Any = None
    tags: dict[str, str] = field(default_factory=dict)


# hands a batch out; gives the function that waits for its outcomes, in order
Transport = Callable[[list[JobSpec]], Callable[[], list[JobOutcome]]]


def function_name(function: JobFunction) -> str:
    """How a job's function travels: by module and qualified name (a module-level
    function, which every process can import)."""
    module, name = getattr(function, "__module__", None), getattr(function, "__qualname__", "")
    if not module or not name or "<" in name:
        raise TypeError(f"a job's function must be a module-level function (run_jobs sends "
                        f"it by name), not {function!r}")
    return f"{module}:{name}"


def _resolve(name: str) -> JobFunction:
    module, _, qualified = name.partition(":")
    found: Any = importlib.import_module(module)
    for part in qualified.split("."):
        found = getattr(found, part)
    return found


def job_context(stream: StreamSpec, llm: Any) -> StreamContext:
    """The stream's context as a job sees it (no teacher, no jobs of its own)."""
    return StreamContext(benchmark=registry.get_benchmark(stream.benchmark, stream.benchmark_config),
                         split=stream.split, seed=stream.seed, budget=stream.budget,
                         model=stream.model, llm=llm, benchmark_named=registry.get_benchmark,
                         allow_unconfined_code=stream.allow_unconfined_code)


def play_job(spec: JobSpec) -> JobOutcome:
    """Play one job in this process, with a client of its stream's endpoint standing where
    the stream's stood; what it wrote to the cache is written before it returns, so that
    the next job (anywhere) finds it, as it would in one process."""
    stream = spec.stream
    refresh_all()
    llm = make_llm_client(stream.model, stream.llm, stream.seed) if stream.llm is not None else None
    if llm is not None:
        llm.set_tag_state(spec.tags)
        llm.scope(spec.scope)
    outcome = JobOutcome(spec.index)
    try:
        outcome.result = _resolve(spec.function)(job_context(stream, llm), spec.payload)
    except Exception as exc:  # the job's own failure: raised in the stream, in its turn
        outcome.error = _portable(exc)
    if llm is not None:
        outcome.spend, outcome.tags = llm.take_spend(), llm.tag_state()
    flush_all()
    return portable_outcome(outcome)


def _portable(exc: BaseException) -> BaseException:
    """`exc`, or a RuntimeError saying what it was when it cannot travel between processes."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")


def portable_outcome(outcome: JobOutcome) -> JobOutcome:
    """`outcome`, its result replaced by a TypeError when it cannot travel (a job's result
    must be picklable)."""
    try:
        pickle.dumps(outcome.result)
    except Exception as exc:
        outcome.result, outcome.error = None, outcome.error or TypeError(
            f"a job's result must be picklable ({type(exc).__name__}: {exc})")
    return outcome


class Started:
    """A batch handed out (`StreamJobs.start`): `results()` waits for it, counts it (and
    every batch started before it) to the stream, and gives its results in order."""

    def __init__(self, owner: "StreamJobs", wait: Optional[Callable[[], list[JobOutcome]]],
                 results: Optional[list[Any]] = None) -> None:
        self.owner = owner
        self.wait = wait  # None once counted
        self._results = results
        self._error: Optional[BaseException] = None

    def results(self) -> list[Any]:
        self.owner._count_until(self)
        if self._error is not None:
            raise self._error
        assert self._results is not None
        return self._results


class StreamJobs:
    """`ctx.jobs` of a stream whose run has more than one worker: its batches go through
    `transport` (which hands them out and gives a function that waits for their outcomes),
    and are counted to the stream's client (`llm`) in the order they were started."""

    def __init__(self, transport: Transport, stream: StreamSpec, llm: Any) -> None:
        self.transport = transport
        self.stream = stream
        self.llm = llm
        self.open: list[Started] = []  # started, not yet counted, in order
        self.asked: set[str] = set()  # the requests of the open batches' counted jobs

    def map(self, function: JobFunction, payloads: Sequence[Any]) -> list[Any]:
        return self.start(function, payloads).results()

    def start(self, function: JobFunction, payloads: Sequence[Any]) -> Started:
        payloads = list(payloads)
        name = function_name(function)
        if len(payloads) < 2 and not self.open:  # nothing to share out, nothing before it
            ctx = job_context(self.stream, self.llm)
            return Started(self, None, [function(ctx, p) for p in payloads])
        tags = self.llm.tag_state() if self.llm is not None else {}
        scope = self.llm.scope_name if self.llm is not None else ""
        specs = [JobSpec(i, self.stream, name, payload, tags, scope)
                 for i, payload in enumerate(payloads)]
        try:
            pickle.dumps([s.payload for s in specs])
        except Exception as exc:
            raise TypeError(f"a job's payload must be picklable ({type(exc).__name__}: "
                            f"{exc})") from None
        flush_all()  # what this process cached (its inline jobs, its episodes) is theirs too
        started = Started(self, self.transport(specs))
        self.open.append(started)
        return started

    def _count_until(self, last: Started) -> None:
        """Wait for and count the open batches up to `last`, in the order they started."""
        while last.wait is not None:
            batch = self.open.pop(0)
            outcomes, batch.wait = batch.wait(), None  # type: ignore[misc]
            refresh_all()  # what they cached is this process's too
            try:
                batch._results = self._counted(outcomes)
            except Exception as exc:
                batch._error = exc
            if not self.open:
                self.asked.clear()

    def _counted(self, outcomes: list[JobOutcome]) -> list[Any]:
        """The outcomes counted to the stream in order; the first error raised once the
        jobs before it (and its own calls) are counted, as a loop would have."""
        for outcome in outcomes:
            if self.llm is not None and outcome.spend is not None:
                spend = as_if_cached(outcome.spend, self.asked) if self.llm.reads_cache else outcome.spend
                self.asked.update(call.key for call in outcome.spend.calls if call.key)
                self.llm.absorb(spend)
                self.llm.set_tag_state(outcome.tags)
            if outcome.error is not None:
                raise outcome.error
        return [outcome.result for outcome in outcomes]


def as_if_cached(spend: Any, asked: set[str]) -> Any:
    """`spend` with its calls of requests an earlier job made (of its batch, or of a batch
    out at the same time) counted as the cache's answers: one after another, they would
    have been."""
    calls, usage = [], {role: dataclasses.replace(u) for role, u in spend.usage.items()}
    for call in spend.calls:
        if call.key in asked and not call.cached:
            call = dataclasses.replace(call, cached=True)
            usage.setdefault(call.role, RoleUsage()).cached += 1
        calls.append(call)
    return dataclasses.replace(spend, calls=calls, usage=usage)


def stream_jobs(transport: Optional[Transport], stream: StreamSpec, llm: Any) -> Optional[StreamJobs]:
    """The stream's `ctx.jobs`: None (its jobs run inline) without a transport, or when its
    client replays a run's answers (found by their occurrence in order, which only one
    process can keep)."""
    if transport is None or (llm is not None and llm.replays_answers):
        return None
    return StreamJobs(transport, stream, llm)


def lost(spec: JobSpec, why: str) -> JobOutcome:
    """The outcome of a job whose worker died under it each time it was played."""
    return JobOutcome(spec.index, error=JobLost(
        f"a preparation job ({spec.function}, {spec.index + 1} of its batch) of "
        f"{spec.stream.stream_id} was lost with its worker {JOB_PLAYS} times ({why})"))
