"""Oracle over Plancraft `val` in one process: lifebench vs bare loops over the package.

Prints episodes/s of
  1. lifebench (the real runner in-process: episode loop, records fsync'd, trajectories),
  2. a bare loop over the package's PlancraftGymWrapper and planner, with rendering,
  3. the same bare loop with rendering skipped (the GUI replaced by a no-op stand-in),
and the ratios. Targets: (1) >= 3x (2), and (1) within 10% of (3).

    python tests/perf/perf_plancraft_oracle.py [--split val] [--limit N]
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import plancraft.simple as plancraft_simple  # noqa: E402
from plancraft.environment.planner import get_subplans  # noqa: E402

from benchmarks.plancraft import PlancraftBenchmark  # noqa: E402
from benchmarks.plancraft.env import TextOnlyPlancraftEnvironment  # noqa: E402
from harness.run import RunOptions, execute  # noqa: E402
from harness.spec import RunSpec  # noqa: E402


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
        spec = RunSpec(benchmarks=("plancraft",), methods=("oracle",), splits={"plancraft": (split,)},
                       limit=limit)
        outcome = execute(spec, RunOptions(out=Path(out), workers=0, progress=False))
        return outcome.successes


def timed(fn, *args) -> tuple[float, int]:
    start = time.perf_counter()
    successes = fn(*args)
    return time.perf_counter() - start, successes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--split", default="val")
    parser.add_argument("--limit", type=int)
    args = parser.parse_args()
    bench = PlancraftBenchmark()
    examples = [i.payload for i in bench.instances(args.split)][: args.limit]
    n = len(examples)
    # Warm the planner's module-level caches and imports for every contender alike.
    bare_loop(examples[:3])

    lb_s, lb_ok = timed(lifebench_loop, args.split, args.limit)
    with mock.patch.object(plancraft_simple, "PlancraftEnvironment", TextOnlyPlancraftEnvironment):
        fast_s, fast_ok = timed(bare_loop, examples)
    render_s, render_ok = timed(bare_loop, examples)

    rows = [("lifebench (oracle, in-process)", lb_s, lb_ok),
            ("bare loop, package wrapper, rendering", render_s, render_ok),
            ("bare loop, package wrapper, no rendering", fast_s, fast_ok)]
    print(f"Plancraft {args.split}: oracle over {n} episodes, one process")
    for name, seconds, ok in rows:
        print(f"  {name:44s} {n / seconds:8.2f} episodes/s  ({seconds:6.1f} s, {ok}/{n} solved)")
    vs_render = render_s / lb_s
    vs_fast = fast_s / lb_s
    print(f"  lifebench / rendering bare loop     = {vs_render:5.2f}x  (target >= 3x: "
          f"{'met' if vs_render >= 3 else 'NOT met'})")
    print(f"  lifebench / non-rendering bare loop = {vs_fast:5.2f}x  (target >= 0.90: "
          f"{'met' if vs_fast >= 0.9 else 'NOT met'})")


if __name__ == "__main__":
    main()
