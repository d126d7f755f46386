"""The leaderboard's figures (matplotlib, PNG and SVG): success vs step budget, lifelong
learning curves (rolling success over the stream's episode index), per-task heatmaps, and,
where episodes were given instance contexts, the contexts' coverage of the instances'
locations and objects against exploration steps beside the arms' success (AutoContext's
Figure 5), and, per stream of a method that trains before testing, its training curves
(`extra.training_curves`: one small chart per series)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from statistics import fmean
from typing import Optional

from lifebench.api.records import EpisodeRecord
from lifebench.leaderboard.grouping import arm_labels, by_title, grouped
from lifebench.leaderboard.plugins import has_budget_curves, per_task_metric
from lifebench.leaderboard.tables import MAX_FAMILIES, family_matrix, success_under_budgets
from lifebench.leaderboard.training import Skipped, StreamCurves, say_skipped, stream_curves

FORMATS = ("png", "svg")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")


def _save(fig, directory: Path, name: str) -> list[Path]:
    paths = []
    for fmt in FORMATS:
        path = directory / f"{name}.{fmt}"
        # a fixed date keeps SVG files identical across re-runs
        fig.savefig(path, format=fmt, bbox_inches="tight", metadata={"Date": None} if fmt == "svg" else None)
        paths.append(path)
    return paths


def _plain(text: str) -> str:
    """Text from a results file as matplotlib shows it: a `$` would start mathtext, and an
    unbalanced one fail the figure."""
    return text.replace("$", r"\$")


def training_figure(plt, stream: StreamCurves, group_title: str):
    """One small chart per series (each on its own scale) over the iterations, the curves'
    title and the stream above, their note below."""
    curves = stream.curves
    count = len(curves.series)
    cols = min(count, 3)
    rows = math.ceil(count / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.5 * rows + 0.8), squeeze=False,
                             layout="constrained")
    xs = curves.iterations
    for ax, (name, values) in zip(axes.flat, curves.series):
        ax.plot(xs, [math.nan if v is None else v for v in values], linewidth=1.2,
                marker="o" if len(xs) <= 30 else None, markersize=3)  # a lone point draws no line
        ax.set_title(_plain(name), fontsize="small")
        ax.set_xlabel(_plain(curves.x_label), fontsize="small")
        ax.tick_params(labelsize="x-small")
    for ax in axes.flat[count:]:
        ax.set_visible(False)
    fig.suptitle(_plain(f"{curves.title}\n{group_title}: {stream.label}, seed {stream.seed}"),
                 fontsize="medium")
    if curves.note:
        fig.text(0.5, 0, _plain(curves.note), ha="center", va="top", fontsize="small", wrap=True)
    return fig


def rolling_success(records: list[EpisodeRecord], window: int) -> tuple[list[int], list[float]]:
    """Success averaged over seeds at each episode index, then over a trailing window."""
    by_index: dict[int, list[float]] = {}
    for r in records:
        by_index.setdefault(r.episode_index, []).append(float(r.success))
    indices = sorted(by_index)
    means = [fmean(by_index[i]) for i in indices]
    rolled = [fmean(means[max(0, k - window + 1): k + 1]) for k in range(len(means))]
    return indices, rolled


def coverage_at(curve: list, steps: int) -> float:
    """A context's coverage after `steps` exploration steps: its last report by then (0
    before the first)."""
    reached = [c for s, c in curve if s <= steps]
    return reached[-1] if reached else 0.0


def context_curves(records: list[EpisodeRecord]) -> dict[str, list[list]]:
    """Each context build of the records (by provider and config), its contexts' coverage
    curves, one per built context."""
    curves: dict[str, dict[str, list]] = {}
    for r in records:
        given = r.extra.get("context") or {}
        if r.context and given.get("key") and given.get("coverage_curve"):
            label = r.context + (f" [{r.context_config_hash[:6]}]" if r.context_config_hash else "")
            curves.setdefault(label, {})[given["key"]] = given["coverage_curve"]
    return {label: list(by_key.values()) for label, by_key in sorted(curves.items())}


def write_plots(records: list[EpisodeRecord], directory: str | Path,
                trials: Optional[str] = None) -> list[Path]:
    """Every figure for the records into `directory`; returns the files written."""
    plt = _pyplot()
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    skipped: list[Skipped] = []
    taken: set[str] = set()  # training-curve files' names: two labels may slug alike
    every_trial = grouped(records, "all")  # learning curves follow the stream, trial by trial
    for group, arms in by_title(grouped(records, trials)):
        labels = arm_labels(arms)
        ordered = sorted(arms, key=lambda a: labels[a])
        title = group.title
        slug = _slug(title)
        everything = [r for rs in arms.values() for r in rs]
        if not everything:
            continue

        if has_budget_curves(group.benchmark):
            top = max(r.budget_steps for r in everything)
            budgets = list(range(1, top + 1, max(1, top // 200)))
            fig, ax = plt.subplots(figsize=(6, 4))
            for arm in ordered:
                ax.plot(budgets, success_under_budgets(arms[arm], budgets), label=labels[arm])
            ax.set(xlabel="step budget k", ylabel="success within k steps", title=title,
                   ylim=(-0.02, 1.02))
            ax.legend(fontsize="small")
            written += _save(fig, out, f"success-vs-budget-{slug}")
            plt.close(fig)

        curves = context_curves(everything)
        if curves:
            top = max([s for cs in curves.values() for c in cs for s, _ in c]
                      + [r.budget_steps for r in everything])
            xs = list(range(0, top + 1, max(1, top // 200)))
            fig, ax = plt.subplots(figsize=(6, 4))
            for label, cs in curves.items():
                ax.plot(xs, [fmean(coverage_at(c, x) for c in cs) for x in xs], linestyle="--",
                        label=f"coverage: {label}")
            for arm in ordered:
                ax.plot(xs, success_under_budgets(arms[arm], xs), label=f"success: {labels[arm]}")
            ax.set(xlabel="environment steps", ylabel="coverage / success rate",
                   title=title, ylim=(-0.02, 1.02))
            ax.legend(fontsize="x-small")
            written += _save(fig, out, f"coverage-vs-steps-{slug}")
            plt.close(fig)

        # learning curves: over the stream, as the method's memory grows
        raw = every_trial[group]
        length = max(r.episode_index for rs in raw.values() for r in rs) + 1
        window = max(1, min(50, length // 10))
        fig, ax = plt.subplots(figsize=(6, 4))
        for arm in ordered:
            xs, ys = rolling_success(raw.get(arm, []), window)
            ax.plot(xs, ys, label=labels[arm])
        ax.set(xlabel="episode index in the stream", ylabel=f"success (rolling mean of {window})",
               title=title, ylim=(-0.02, 1.02))
        ax.legend(fontsize="small")
        written += _save(fig, out, f"learning-curve-{slug}")
        plt.close(fig)

        streams, bad = stream_curves(title, raw, {**arm_labels(raw), **labels})
        skipped += bad
        for stream in streams:
            base = f"training-curves-{slug}-{_slug(stream.label)}-seed{stream.seed}"
            name, n = base, 1
            while name in taken:
                n += 1
                name = f"{base}-{n}"
            taken.add(name)
            fig = training_figure(plt, stream, title)
            written += _save(fig, out, name)
            plt.close(fig)

        metric = per_task_metric(group.benchmark)
        families, names, values = family_matrix(arms, metric)
        if families and len(families) <= MAX_FAMILIES:
            fig, ax = plt.subplots(figsize=(1.2 + 1.1 * len(names), 0.8 + 0.28 * len(families)))
            vmax = 100.0 if metric == "score" else 1.0
            image = ax.imshow([[0.0 if math.isnan(v) else v for v in row] for row in values],
                              aspect="auto", cmap="viridis", vmin=0.0, vmax=vmax)
            ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize="small")
            ax.set_yticks(range(len(families)), families, fontsize="x-small")
            ax.set_title(f"{title}: {'mean score' if metric == 'score' else 'success'} per task",
                         fontsize="small")
            fig.colorbar(image, ax=ax)
            written += _save(fig, out, f"per-task-{slug}")
            plt.close(fig)
    say_skipped(skipped)
    return written
