"""The figures' numbers, for the page to draw: success within k steps (the leaderboard's
success-vs-budget figure), learning curves (rolling success over the stream), per-task
heatmaps, success against tokens and cost per episode with each group's Pareto front, and
the training curves of the streams of methods that train before testing. All but the
Pareto fronts are computed by the functions the PNG figures use."""

from __future__ import annotations

import math
from statistics import fmean
from typing import Any, Optional

from lifebench.api.records import EpisodeRecord
from lifebench.leaderboard.grouping import Arm, arm_labels, by_title, grouped
from lifebench.leaderboard.plots import rolling_success
from lifebench.leaderboard.plugins import has_budget_curves, per_task_metric
from lifebench.leaderboard.tables import MAX_FAMILIES, family_matrix, success_under_budgets
from lifebench.leaderboard.training import Skipped, say_skipped, stream_curves

MAX_POINTS = 200  # per curve: the figures' resolution


def _finite(values: list[float]) -> list[Optional[float]]:
    return [v if math.isfinite(v) else None for v in values]


def _thinned(xs: list, ys: list) -> tuple[list, list]:
    """At most about MAX_POINTS * 5 points of a long curve, its last one kept (where it
    ended)."""
    step = max(1, len(xs) // (MAX_POINTS * 5))
    keep = list(range(0, len(xs), step))
    if keep and keep[-1] != len(xs) - 1:
        keep.append(len(xs) - 1)
    return [xs[i] for i in keep], [ys[i] for i in keep]


def budget_curves(arms: dict[Arm, list[EpisodeRecord]], labels: dict[Arm, str]) -> Optional[dict]:
    everything = [r for rs in arms.values() for r in rs]
    top = max(r.budget_steps for r in everything)
    budgets = list(range(1, top + 1, max(1, top // MAX_POINTS)))
    return {"xlabel": "step budget k", "ylabel": "success within k steps",
            "series": [{"label": labels[a], "x": budgets,
                        "y": _finite(success_under_budgets(arms[a], budgets))}
                       for a in sorted(arms, key=lambda a: labels[a])]}


def learning_curves(raw: dict[Arm, list[EpisodeRecord]], labels: dict[Arm, str]) -> dict:
    """Rolling success over the episode index, every trial (as the PNG figure)."""
    length = max(r.episode_index for rs in raw.values() for r in rs) + 1
    window = max(1, min(50, length // 10))
    series = []
    for arm in sorted(raw, key=lambda a: labels.get(a, a.method)):
        xs, ys = _thinned(*rolling_success(raw[arm], window))
        series.append({"label": labels.get(arm) or arm.label(False), "x": xs, "y": ys})
    return {"xlabel": "episode index in the stream",
            "ylabel": f"success (rolling mean of {window})", "series": series}


def heatmap(arms: dict[Arm, list[EpisodeRecord]], metric: str) -> Optional[dict]:
    families, names, values = family_matrix(arms, metric)
    if not families or len(families) > MAX_FAMILIES:
        return None
    return {"rows": families, "columns": names, "values": [_finite(row) for row in values],
            "vmax": 100.0 if metric == "score" else 1.0,
            "label": "mean score" if metric == "score" else "success"}


def pareto_front(points: list[tuple[float, float]]) -> list[bool]:
    """Which points no other point dominates (no more costly, at least as successful,
    and better in one of the two)."""
    return [not any(x2 <= x and y2 >= y and (x2 < x or y2 > y) for x2, y2 in points)
            for x, y in points]


def cost_points(arms: dict[Arm, list[EpisodeRecord]], labels: dict[Arm, str]) -> dict:
    """Per arm: success rate, mean tokens (in + out) and mean cost (USD, where priced) per
    episode; each axis with its Pareto front."""
    points = []
    for arm in sorted(arms, key=lambda a: labels[a]):
        rs = arms[arm]
        costs = [r.cost_usd for r in rs if r.cost_usd is not None]
        points.append({"label": labels[arm], "success": fmean(float(r.success) for r in rs),
                       "tokens": fmean(r.tokens_in + r.tokens_out for r in rs),
                       "cost": fmean(costs) if len(costs) == len(rs) else None,
                       "episodes": len(rs)})
    for axis in ("tokens", "cost"):
        priced = [p for p in points if p[axis] is not None]
        for p, front in zip(priced, pareto_front([(p[axis], p["success"]) for p in priced])):
            p[f"front_{axis}"] = front
    return {"points": points}


def training_curves(title: str, raw: dict[Arm, list[EpisodeRecord]], labels: dict[Arm, str]
                    ) -> tuple[list[dict], list[Skipped]]:
    """Per stream with valid `extra.training_curves`: its arm, seed, the curves' title, x
    label and note, and each series over the iterations."""
    streams, skipped = stream_curves(title, raw, labels)
    out = []
    for s in streams:
        series = []
        for name, values in s.curves.series:
            xs, ys = _thinned(s.curves.iterations, list(values))
            series.append({"label": name, "x": xs, "y": ys})
        out.append({"label": s.label, "seed": s.seed, "title": s.curves.title,
                    "xlabel": s.curves.x_label, "note": s.curves.note, "series": series})
    return out, skipped


def figures(records: list[EpisodeRecord], trials: Optional[str] = None) -> list[dict[str, Any]]:
    """One entry per group (benchmark split and budget) with the series of its figures."""
    out = []
    skipped: list[Skipped] = []
    every_trial = grouped(records, "all")
    for group, arms in by_title(grouped(records, trials)):
        if not any(arms.values()):
            continue
        labels = arm_labels(arms)
        raw = every_trial[group]
        every_label = {**arm_labels(raw), **labels}
        entry: dict[str, Any] = {"title": group.title, "benchmark": group.benchmark,
                                 "split": group.split, "budget": group.budget,
                                 "learning": learning_curves(raw, every_label),
                                 "cost": cost_points(arms, labels)}
        if has_budget_curves(group.benchmark):
            entry["budget_curves"] = budget_curves(arms, labels)
        entry["heatmap"] = heatmap(arms, per_task_metric(group.benchmark))
        entry["training"], bad = training_curves(group.title, raw, every_label)
        entry["training_skipped"] = [str(b) for b in bad]  # the page says them too
        skipped += bad
        out.append(entry)
    say_skipped(skipped)
    return out
