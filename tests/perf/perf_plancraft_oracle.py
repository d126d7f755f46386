"""Oracle over Plancraft `val` in one process: lifebench vs bare loops over the package.

Prints episodes/s of
  1. lifebench (the real runner in-process: episode loop, records fsync'd, trajectories),
  2. a bare loop over the package's PlancraftGymWrapper and planner, with rendering,
  3. the same bare loop with rendering skipped: the package's wrapper over the adapter's
     text-only environment (GUI replaced by a no-op stand-in, recipes found by index),
     so that (1) vs (3) measures the harness's own overhead,
and the ratios. Targets: (1) >= 3x (2), and (1) within 10% of (3). For reference it also
prints (3) with the package's full recipe scan instead of the adapter's index.

    python tests/perf/perf_plancraft_oracle.py [--split val] [--limit N]
"""

from __future__ import annotations

import argparse
import copy
import tempfile
import time
from unittest import mock


import plancraft.simple as plancraft_simple  # noqa: E402
from plancraft.environment.env import PlancraftEnvironment  # noqa: E402
from plancraft.environment.planner import get_subplans  # noqa: E402

from lifebench.benchmarks.plancraft import PlancraftBenchmark  # noqa: E402
from lifebench.benchmarks.plancraft.env import TextOnlyPlancraftEnvironment  # noqa: E402
from lifebench.runner.run import execute  # noqa: E402
from lifebench.config.run import ExecutionConfig, RunConfig  # noqa: E402


def bare_loop(examples) -> int:
    """The package's own way: wrapper + planner, as its OracleModel plays."""
    successes = 0
    for example in examples:
        wrapper = plancraft_simple.PlancraftGymWrapper(copy.deepcopy(example), max_steps=30)
        observation, *_ = wrapper.step()
        queue: list[str] = []
        while True:
            if not queue:
                subplans, _ = get_subplans(observation)
                queue = [a for sub in subplans for a in sub]
            observation, reward, terminated, truncated, _ = wrapper.step(queue.pop(0))
            if terminated or truncated:
                break
        successes += int(wrapper.success)
    return successes


def lifebench_loop(split: str, limit: int | None) -> int:
    with tempfile.TemporaryDirectory() as out:
        spec = RunConfig(benchmarks=("plancraft",), methods=("oracle",), splits={"plancraft": (split,)},
                       limit=limit)
        outcome = execute(spec, ExecutionConfig(out=out, workers=0, progress=False))
        return outcome.successes


def timed(fn, *args) -> tuple[float, int]:
    start = time.perf_counter()
    successes = fn(*args)
    return time.perf_counter() - start, successes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--split", default="val")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--rounds", type=int, default=3,
                        help="interleaved repetitions of the fast loops; the best of each counts")
    args = parser.parse_args()
    bench = PlancraftBenchmark()
    examples = [i.payload for i in bench.instances(args.split)][: args.limit]
    n = len(examples)
    # Warm the planner's module-level caches and imports for every contender alike.
    bare_loop(examples[:3])

    class PackageScanNoRender(TextOnlyPlancraftEnvironment):
        # the package's own full recipe scan, without the adapter's recipe index
        populate_craft_slot_craft_item = PlancraftEnvironment.populate_craft_slot_craft_item

    lifebench_runs, text_runs = [], []
    for _ in range(args.rounds):  # interleaved, so drift in machine load hits both alike
        lifebench_runs.append(timed(lifebench_loop, args.split, args.limit))
        with mock.patch.object(plancraft_simple, "PlancraftEnvironment", TextOnlyPlancraftEnvironment):
            text_runs.append(timed(bare_loop, examples))
    with mock.patch.object(plancraft_simple, "PlancraftEnvironment", PackageScanNoRender):
        scan = timed(bare_loop, examples)
    render = timed(bare_loop, examples)
    lifebench, text = min(lifebench_runs), min(text_runs)

    rows = [("lifebench (oracle, in-process)", *lifebench),
            ("bare loop, package wrapper, rendering", *render),
            ("bare loop, rendering skipped", *text),
            ("  (same, package's full recipe scan)", *scan)]
    print(f"Plancraft {args.split}: oracle over {n} episodes, one process "
          f"(best of {args.rounds} interleaved rounds for the first and third)")
    for name, seconds, ok in rows:
        print(f"  {name:44s} {n / seconds:8.2f} episodes/s  ({seconds:6.1f} s, {ok}/{n} solved)")
    vs_render = render[0] / lifebench[0]
    vs_text = text[0] / lifebench[0]
    print(f"  lifebench / rendering bare loop          = {vs_render:5.2f}x  (target >= 3x: "
          f"{'met' if vs_render >= 3 else 'NOT met'})")
    print(f"  lifebench / bare loop, rendering skipped = {vs_text:5.2f}x  (target >= 0.90: "
          f"{'met' if vs_text >= 0.9 else 'NOT met'})")


if __name__ == "__main__":
    main()
