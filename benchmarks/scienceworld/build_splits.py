"""Build the ScienceWorld split manifests from the simulator (scienceworld==1.2.3).

    python -m lifebench.benchmarks.scienceworld.build_splits

- step18:    the 18 tasks of the CLIN and STEP tables, each on its first 5 test variations
- step18-v1: the same 18 tasks on their first test variation
- test, dev: all 30 tasks on all their test (dev) variations
- step18-authors: the same 18 tasks on variation index 1, the variation CLIN's and STEP's
  public code load (`--var-num 1`; a train variation)
- step18-train: the 18 tasks on their first 2 train variations other than index 1
  (disjoint from test, dev and step18-authors): what methods that learn before testing
  learn from (RAP's memory, InstructRAG's graph and its few-shot stage on the 18 tasks)

`python -m lifebench.benchmarks.scienceworld.build_splits step18-train` builds those two only.

Every row carries the task id, topic, short/long class (budget 37/70) and the length of
the simulator's gold path under the `easy` simplification.
"""

from __future__ import annotations

import statistics
import sys
from concurrent.futures import ProcessPoolExecutor

from lifebench.benchmarks.scienceworld.tasks import STEP18, instance_id, package_tasks
from lifebench.benchmarks.manifests import write_checksums, write_manifest

SIMPLIFICATION = "easy"
# Tasks outside the 18-task table are classed by their gold path: the 18-task table's
# short tasks have median gold lengths up to SHORT_GOLD_MAX (see the split README).
SHORT_GOLD_MAX = 20


TRAIN_PER_TASK = 2
# The variation CLIN's and STEP's code run by default (their `--var-num 1`).
AUTHORS_VARIATION = 1


def _variations(task_name: str) -> tuple[list[int], list[int]]:
    from lifebench.benchmarks.scienceworld import jvm

    sim = jvm.simulator()
    sim.load(task_name, 0, SIMPLIFICATION)
    return list(sim.get_variations_test()), list(sim.get_variations_dev())


def _train_rows(task: dict) -> tuple[list[dict], dict]:
    """The task's first TRAIN_PER_TASK train variations other than AUTHORS_VARIATION, and
    AUTHORS_VARIATION's row, as manifest rows."""
    from lifebench.benchmarks.scienceworld import jvm

    sim = jvm.simulator()
    sim.load(task["task_name"], 0, SIMPLIFICATION)
    variations = [v for v in sim.get_variations_train() if v != AUTHORS_VARIATION][:TRAIN_PER_TASK]
    gold = _gold_lengths(task["task_name"], [*variations, AUTHORS_VARIATION])

    def row(v: int) -> dict:
        return {"instance_id": instance_id(task["task_name"], v), "task_id": task["task_id"],
                "task_name": task["task_name"], "topic": task["topic"], "task": task["task"],
                "variation": v, "length": STEP18[task["task_id"]], "gold_length": gold[v]}

    return [row(v) for v in variations], row(AUTHORS_VARIATION)


def build_support(workers: int = 2) -> None:
    step18 = [t for t in package_tasks() if t["task_id"] in STEP18]
    with ProcessPoolExecutor(workers) as pool:
        built = list(pool.map(_train_rows, step18))
    for split, rows in (("step18-train", [row for rows, _ in built for row in rows]),
                        ("step18-authors", [authors for _, authors in built])):
        print(f"{split}: {len(rows)} instances -> {write_manifest('scienceworld', split, rows)}")
    print(f"checksums -> {write_checksums()}")


def _gold_lengths(task_name: str, variations: list[int]) -> dict[int, int]:
    from lifebench.benchmarks.scienceworld import jvm

    sim = jvm.simulator()
    out = {}
    for variation in variations:
        sim.load(task_name, variation, SIMPLIFICATION, generateGoldPath=True)
        out[variation] = len(sim.get_gold_action_sequence())
    return out


def build(workers: int = 2) -> None:
    tasks = package_tasks()
    with ProcessPoolExecutor(workers) as pool:
        variations = dict(zip([t["task_name"] for t in tasks],
                              pool.map(_variations, [t["task_name"] for t in tasks])))
        jobs = {}
        for t in tasks:
            test, dev = variations[t["task_name"]]
            jobs[t["task_name"]] = pool.submit(_gold_lengths, t["task_name"], test + dev)
        gold = {name: job.result() for name, job in jobs.items()}

    def length_class(t: dict) -> str:
        if t["task_id"] in STEP18:
            return STEP18[t["task_id"]]
        test = variations[t["task_name"]][0][:5]
        median = statistics.median(gold[t["task_name"]][v] for v in test)
        return "short" if median <= SHORT_GOLD_MAX else "long"

    def row(t: dict, variation: int) -> dict:
        return {"instance_id": instance_id(t["task_name"], variation), "task_id": t["task_id"],
                "task_name": t["task_name"], "topic": t["topic"], "task": t["task"],
                "variation": variation, "length": length_class(t),
                "gold_length": gold[t["task_name"]][variation]}

    step18 = [t for t in tasks if t["task_id"] in STEP18]
    manifests = {
        "step18": [row(t, v) for t in step18 for v in variations[t["task_name"]][0][:5]],
        "step18-v1": [row(t, variations[t["task_name"]][0][0]) for t in step18],
        "test": [row(t, v) for t in tasks for v in variations[t["task_name"]][0]],
        "dev": [row(t, v) for t in tasks for v in variations[t["task_name"]][1]],
    }
    for split, rows in manifests.items():
        print(f"{split}: {len(rows)} instances -> {write_manifest('scienceworld', split, rows)}")
    print(f"checksums -> {write_checksums()}")
    build_support(workers)


if __name__ == "__main__":
    if sys.argv[1:] == ["step18-train"]:
        build_support()
    else:
        build(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
