"""The site's summary: the leaderboard's tables (the grid per benchmark with each row's
cell, whose provenance and episodes the page links to), the paired comparisons, and the
further tables (methods x models, the plugins' own, per task, success within k steps),
each as `lifebench leaderboard` and `lifebench compare` print them."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Optional

from lifebench.api.records import EpisodeRecord
from lifebench.api.reporting import Table
from lifebench.leaderboard.compare import compared, comparison_rows
from lifebench.leaderboard.grid import Cell, benchmark_grids, cell_key
from lifebench.leaderboard.headline import headline_table
from lifebench.leaderboard.plugins import plugin_tables
from lifebench.leaderboard.site.episodes import MethodLabels
from lifebench.leaderboard.site.inputs import SiteInputs
from lifebench.leaderboard.tables import budget_tables, model_tables, per_task_tables


def table_json(table: Table, kind: str) -> dict[str, Any]:
    return {"title": table.title, "kind": kind, "headers": list(table.headers),
            "rows": [list(r) for r in table.rows], "notes": list(table.notes)}


def _cell_json(cell: Cell, records: list[EpisodeRecord], inputs: SiteInputs,
               runs: dict[tuple[int, str], list[int]], labels: MethodLabels) -> dict[str, Any]:
    origins = sorted({(inputs.directory(r), r.run_id) for r in records})
    return {
        "filter": {"benchmark": cell.benchmark + (f" [{cell.benchmark_config_hash[:6]}]"
                                                  if cell.benchmark_config_hash else ""),
                   "split": cell.split, "model": cell.model or "—", "budget": cell.budget,
                   "method": labels.of(cell.method, cell.method_config_hash, cell.context,
                                       cell.context_config_hash)},
        "method_config_hash": cell.method_config_hash,
        "context_config_hash": cell.context_config_hash,
        "benchmark_config_hash": cell.benchmark_config_hash,
        "harness_versions": sorted({r.harness_version for r in records if r.harness_version}),
        "runs": sorted({i for origin in origins for i in runs.get(origin, [])}),
        "run_ids": sorted({run_id for _, run_id in origins}),
        "episodes": len(records),
    }


def grid_json(inputs: SiteInputs, trials: Optional[str], labels: MethodLabels) -> dict[str, Any]:
    by_cell: dict[tuple, list[EpisodeRecord]] = defaultdict(list)
    for r in inputs.records:
        by_cell[cell_key(r)].append(r)
    runs: dict[tuple[int, str], list[int]] = defaultdict(list)
    for index, manifest in enumerate(inputs.manifests):
        runs[(manifest["directory"], str(manifest.get("run_id")))].append(index)
    tables, cells = [], []
    for table, table_cells in benchmark_grids(inputs.records, trials):
        entry = table_json(table, "grid")
        entry["cells"] = []
        for cell in table_cells:
            entry["cells"].append(len(cells))
            cells.append(_cell_json(cell, by_cell[cell.key], inputs, runs, labels))
        tables.append(entry)
    return {"tables": tables, "cells": cells}


def headline_json(inputs: SiteInputs, trials: Optional[str],
                  baseline: Optional[str] = None) -> Optional[dict[str, Any]]:
    """The grid table (methods x benchmarks) the leaderboard page opens with."""
    table = headline_table(inputs.records, inputs.manifests, trials, fmt="html", baseline=baseline)
    return table_json(table, "headline") if table is not None else None


def comparisons_json(records: list[EpisodeRecord], metrics: list[str], correction: str,
                     trials: Optional[str]) -> dict[str, Any]:
    found, notes = compared(records, metrics, correction=correction, trials=trials)
    headers, rows = comparison_rows(found)
    return {"headers": headers, "rows": rows, "metrics": metrics, "correction": correction,
            "notes": notes, "p_adjusted": [c.to_json()["p_adjusted"] for c in found]}


def further_tables(records: list[EpisodeRecord], trials: Optional[str]) -> list[dict[str, Any]]:
    results = [r for r in records if r.is_result]
    return ([table_json(t, "models") for t in model_tables(records, trials)]
            + [table_json(t, "plugin") for t in plugin_tables(results)]
            + [table_json(t, "per-task") for t in per_task_tables(records, trials)]
            + [table_json(t, "budget") for t in budget_tables(records, trials)])
