"""The Ray executor against the local one, on this machine, for the same spec.

`random` and `oracle` on Plancraft `val` and `val.repeated` (2280 episodes), 2 workers
either way. Ray is timed twice: on a Ray instance already running (as on a cluster,
where Ray outlives runs) and including the start and stop of a local instance (what
`--executor ray` alone costs here). Target: Ray at least 0.8 of local (running instance).
Then a scaling estimate for a cluster, from the per-event cost measured here.

    python tests/perf/perf_ray.py [--workers 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time


from lifebench.runner.run import execute  # noqa: E402
from lifebench.config.run import ExecutionConfig, RunConfig  # noqa: E402

SPEC = RunConfig(benchmarks=("plancraft",), methods=("random", "oracle"),
               splits={"plancraft": ("val", "val.repeated")})


def timed(executor: str, workers: int) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as out:
        began = time.perf_counter()
        outcome = execute(SPEC, ExecutionConfig(out=out, workers=workers, executor=executor,
                                           progress=False, trajectories=True))
        return time.perf_counter() - began, outcome.results


def writer_records_per_s(count: int = 2000) -> float:
    """The driver's own ceiling: how fast one writer commits records (stateless, no
    trajectories), each appended and fsync'd."""
    from lifebench.api import EpisodeRecord
    from lifebench.store.results import ResultsStore

    record = EpisodeRecord(run_id="perf", benchmark="plancraft", benchmark_config_hash="",
                           split="val", instance_id="x", method="random", method_config_hash="h",
                           model=None, seed=0, trial=0, episode_index=0, budget_steps=30, steps=30,
                           success=False, score=0.0, status="budget_exhausted", llm_calls=0,
                           tokens_in=0, tokens_out=0, wall_s=0.1, harness_version="0", extra={})
    with tempfile.TemporaryDirectory() as out, ResultsStore(out) as store:
        store.open()
        began = time.perf_counter()
        for _ in range(count):
            store.commit("perf", record, None, None)
        return count / (time.perf_counter() - began)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    import ray

    local_s, n = timed("local", args.workers)
    began = time.perf_counter()
    cold_s, cold_n = timed("ray", args.workers)  # starts and stops its own instance
    cold_total = time.perf_counter() - began
    ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False,
             namespace="lifebench")
    try:
        timed("ray", args.workers)  # warm the instance's worker processes, as a cluster's are
        warm_s, warm_n = timed("ray", args.workers)
    finally:
        ray.shutdown()
    assert n == cold_n == warm_n, (n, cold_n, warm_n)
    local, warm, cold = n / local_s, n / warm_s, n / cold_total
    print(f"ray executor, plancraft val+val.repeated random+oracle, {n} episodes, {args.workers} workers")
    print(f"  local:                       {local:8.1f} episodes/s ({local_s:.1f} s)")
    print(f"  ray (instance running):      {warm:8.1f} episodes/s ({warm_s:.1f} s)")
    print(f"  ray (start+stop included):   {cold:8.1f} episodes/s ({cold_total:.1f} s)")
    print(f"  ratio ray/local: {warm / local:.2f} with a running instance (target >= 0.8), "
          f"{cold / local:.2f} including Ray's start")
    writes = writer_records_per_s()
    print(f"  the single writer commits {writes:,.0f} records/s here (append + fsync, one "
          f"record each, stateless methods)")
    print("  scaling on paper: a cluster of W worker slots plays W / (episode seconds) episodes/s;")
    print(f"  the driver stops keeping up at ~{writes:,.0f} episodes/s (e.g. 1,000 slots of "
          f"{1000 / writes:.2f} s episodes);")
    print("  LLM-bound grids reach the endpoints' limit first: --llm-concurrency N holds across "
          "the cluster, so episodes/s <= N / (LLM calls per episode x seconds per call).")

if __name__ == "__main__":
    main()
