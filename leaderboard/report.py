"""The leaderboard table: one row per (benchmark, split, method, model, budget)."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean

from tabulate import tabulate

from harness.errors import UserError
from harness.records import EpisodeRecord
from harness.results import load_records
from leaderboard.crafter import achievement_table
from leaderboard.how2 import how2_table
from leaderboard.metrics import EXTRA_METRICS
from leaderboard.stats import clustered_interval, t_interval, wilson_interval

FORMATS = {"markdown": "github", "latex": "latex_booktabs", "html": "html", "csv": None}


@dataclass
class Cell:
    benchmark: str
    benchmark_config_hash: str  # "" for the benchmark's default config
    split: str
    method: str
    method_config_hash: str
    model: str | None
    budget: str  # the budget asked for: a number, or "default" (per-instance defaults)
    results: list[EpisodeRecord] = field(default_factory=list)
    failures: int = 0  # infrastructure failures never resolved by a retry


TRIAL_AGGREGATIONS = ("all", "max", "last", "first")


def budget_of(record: EpisodeRecord) -> str:
    """The budget asked for: a number, or "default" (each instance's default)."""
    return "default" if record.extra.get("budget") == "default" else str(record.budget_steps)


def aggregate_trials(results: list[EpisodeRecord], how: str) -> list[EpisodeRecord]:
    """One record per (instance, seed) from its trials: `max` keeps the best (score, then
    success, then the earliest trial), as STEP and CLIN report; `last` and `first` keep
    that trial; `all` keeps every episode."""
    if how == "all":
        return list(results)
    if how not in TRIAL_AGGREGATIONS:
        raise UserError(f"unknown trial aggregation {how!r}; choose from: "
                        f"{', '.join(TRIAL_AGGREGATIONS)}")
    groups: dict[tuple, list[EpisodeRecord]] = defaultdict(list)
    for r in results:
        groups[(r.instance_id, r.seed)].append(r)
    pick = {
        "max": lambda rs: max(rs, key=lambda r: (r.score, r.success, -r.trial)),
        "last": lambda rs: max(rs, key=lambda r: r.trial),
        "first": lambda rs: min(rs, key=lambda r: r.trial),
    }[how]
    return [pick(rs) for _, rs in sorted(groups.items())]


def benchmark_attribute(benchmark: str, name: str, default):
    """A class attribute of a benchmark plugin, or `default` for results of a benchmark
    whose plugin is not installed here."""
    from harness import registry

    try:
        return getattr(registry.benchmark_class(benchmark), name, default)
    except UserError:
        return default


def trial_aggregation_of(benchmark: str, override: str | None) -> str:
    return override or benchmark_attribute(benchmark, "trial_aggregation", "all")


def cells_of(records: list[EpisodeRecord]) -> list[Cell]:
    cells: dict[tuple, Cell] = {}
    for r in records:
        budget = budget_of(r)
        key = (r.benchmark, r.benchmark_config_hash, r.split, r.method, r.method_config_hash,
               r.model, budget)
        cell = cells.setdefault(key, Cell(*key))
        if r.is_result:
            cell.results.append(r)
        else:
            cell.failures += 1
    return sorted(cells.values(), key=lambda c: (c.benchmark, c.benchmark_config_hash, c.split, c.method,
                                                 c.model or "", c.budget,
                                                 c.method_config_hash))


def _extra_metric_names(benchmark: str) -> tuple[str, ...]:
    return tuple(benchmark_attribute(benchmark, "extra_metrics", ()))


def _fmt(value: float | str, digits: int = 3) -> str:
    if isinstance(value, str):
        return value
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else f"{value:.{digits}f}"


def leaderboard_rows(records: list[EpisodeRecord],
                     trials: str | None = None) -> tuple[list[str], list[list[str]]]:
    """Rows of the table. `trials` overrides each benchmark's trial aggregation."""
    cells = cells_of(records)
    for c in cells:
        c.results = aggregate_trials(c.results, trial_aggregation_of(c.benchmark, trials))
    ambiguous = defaultdict(set)
    for c in cells:
        ambiguous[(c.benchmark, c.split, c.method)].add(c.method_config_hash)
    extra_names: list[str] = []
    for c in cells:
        for name in _extra_metric_names(c.benchmark):
            if name in EXTRA_METRICS and name not in extra_names:
                extra_names.append(name)
    headers = ["benchmark", "split", "method", "model", "budget", "trials", "episodes", "success",
               "95% CI", "mean score", "score 95% CI", "clusters", "mean steps"]
    headers += [EXTRA_METRICS[n][0] for n in extra_names] + ["failed"]
    rows = []
    for c in cells:
        n = len(c.results)
        wins = sum(r.success for r in c.results)
        families = [r.extra.get("task_family") for r in c.results]
        clustered = n > 0 and all(f is not None for f in families) and len(set(families)) < n
        scores = [r.score for r in c.results]
        if clustered:
            # episodes of one task family are not independent: cluster-robust intervals
            low, high = clustered_interval([float(r.success) for r in c.results], families)
            low, high = max(0.0, low), min(1.0, high)
            score_low, score_high = clustered_interval(scores, families)
        else:
            low, high = wilson_interval(wins, n)
            score_low, score_high = t_interval(scores)
        method = c.method
        if len(ambiguous[(c.benchmark, c.split, c.method)]) > 1:
            method += f" [{c.method_config_hash[:6]}]"
        bench = f"{c.benchmark} [{c.benchmark_config_hash[:6]}]" if c.benchmark_config_hash \
            else c.benchmark
        row = [bench, c.split, method, c.model or "—", _budget_label(c),
               trial_aggregation_of(c.benchmark, trials), str(n),
               _fmt(wins / n if n else math.nan), f"[{_fmt(low)}, {_fmt(high)}]",
               _fmt(fmean(scores) if n else math.nan),
               f"[{_fmt(score_low)}, {_fmt(score_high)}]" if not math.isnan(score_low) else "—",
               str(len(set(families))) if clustered else "—",
               _fmt(fmean(r.steps for r in c.results) if n else math.nan, 2)]
        own = _extra_metric_names(c.benchmark)
        row += [_fmt(EXTRA_METRICS[name][1](c.results)) if name in own and n else "—"
                for name in extra_names]
        row.append(str(c.failures))
        rows.append(row)
    return headers, rows


def _budget_label(cell: Cell) -> str:
    """The budgets the cell's episodes had, e.g. "30", or "37/70" for ScienceWorld's
    per-task defaults."""
    budgets = sorted({r.budget_steps for r in cell.results}) or [cell.budget]
    return "/".join(map(str, budgets))


def render(headers: list[str], rows: list[list[str]], fmt: str) -> str:
    if fmt not in FORMATS:
        raise UserError(f"unknown format {fmt!r}; choose from: {', '.join(FORMATS)}")
    if fmt == "csv":
        import csv
        import io

        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(headers)
        writer.writerows(rows)
        return buf.getvalue().rstrip("\n")
    return tabulate(rows, headers=headers, tablefmt=FORMATS[fmt], disable_numparse=True)


def leaderboard_report(directories: list[str | Path], fmt: str = "markdown",
                       trials: str | None = None, plots: str | Path | None = None) -> str:
    """The grid, then Crafter, How², per-task and step-budget tables (CSV: the grid only,
    one table per file); with `plots`, the figures are written into that directory."""
    records = load_records(directories)
    if not records:
        raise UserError(f"no episode records in {', '.join(map(str, directories))}; "
                        f"run `lifebench run ... --out DIR` first")
    headers, rows = leaderboard_rows(records, trials)
    text = render(headers, rows, fmt)
    if plots is not None:
        from leaderboard.plots import write_plots

        written = write_plots(records, plots, trials)
    if fmt == "csv":  # one table per CSV file: the grid
        return text
    crafter = {" ".join([c.split, c.method, *([c.model] if c.model else []),
                         *([f"budget {c.budget}"] if c.budget != "default" else [])]): c.results
               for c in cells_of(records) if c.benchmark == "crafter" and c.results}
    if crafter:
        headers, rows = achievement_table(crafter)
        text += "\n\nCrafter: success rate per achievement (% of episodes)\n\n" + render(headers, rows, fmt)
    headers, rows = how2_table(records)
    if rows:
        text += ("\n\nHow² on Plancraft (Table 1 layout; low = val, high = val.repeated; "
                 "mean over seeds)\n\n" + render(headers, rows, fmt))
    from leaderboard.tables import budget_tables, per_task_tables

    for title, headers, rows in per_task_tables(records, trials) + budget_tables(records, trials):
        text += f"\n\n{title}\n\n" + render(headers, rows, fmt)
    if plots is not None:
        text += f"\n\n{len(written)} figures (PNG and SVG) in {plots}"
    return text
