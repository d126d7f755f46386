"""The Plancraft planner's search budget (issue 35): the search steps each oracle search
takes over every instance of `val`, `val.repeated` and `test`, against `SEARCH_STEPS`, the
budget that replaced the package's 30-second timeout; then the same walk again with CPU-
burning processes beside it, to show the outcome no longer depends on the machine's load.

Prints, per split: instances, searches, the most steps one search took (and where), its
share of the budget, the searches that hit the budget, and the solvable instances the oracle
did not solve; then whether the loaded walk gave the same actions. No asserts.

    python tests/perf/perf_plancraft_planner.py [--splits val,val.repeated,test] [--limit N]
        [--burners 2]
"""

from __future__ import annotations

import argparse
import multiprocessing
import time

from lifebench import registry
from lifebench.benchmarks.plancraft import planner


def burn() -> None:
    while True:
        pass


def walk(splits: list[str], limit: int | None) -> tuple[dict, list]:
    bench = registry.get_benchmark("plancraft")
    searched: list[int] = []
    package = planner.get_subplans

    def counted(*args, **kwargs):
        out = package(*args, **kwargs)
        searched.append(planner.CLOCK.steps)
        return out

    planner.get_subplans = counted
    stats, actions = {}, []
    try:
        for split in splits:
            instances = bench.instances(split)[:limit]
            first, worst, unsolved = len(searched), (0, ""), []
            for instance in instances:
                before = len(searched)
                env = bench.make_env(instance, 0)
                try:
                    observation = env.reset()
                    oracle = bench.oracle(env)
                    played, done, success = [], False, False
                    while not done and len(played) < bench.budget(instance):
                        action = oracle.next_action(observation)
                        played.append(action)
                        step = env.step(action)
                        observation, done, success = step.observation, step.done, step.success
                finally:
                    env.close()
                actions.append((split, instance.instance_id, tuple(played)))
                most = max(searched[before:], default=0)
                if most > worst[0]:
                    worst = (most, instance.instance_id)
                if not success and not instance.metadata.get("impossible"):
                    unsolved.append(instance.instance_id)
            steps = searched[first:]
            stats[split] = {"instances": len(instances), "searches": len(steps), "worst": worst,
                            "at_budget": sum(s > planner.SEARCH_STEPS for s in steps),
                            "unsolved": unsolved}
    finally:
        planner.get_subplans = package
    return stats, actions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", default="val,val.repeated,test")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--burners", type=int, default=2)
    args = parser.parse_args()
    splits = args.splits.split(",")
    started = time.monotonic()
    stats, quiet = walk(splits, args.limit)
    seconds = time.monotonic() - started
    for split, s in stats.items():
        steps, where = s["worst"]
        print(f"{split}: {s['instances']} instances, {s['searches']} searches; the longest took "
              f"{steps:,} steps ({where}) = {steps / planner.SEARCH_STEPS:.3f} of the budget "
              f"({planner.SEARCH_STEPS:,}); {s['at_budget']} searches hit the budget; "
              f"{len(s['unsolved'])} solvable instances not solved {s['unsolved'][:5]}")
    print(f"walk: {seconds:.0f} s")
    burners = [multiprocessing.Process(target=burn, daemon=True) for _ in range(args.burners)]
    for b in burners:
        b.start()
    try:
        started = time.monotonic()
        _, loaded = walk(splits, args.limit)
        slower = time.monotonic() - started
    finally:
        for b in burners:
            b.terminate()
    same = loaded == quiet
    print(f"with {args.burners} CPU-burning processes beside it: {slower:.0f} s "
          f"({slower / seconds:.2f}x the quiet walk); the same actions on every instance: {same}")


if __name__ == "__main__":
    main()
