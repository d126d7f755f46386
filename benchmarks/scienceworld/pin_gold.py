"""Pin the simulator's gold paths of the step18 splits in `oracle_paths.jsonl`.

The simulator's gold path depends on what its JVM loaded before: with the same task and
variation it visits rooms in another order (`chemistry-mix-paint-secondary-color:2` opens
the bedroom before the workshop or after, depending on the tasks loaded earlier), even
with fixed identity hashes and its object counter reset. A worker's JVM plays whatever
its streams loaded before, so an oracle that replayed the live gold path gave ReAct's
examples, RAP's memory and the scripted model's books other transcripts from run to run.
A pinned path is replayed as it is, whatever the JVM did before; each is checked by a
replay that completes the task before it is written.

Instances that already have a row (a shortened path, `shorten.py`) keep it. The other
splits (`test`, `dev`: ~3,600 instances) are not pinned: their oracle replays the live gold.

    python -m lifebench.benchmarks.scienceworld.pin_gold [--write]
"""

from __future__ import annotations

import json
import sys

from lifebench.benchmarks.scienceworld.shorten import Replayer

PINNED_SPLITS = ("step18", "step18-v1", "step18-authors", "step18-train")


def main(argv: list[str]) -> None:
    from lifebench.benchmarks.scienceworld import ScienceWorldBenchmark
    from lifebench.benchmarks.scienceworld.env import ScienceWorldTaskEnv
    from lifebench.benchmarks.scienceworld.oracle_paths import SIMPLIFICATION, oracle_path, save_oracle_path

    bench = ScienceWorldBenchmark()
    write = "--write" in argv
    seen: dict[str, object] = {}
    for split in PINNED_SPLITS:
        for instance in bench.instances(split):
            seen.setdefault(instance.instance_id, instance)
    for instance_id in sorted(seen):  # one order: the paths are the same on every run of this
        instance = seen[instance_id]
        if oracle_path(instance_id, SIMPLIFICATION):
            continue
        env = ScienceWorldTaskEnv(instance.metadata["task_name"], int(instance.metadata["variation"]),
                                  SIMPLIFICATION)
        env.want_gold = True
        env.reset()
        gold = list(env.gold)
        env.want_gold = False  # replayed as the oracle replays it
        path = Replayer(env, 1).completes(gold)
        print(json.dumps({"instance_id": instance_id, "gold_length": len(gold),
                          "wins": path is not None}), flush=True)
        if write and path:
            save_oracle_path(instance_id, path, len(gold))


if __name__ == "__main__":
    main(sys.argv[1:])
