"""STEP's Table 2 from its records: what removing the Planner costs. Per benchmark split
and model, for the instances both STEP and STEP w/o Planner (`planner=false`) ran: the
best trial of each instance and seed (the papers' protocol), each instance's seeds
averaged (the instance is the unit, as in every comparison of the leaderboard), then STEP
minus the ablation in mean score and in success rate (positive: the ablation is worse, the
paper's "↓"), with our paired test of each difference beside it. Rows per step budget
where the instances had two (ScienceWorld's short tasks, 37 steps, and long ones, 70: the
paper's S and L), and All."""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence

from lifebench.api import EpisodeRecord, Table, aggregate_trials
from lifebench.api.comparison import (InstanceSample, agreement_note, compare_arms, n_label,
                                      records_sample)

BUDGET_NAMES = {37: "S", 70: "L"}  # the CLIN/STEP protocol's short and long budgets
# STEP's Table 2 as published (gpt-4o-mini, ScienceWorld, 5 trials, the best taken): cited
PAPER_TABLE2 = {"S": ("10.9", "11.1"), "L": ("11.0", "22.2"), "All": ("10.9", "16.7")}


def _best(records: Sequence[EpisodeRecord]) -> list[EpisodeRecord]:
    """Each instance and seed's best trial (the papers' rule)."""
    return aggregate_trials(records, "max")


def _p(value: float) -> str:
    return "—" if value != value else f"{value:.3g}"


def planner_ablation(records: Sequence[EpisodeRecord]) -> list[Table]:
    groups: dict[tuple, dict[bool, list[EpisodeRecord]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        planner = r.extra.get("step_planner")
        if isinstance(planner, bool):  # configurations apart: the rest of each one's config
            setting = str(r.extra.get("step_setting") or "")
            groups[(r.benchmark, r.split, r.model, setting)][planner].append(r)
    several = len({key[3] for key in groups}) > 1
    tables = []
    for (benchmark, split, model, setting), arms in sorted(groups.items(), key=lambda kv: str(kv[0])):
        full, ablated = _best(arms[True]), _best(arms[False])
        shared = {r.instance_id for r in full} & {r.instance_id for r in ablated}
        if not shared:
            continue
        budget = {r.instance_id: r.budget_steps for r in full}
        budgets = sorted({budget[i] for i in shared})
        parts = [(f"{BUDGET_NAMES.get(b, f'budget {b}')}", {i for i in shared if budget[i] == b})
                 for b in budgets] if len(budgets) > 1 else []
        rows = []
        for name, ids in parts + [("All", shared)]:
            cells = []
            for metric in ("score", "success"):
                mine = _sample([r for r in full if r.instance_id in ids], metric)
                theirs = _sample([r for r in ablated if r.instance_id in ids], metric)
                c = compare_arms(mine, theirs, binary=metric == "success")
                scale = 100 if metric == "success" else 1
                cells += [f"{scale * (c.mean_a - c.mean_b):.1f}", _p(c.result.p)]
            paper = PAPER_TABLE2.get(name, ("", "")) if benchmark == "scienceworld" else ("", "")
            results = sum(1 for r in full if r.instance_id in ids)
            rows.append([name, *cells, n_label(len(ids), results), *paper])
        title = f"STEP w/o Planner, {benchmark} {split}" + (f" @{model}" if model else "") + \
            (f" [{setting or 'default config'}]" if several else "") + \
            ": reduction against STEP (Table 2 layout)"
        tables.append(Table.of(title, ["tasks", "Δ avg score (↓)", "p (score)", "% succ. rate (↓)",
                                       "p (success)",
                                       "instances", "paper Δ avg score", "paper % succ. rate"],
                               rows, ["per instance and seed, the best of its trials; each "
                                      "instance's seeds averaged; STEP minus the ablation over "
                                      "the instances both ran, so a positive value is what the "
                                      "Planner adds",
                                      "p: ours, two-sided, paired over instances (the "
                                      "leaderboard's rule: McNemar's exact test where each "
                                      "instance has one outcome, else the sign-flip permutation "
                                      "test), uncorrected; the paper gives no test",
                                      "instances: with the results (STEP's scored trials, one "
                                      "per instance and seed) behind them where they differ; "
                                      "the paper's rows count tasks (its 11.1, 22.2 and 16.7 "
                                      "are 1/9, 2/9 and 3/18): on ScienceWorld's step18-authors "
                                      "and step18-v1 (one variation per task) the instances",
                                      *_tasks(full, shared),
                                      "paper: STEP's Table 2 (gpt-4o-mini, 5 trials, the best "
                                      "taken; ScienceWorld only), cited, not run",
                                      *_agreement(full, ablated)]))
    return tables


def _tasks(records: list[EpisodeRecord], ids: set[str]) -> list[str]:
    """A note where the instances are not one per task (step18: 5 variations per task)."""
    tasks = {r.task_family or r.instance_id for r in records if r.instance_id in ids}
    plural = "" if len(tasks) == 1 else "s"
    return [] if len(tasks) == len(ids) else [f"All: {len(ids)} instances of {len(tasks)} task{plural}"]


def _agreement(full: list[EpisodeRecord], ablated: list[EpisodeRecord]) -> list[str]:
    note = agreement_note([("STEP", _sample(full, "score")),
                           ("STEP w/o Planner", _sample(ablated, "score"))])
    return [note] if note else []


def _sample(records: list[EpisodeRecord], metric: str) -> InstanceSample:
    return records_sample(records, lambda r: float(getattr(r, metric)))
