"""Independent work of a method's preparation, run by the harness on the run's workers.

A method whose `prepare` plays episodes that do not depend on one another (the support
episodes of its memory, one batch of training episodes) hands them to the harness:

    rollouts = run_jobs(self.ctx, play_support, payloads)

`run_jobs` calls `function(job_ctx, payload)` for each payload and returns the results in
the order of the payloads. `start_jobs` hands a batch out and returns at once; its
`results()` waits for it. A method that works out its next batch while one plays (one
task's episodes while it plans the next task's) starts each, then takes their results in
the order it started them: they are counted in that order. Where the harness gives no job
service, `start_jobs` plays the batch then and there. With `--workers 0` or `1` (and where the harness gives no job
service: a method's own tests) it calls them one after another in the stream's process,
with the stream's context; with `--workers N` the jobs run on the run's worker processes,
and under `--executor ray` as tasks on the cluster (`ctx.jobs`, the runner's).

What a job may rely on, and what it must keep:
- `function` is a module-level function (it is sent by name); each payload and each result
  is picklable (frozen dataclasses, `Instance`s, tuples of text and numbers).
- `job_ctx` is the stream's context as a job sees it: the same benchmark (with its config),
  split, seed, budget and model, and an LLM client on the stream's endpoint, cache, seed and
  tags. What a job's calls spend is counted to the stream as if the jobs had run one after
  another in the given order (usage, per-call detail, reply notes), and the tags a job
  changes (`tag_calls`) are the stream's after the batch, in that order too. It has no
  teacher, and no job service of its own (a job's own `run_jobs` runs inline).
- A job depends on nothing but its payload and that context: not on another job of the
  batch, not on state a method keeps (its memory, its random generator), not on the process
  it runs in. A result is then the same wherever the job ran, and the prepared artifact and
  the records are those of a run on one worker.
- A job that raises: `run_jobs` raises the first such exception in the payloads' order,
  once the jobs before it are counted, as the sequential loop would (what later jobs spent
  is not counted: they would not have run). A worker that dies under a job is replaced and
  the job played again (twice at most), then `run_jobs` raises `JobLost` in one line.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Protocol, Sequence

# function(job_ctx, payload) -> result; job_ctx is a `lifebench.api.StreamContext` (not
# named here: protocols.py names this module's `Jobs`, and imports point one way)
JobFunction = Callable[[Any, Any], Any]


class JobLost(RuntimeError):
    """A job whose worker died each time it was played (the machine's failure, not the
    method's): its preparation fails, and the episode is retried as any failed setup."""


class StartedJobs(Protocol):
    """A batch handed out: `results()` waits for it and gives its results in order (or
    raises what its first failing job raised)."""

    def results(self) -> list[Any]: ...


class Jobs(Protocol):
    """`ctx.jobs`: runs independent jobs of a preparation (see the module's docstring)."""

    def map(self, function: JobFunction, payloads: Sequence[Any]) -> list[Any]: ...

    def start(self, function: JobFunction, payloads: Sequence[Any]) -> StartedJobs: ...


class _Played:
    """A batch played where it was started (no job service)."""

    def __init__(self, results: list[Any]) -> None:
        self._results = results

    def results(self) -> list[Any]:
        return self._results


def run_jobs(ctx: Any, function: JobFunction, payloads: Sequence[Any]) -> list[Any]:
    """`function(ctx, payload)` of every payload, in their order: on the run's workers when
    the harness gives a job service (`ctx.jobs`), else one after another here."""
    return start_jobs(ctx, function, payloads).results()


def start_jobs(ctx: Any, function: JobFunction, payloads: Sequence[Any]) -> StartedJobs:
    """The batch of `run_jobs`, handed out without waiting for it (played here and now
    where the harness gives no job service)."""
    jobs: Optional[Jobs] = getattr(ctx, "jobs", None)
    if jobs is None:
        return _Played([function(ctx, payload) for payload in payloads])
    return jobs.start(function, list(payloads))
