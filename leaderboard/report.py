"""The leaderboard report: the grid table (methods x benchmarks), then one table per benchmark, methods x models where a split ran on
several models, then the plugins' own tables (e.g. Crafter's achievements, How²'s Table 1),
per-task tables and success within k steps; with a plots directory, the figures too. As
CSV: the grid only, one table per file."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from lifebench.api.errors import UserError
from lifebench.leaderboard.grid import benchmark_tables, grid
from lifebench.leaderboard.headline import check_baseline, headline_table
from lifebench.leaderboard.loading import load_nonempty, manifests_of
from lifebench.leaderboard.planned import plan_table
from lifebench.leaderboard.plugins import plugin_tables
from lifebench.leaderboard.render import render, render_titled
from lifebench.leaderboard.tables import budget_tables, model_tables, per_task_tables


def leaderboard_report(directories: list[str | Path], fmt: str = "markdown",
                       trials: Optional[str] = None, plots: str | Path | None = None,
                       baseline: Optional[str] = None) -> str:
    records = load_nonempty(directories)
    check_baseline(records, baseline)
    written = []
    if plots is not None:
        from lifebench.leaderboard.plots import write_plots

        try:
            written = write_plots(records, plots, trials)
        except OSError as exc:
            raise UserError(f"cannot write figures into {plots}: {exc.strerror or exc}; give "
                            f"another --plots (or --output) directory, or --no-plots") from None
    if fmt == "csv":
        headers, rows = grid(records, trials)
        return render(headers, rows, fmt)
    results = [r for r in records if r.is_result]
    headline = headline_table(records, manifests_of(directories), trials, fmt, baseline)
    tables = ([headline] if headline else []) + (benchmark_tables(records, trials) + model_tables(records, trials)
              + plugin_tables(results) + per_task_tables(records, trials) + budget_tables(records, trials))
    planned = plan_table(directories)
    tables += [planned] if planned else []
    text = "\n\n".join(render_titled(table, fmt) for table in tables)
    if plots is not None:
        text += f"\n\n{len(written)} figures (PNG and SVG) in {plots}"
    return text
