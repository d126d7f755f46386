"""`lifebench run`: spec → streams → plan (resume) → executor → results directory."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from harness import registry
from harness.errors import UserError
from harness.executor import LocalExecutor, RunOutcome
from harness.progress import Progress
from harness.resume import plan_units
from harness.spec import RunSpec, expand
from harness.store import ResultsStore, environment_info

EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class RunOptions:
    out: Path
    workers: int = field(default_factory=lambda: default_workers())
    executor: str = "local"
    progress: bool = True
    trajectories: bool = True
    # Streams played at once in each worker (threads): for LLM-bound runs.
    concurrency: int = 1
    # --executor ray: the cluster to join ("auto", "ray://HOST:PORT"); None starts a local one
    ray_address: Optional[str] = None


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)


def execute(spec: RunSpec, options: RunOptions) -> RunOutcome:
    if options.executor not in EXECUTORS:
        from harness.errors import unknown_name

        raise unknown_name("executor", options.executor, EXECUTORS)
    if options.workers < 0:
        raise UserError(f"--workers must be 0 (run in this process) or more, got {options.workers}")
    if options.concurrency < 1:
        raise UserError(f"--concurrency must be at least 1, got {options.concurrency}")
    streams = expand(spec)
    with ResultsStore(options.out) as store:
        existing = store.open()
        plan = plan_units(streams, existing.records, store,
                          max(options.workers, 1) * options.concurrency)
        packages = sorted({p for b in spec.benchmarks for p in registry.get_benchmark(b).packages})
        info = environment_info(packages)
        earlier = store.last_manifest_entry()
        if plan.already_done and earlier and earlier.get("git_revision") != info["git_revision"]:
            print(f"note: {options.out} holds episodes recorded at revision "
                  f"{earlier.get('git_revision')}; this run is at {info['git_revision']} "
                  f"(use a new --out to rerun everything)", file=sys.stderr)
        store.add_manifest_entry({
            "run_id": streams[0].run_id if streams else spec.run_id,
            "spec": spec.to_dict(),
            "argv": sys.argv,
            "executor": options.executor,
            "workers": options.workers,
            "concurrency": options.concurrency,
            "streams": [s.stream_id for s in streams],
            "episodes_total": plan.to_run + plan.already_done,
            "episodes_already_done": plan.already_done,
            **info,
        })
        progress = Progress(total=plan.to_run, skipped=plan.already_done, enabled=options.progress)
        try:
            if options.executor == "ray":
                from harness.ray_executor import RayExecutor

                executor: Any = RayExecutor(options.workers, record_trajectories=options.trajectories,
                                            concurrency=options.concurrency, address=options.ray_address)
            else:
                executor = LocalExecutor(options.workers, record_trajectories=options.trajectories,
                                         concurrency=options.concurrency)
            outcome = executor.run(plan.units, store, progress.update)
        finally:
            progress.close()
    return outcome


def summary_line(outcome: RunOutcome, out: Path) -> str:
    rate = f"{outcome.successes / outcome.results:.3f}" if outcome.results else "n/a"
    line = (f"{outcome.results} episodes recorded in {out} (success {rate})"
            f"{f', {outcome.failures} infrastructure failures' if outcome.failures else ''}")
    return line


def failure_hint(outcome: RunOutcome) -> Optional[str]:
    if not outcome.stopped:
        return None
    return "; ".join(outcome.stopped) + "; rerun the same command to retry from there"
