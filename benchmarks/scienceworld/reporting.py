"""ScienceWorld's 18-task table in the layout of STEP's Table 1 (and CLIN's): one row per
task in the papers' order with its short/long type, one column per method arm, each
cell the mean over the task's instances and seeds of the best score over an instance's
trials (the papers' protocol: 5 trials, the best counts), then the short, long and
overall averages (unweighted over tasks) and the tasks completed (a task counts when the
best trial completed it on every instance and seed run)."""

from __future__ import annotations

from collections import defaultdict
from statistics import fmean
from typing import Optional, Sequence

from lifebench.api import EpisodeRecord, Table, aggregate_trials
from lifebench.benchmarks.scienceworld.tasks import PAPER_NAMES, STEP18

SPLITS = ("step18-authors", "step18-v1", "step18")

# STEP's Table 1 as published (CLIN*, STEP), per task id: cited beside the runs, never run
# here. Setting: gpt-4o-mini at temperature 0, 5 episodes per task with the best taken,
# budgets 37/70, the authors' code's default variation (index 1).
PAPER_TABLE1 = {
    "2-1": (9.0, 63.0), "2-2": (83.3, 62.7), "4-1": (100.0, 100.0), "4-2": (69.3, 100.0),
    "6-1": (55.3, 61.0), "6-2": (100.0, 100.0), "7-1": (100.0, 100.0), "7-2": (100.0, 100.0),
    "8-2": (28.0, 32.2), "1-1": (4.0, 21.5), "1-3": (32.3, 50.9), "5-1": (30.3, 71.5),
    "5-2": (19.3, 14.0), "8-1": (59.3, 46.5), "9-1": (73.3, 80.0), "9-2": (56.7, 73.3),
    "10-1": (69.8, 84.2), "10-2": (39.0, 51.8),
}
PAPER_AVERAGES = {"avg S": (71.7, 79.9), "avg L": (42.7, 54.9), "avg All": (57.2, 67.4)}
PAPER_COLUMNS = ("CLIN (paper)", "STEP (paper)")
PAPER_NOTE = ("CLIN (paper) and STEP (paper): STEP's Table 1 and its 12 of 18 tasks completed "
              "(Section 1), cited, not run: gpt-4o-mini, 5 episodes per task with the best "
              "taken, budgets 37/70, the authors' default variation (index 1, split "
              "step18-authors); the paper does not give CLIN's count")


def arm_label(record: EpisodeRecord, labels_by_method: dict[str, set[str]]) -> str:
    """The method, its variant where it says one (STEP's `w/o planner`), and the config
    hash when a method ran in several other configs."""
    label = record.method
    if record.extra.get("step_planner") is False:
        label += " w/o planner"
    if len(labels_by_method[label]) > 1:
        label += f" [{record.method_config_hash[:6]}]"
    return label if record.model is None else f"{label} @{record.model}"


def best_of_trials(records: Sequence[EpisodeRecord]) -> list[EpisodeRecord]:
    """Per arm (method, config, model), instance and seed, the best trial (the papers' rule)."""
    arms: dict[tuple, list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        arms[(r.method, r.method_config_hash, r.model)].append(r)
    return [best for rs in arms.values() for best in aggregate_trials(rs, "max")]


def _task_id(record: EpisodeRecord) -> Optional[str]:
    task_id = (record.task_family or "").split(" ")[0]
    return task_id if task_id in STEP18 else None


def step_table1(records: Sequence[EpisodeRecord]) -> list[Table]:
    tables = []
    for split in SPLITS:
        chosen = [r for r in records if r.split == split and _task_id(r)]
        if not chosen:
            continue
        configs: dict[str, set[str]] = defaultdict(set)
        for r in chosen:
            base = r.method + (" w/o planner" if r.extra.get("step_planner") is False else "")
            configs[base].add(r.method_config_hash)
        cells: dict[str, dict[str, list[EpisodeRecord]]] = defaultdict(lambda: defaultdict(list))
        for r in best_of_trials(chosen):
            cells[arm_label(r, configs)][_task_id(r)].append(r)
        arms = sorted(cells)
        rows, means = [], {arm: {} for arm in arms}
        for task_id, length in STEP18.items():
            row = [f"{PAPER_NAMES[task_id]} ({task_id})", "S" if length == "short" else "L"]
            for arm in arms:
                got = cells[arm].get(task_id)
                if got:
                    means[arm][task_id] = (fmean(r.score for r in got), all(r.success for r in got),
                                           any(r.success for r in got))
                row.append(f"{means[arm][task_id][0]:.1f}" if got else "—")
            rows.append(row + [f"{paper:.1f}" for paper in PAPER_TABLE1[task_id]])
        for name, length in (("avg S", "short"), ("avg L", "long"), ("avg All", None)):
            row = [name, ""]
            for arm in arms:
                scores = [score for task_id, (score, *_) in means[arm].items()
                          if length is None or STEP18[task_id] == length]
                row.append(f"{fmean(scores):.1f}" if scores else "—")
            rows.append(row + [f"{paper:.1f}" for paper in PAPER_AVERAGES[name]])
        for name, which, paper in (("tasks completed in every run", 1, "—"),
                                   ("tasks completed in any run", 2, "12 of 18")):
            rows.append([name, ""] + [
                f"{sum(done[which - 1] for _, *done in means[arm].values())} of {len(means[arm])}"
                for arm in arms] + ["—", paper])
        notes = [f"best of each instance's trials ({_trial_counts(chosen)}), then the mean over "
                 f"the task's instances and seeds; averages are unweighted over tasks",
                 "a task is completed in every run when its best trial succeeded on every "
                 "instance and seed run, in any run when on at least one (the paper's count, "
                 "where a run is a seed)",
                 PAPER_NOTE]
        tables.append(Table.of(f"scienceworld {split}: the 18-task table (STEP Table 1 layout)",
                               ["task", "type", *arms, *PAPER_COLUMNS], rows, notes))
    return tables


def _trial_counts(records: Sequence[EpisodeRecord]) -> str:
    counts = defaultdict(int)
    for r in records:
        counts[(r.method, r.method_config_hash, r.model, r.instance_id, r.seed)] += 1
    values = sorted(set(counts.values()))
    return f"{values[0]} trials" if len(values) == 1 else f"{values[0]}-{values[-1]} trials"
