"""STEP's Table 2 from its records: what removing the Planner costs. Per benchmark split
and model, for the instances both STEP and STEP w/o Planner (`planner=false`) ran: the
best trial of each instance and seed (the papers' protocol), then STEP minus the ablation
in mean score and in success rate (positive: the ablation is worse, the paper's "↓").
Rows per step budget where the instances had two (ScienceWorld's short tasks, 37 steps,
and long ones, 70: the paper's S and L), and All."""

from __future__ import annotations

from collections import defaultdict
from statistics import fmean
from typing import Sequence

from lifebench.api import EpisodeRecord, Table, aggregate_trials

BUDGET_NAMES = {37: "S", 70: "L"}  # the CLIN/STEP protocol's short and long budgets
# STEP's Table 2 as published (gpt-4o-mini, ScienceWorld, 5 trials, the best taken): cited
PAPER_TABLE2 = {"S": ("10.9", "11.1"), "L": ("11.0", "22.2"), "All": ("10.9", "16.7")}


def _best(records: Sequence[EpisodeRecord]) -> dict[tuple, EpisodeRecord]:
    """Each instance and seed's best trial (the papers' rule), by (instance, seed)."""
    return {(r.instance_id, r.seed): r for r in aggregate_trials(records, "max")}


def planner_ablation(records: Sequence[EpisodeRecord]) -> list[Table]:
    groups: dict[tuple, dict[bool, list[EpisodeRecord]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        planner = r.extra.get("step_planner")
        if isinstance(planner, bool):
            groups[(r.benchmark, r.split, r.model)][planner].append(r)
    tables = []
    for (benchmark, split, model), arms in sorted(groups.items(), key=lambda kv: str(kv[0])):
        full, ablated = _best(arms[True]), _best(arms[False])
        shared = sorted(set(full) & set(ablated))
        if not shared:
            continue
        budgets = sorted({full[k].budget_steps for k in shared})
        parts = [(f"{BUDGET_NAMES.get(b, f'budget {b}')}", [k for k in shared if full[k].budget_steps == b])
                 for b in budgets] if len(budgets) > 1 else []
        rows = []
        for name, keys in parts + [("All", shared)]:
            score = fmean(full[k].score - ablated[k].score for k in keys)
            success = 100 * fmean(full[k].success - ablated[k].success for k in keys)
            paper = PAPER_TABLE2.get(name, ("", "")) if benchmark == "scienceworld" else ("", "")
            rows.append([name, f"{score:.1f}", f"{success:.1f}", len(keys), *paper])
        title = f"STEP w/o Planner, {benchmark} {split}" + (f" @{model}" if model else "") + \
            ": reduction against STEP (Table 2 layout)"
        tables.append(Table.of(title, ["tasks", "Δ avg score (↓)", "% succ. rate (↓)", "instances",
                                       "paper Δ avg score", "paper % succ. rate"],
                               rows, ["per instance and seed, the best of its trials; STEP minus "
                                      "the ablation, so a positive value is what the Planner adds",
                                      "paper: STEP's Table 2 (gpt-4o-mini, 5 trials, the best "
                                      "taken; ScienceWorld only), cited, not run"]))
    return tables
