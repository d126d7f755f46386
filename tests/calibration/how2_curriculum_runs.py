"""How²'s curriculum order on `val.repeated` (issue 47): how long the runs of consecutive
examples of one target are, under the tie-break we use and under the others.

    LIFEBENCH_DATA=... .venv/bin/python tests/calibration/how2_curriculum_runs.py [--seeds 0,1,2]

The curriculum (Appendix C.2) sorts the *recipes* by their dependencies (cycles broken at
random per seed), so the examples of one target come together: items of equal rank are
ordered by name (`benchmarks/plancraft/curriculum.py`). Printed beside it, per seed: ties
left in the split's file order (a stable sort by rank), and ties broken per example by a
seeded draw (each seed its own interleaving of same-rank targets); and the file order
itself. Run length: consecutive examples with the same target. Deterministic.
"""

from __future__ import annotations

import argparse
import random
import statistics
from typing import Sequence

from lifebench import registry
from lifebench.api import Instance
from lifebench.benchmarks.plancraft.curriculum import curriculum_order, item_ranks


def run_lengths(order: Sequence[Instance]) -> list[int]:
    runs: list[int] = []
    previous = None
    for instance in order:
        target = instance.metadata["target"]
        if target == previous:
            runs[-1] += 1
        else:
            runs.append(1)
        previous = target
    return runs


def tie_breaks(seed: int, instances: Sequence[Instance]) -> dict[str, list[Instance]]:
    """The curriculum of `seed` with each tie-break."""
    ranks = item_ranks(seed)
    unknown = max(ranks.values(), default=0) + 1

    def rank(instance: Instance) -> int:
        return ranks.get(instance.metadata["target"], unknown)

    draws = random.Random(f"curriculum-ties/{seed}")
    drawn = {i.instance_id: draws.random() for i in instances}
    return {
        "by name (ours)": curriculum_order(instances, seed),
        "file order": sorted(instances, key=rank),
        "seeded per example": sorted(instances, key=lambda i: (rank(i), drawn[i.instance_id])),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2")
    args = parser.parse_args()
    instances = registry.get_benchmark("plancraft").instances("val.repeated")
    print(f"val.repeated: {len(instances)} examples, "
          f"{len({i.metadata['target'] for i in instances})} targets")
    print(f"{'order':<48} {'runs':>5} {'mean run':>9} {'longest':>8}")
    rows = [("file order (no curriculum)", run_lengths(instances))]
    for seed in (int(s) for s in args.seeds.split(",")):
        rows += [(f"curriculum seed {seed}, ties {name}", run_lengths(order))
                 for name, order in tie_breaks(seed, instances).items()]
    for name, runs in rows:
        print(f"{name:<48} {len(runs):>5} {statistics.mean(runs):>9.2f} {max(runs):>8}")


if __name__ == "__main__":
    main()
