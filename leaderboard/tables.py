"""The leaderboard's further tables: methods x models (the papers' method-by-backbone
layout), per task family (ScienceWorld's 18-task layout) and success under step budgets
(from one run's step of success)."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from statistics import fmean
from typing import Optional

from lifebench.api.records import EpisodeRecord
from lifebench.api.reporting import Table
from lifebench.leaderboard.grouping import Arm, arm_labels, by_title, grouped
from lifebench.leaderboard.plugins import has_budget_curves, per_task_metric

BUDGET_FRACTIONS = (0.1, 0.2, 0.3, 0.5, 0.75, 1.0)
# Per-task tables and heatmaps are for benchmarks with a few task families (ScienceWorld's
# 18 tasks, ALFWorld's 6 types); Plancraft's hundreds of targets only cluster intervals.
MAX_FAMILIES = 40


def natural_key(text: str) -> list:
    """'10-2 x' after '9-1 y': numbers compare as numbers."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def family_matrix(group_arms: dict[Arm, list[EpisodeRecord]], metric: str
                  ) -> tuple[list[str], list[str], list[list[float]]]:
    """(families, arm labels, values[family][arm]) of a group's records that name a family."""
    labels = arm_labels(group_arms)
    arms = sorted(group_arms, key=lambda a: labels[a])
    cells: dict[tuple[str, Arm], list[float]] = defaultdict(list)
    for arm in arms:
        for r in group_arms[arm]:
            family = r.task_family
            if family is not None:
                cells[(str(family), arm)].append(float(getattr(r, metric)))
    families = sorted({f for f, _ in cells}, key=natural_key)
    values = [[fmean(cells[(f, a)]) if cells[(f, a)] else math.nan for a in arms] for f in families]
    return families, [labels[a] for a in arms], values


def per_task_tables(records: list[EpisodeRecord], trials: Optional[str] = None) -> list[Table]:
    """A table per group whose records carry task families (at most MAX_FAMILIES)."""
    out = []
    for group, arms in by_title(grouped(records, trials)):
        metric = per_task_metric(group.benchmark)
        families, labels, values = family_matrix(arms, metric)
        if not families or len(families) > MAX_FAMILIES:
            continue
        shown = _metric_name(metric)
        rows = [[family] + [_fmt(v, metric) for v in row] for family, row in zip(families, values)]
        means = [fmean(v for v in column if not math.isnan(v)) if any(not math.isnan(v) for v in column)
                 else math.nan for column in zip(*values)]
        rows.append(["mean over tasks"] + [_fmt(v, metric) for v in means])
        out.append(Table.of(f"{group.title}: {shown} per task", ["task"] + labels, rows))
    return out


def model_tables(records: list[EpisodeRecord], trials: Optional[str] = None) -> list[Table]:
    """Per group run on two models or more: a row per method (config), a column per model,
    each cell the group's per-task metric over the arm's results (the benchmark's table has
    their counts and intervals; with one model it is that table's column)."""
    out = []
    for group, arms in by_title(grouped(records, trials)):
        models = sorted({arm.model or "—" for arm in arms})
        if len({arm.model for arm in arms if arm.model}) < 2:
            continue
        configs = defaultdict(set)
        for arm in arms:
            configs[arm.method].add(arm.method_config_hash)
        metric = per_task_metric(group.benchmark)
        cells: dict[str, dict[str, float]] = defaultdict(dict)
        for arm, rs in arms.items():
            # the method's label without its model: the model is the column
            method = Arm(arm.method, arm.method_config_hash, None, arm.context,
                         arm.context_config_hash, arm.method_version).label(
                len(configs[arm.method]) > 1,
                version_ambiguous=len({a.method_version for a in arms if a.method == arm.method}) > 1)
            cells[method][arm.model or "—"] = fmean(float(getattr(r, metric)) for r in rs)
        rows = [[method] + [_fmt(cells[method].get(m, math.nan), metric) for m in models]
                for method in sorted(cells)]
        out.append(Table.of(f"{group.title}: {_metric_name(metric)} by method and model",
                            ["method"] + models, rows))
    return out


def _metric_name(metric: str) -> str:
    return "mean score" if metric == "score" else "success rate"


def _fmt(value: float, metric: str) -> str:
    if math.isnan(value):
        return "—"
    return f"{value:.1f}" if metric == "score" else f"{value:.3f}"


def budget_points(max_budget: int) -> list[int]:
    return sorted({max(1, round(max_budget * f)) for f in BUDGET_FRACTIONS})


def success_under_budgets(records: list[EpisodeRecord], budgets: list[int]) -> list[float]:
    """Success rate at each budget k: an episode that succeeded at step s counts for every
    k >= s. k goes up to the largest budget of the group's episodes (ScienceWorld's long
    tasks' 70); an episode's own budget caps it (a short task's 37: it ended there)."""
    n = len(records)
    steps = [(r.success_step or r.steps) if r.success else None for r in records]
    return [sum(1 for s in steps if s is not None and s <= k) / n if n else math.nan for k in budgets]


def budget_tables(records: list[EpisodeRecord], trials: Optional[str] = None) -> list[Table]:
    """Success within k steps for several k, per group whose benchmark has budget curves."""
    out = []
    for group, arms in by_title(grouped(records, trials)):
        everything = [r for rs in arms.values() for r in rs]
        if not everything or not has_budget_curves(group.benchmark):
            continue
        budgets = budget_points(max(r.budget_steps for r in everything))
        labels = arm_labels(arms)
        rows = [[labels[arm]] + [f"{v:.3f}" for v in success_under_budgets(arms[arm], budgets)]
                for arm in sorted(arms, key=lambda a: labels[a])]
        out.append(Table.of(f"{group.title}: success within k steps",
                            ["method"] + [f"k={k}" for k in budgets], rows))
    return out
