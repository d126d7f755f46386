"""The grid table that opens the leaderboard and the results site: methods as rows,
benchmarks as columns, one number per cell.

- A cell is the benchmark's primary metric (success rate; a score where the benchmark says
  so, e.g. Crafter's achievements) with its 95% CI and n (instances, and the results behind
  them where they differ), trials scored as the method's protocol says.
- ▲/▼: significantly better/worse than the baseline method (the run's `baseline`, a value of
  its spec, or `lifebench leaderboard --baseline`), under the instance rule
  (`lifebench.api.comparison`: seeds averaged per instance, paired over instances; McNemar
  or the sign-flip permutation test), two-sided, Holm-corrected over the whole table.
- The best number of each column is bold.
- `–`: not run. `×n`: refused, reason n in the notes (from the runs' manifests).
- Mean rank: only for rows with a number in every column. An average over a partial row
  would not be comparable to a full one.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Optional

from lifebench.api.records import EpisodeRecord
from lifebench.api.reporting import Table
from lifebench.api.comparison import compare_arms
from lifebench.api.errors import UserError, unknown_name
from lifebench.api.stats import adjust
from lifebench.leaderboard.grid import Cell, cells_of, estimate, primary_sample, seeds_notes
from lifebench.leaderboard.grouping import method_label
from lifebench.leaderboard.plugins import primary_metric, sampled_families, score_range, success_note

TITLE = "The grid: methods × benchmarks"
ALPHA = 0.05


@dataclass(frozen=True)
class RowKey:
    """A row: a method (one config per column) with a context and a model."""

    method: str
    context: str = ""
    context_config_hash: str = ""
    model: Optional[str] = None
    method_version: str = "1"
    method_config_hash: str = ""  # set only where one column has several configs of it


@dataclass(frozen=True)
class ColumnKey:
    benchmark: str
    benchmark_config_hash: str
    split: str
    budget: str


@dataclass
class RunNotes:
    """What the runs' manifests add to their records: refused cells, the baseline method,
    and the cells run at smoke scale."""

    refused: list[dict[str, str]] = field(default_factory=list)
    baseline: Optional[str] = None
    smoke: set[tuple] = field(default_factory=set)  # (benchmark, split, method, config hash)
    slices: list[str] = field(default_factory=list)  # what a run of part of the splits played

    @classmethod
    def of(cls, manifests: list[dict[str, Any]]) -> "RunNotes":
        notes = cls()
        for run in manifests:
            spec = run.get("spec") if isinstance(run.get("spec"), dict) else {}
            if isinstance(spec.get("baseline"), str):
                notes.baseline = spec["baseline"]
            for refusal in run.get("refused") or []:
                if isinstance(refusal, dict) and all(isinstance(refusal.get(k), str)
                                                     for k in ("method", "benchmark", "reason")):
                    notes.refused.append(refusal)
            for cell in run.get("cells") or []:
                if isinstance(cell, dict) and cell.get("smoke") is True:
                    notes.smoke.add((cell.get("benchmark"), cell.get("split"), cell.get("method"),
                                     cell.get("method_config_hash")))
            played = _slice(spec)
            if played and played not in notes.slices:
                notes.slices.append(played)
        return notes


def _slice(spec: dict[str, Any]) -> str:
    """What a run of part of its splits played, in words ("" for whole splits)."""
    limit, instances = spec.get("limit"), spec.get("instances")
    if not (isinstance(limit, int) or isinstance(instances, list)):
        return ""
    methods = spec.get("methods") if isinstance(spec.get("methods"), list) else []
    parts = [f"the first {limit} instance{'s' if limit != 1 else ''} of each split"
             if isinstance(limit, int) else f"instances {', '.join(map(str, instances))}"]
    budgets = spec.get("budgets") if isinstance(spec.get("budgets"), list) else []
    if budgets:
        parts.append("budget " + ", ".join("the benchmark's default" if b == "default" else
                                          f"{b} steps" for b in budgets))
    llm = spec.get("llm") if isinstance(spec.get("llm"), dict) else {}
    if isinstance(llm.get("max_tokens"), int):
        parts.append(f"replies cut at {llm['max_tokens']} tokens")
    who = ", ".join(map(str, methods)) or "every method"
    model = f" on {spec['model']}" if isinstance(spec.get("model"), str) else ""
    return f"slice: {who}{model}: {'; '.join(parts)}"


def headline_table(records: list[EpisodeRecord], manifests: list[dict[str, Any]],
                   trials: Optional[str] = None, fmt: str = "markdown",
                   baseline: Optional[str] = None) -> Optional[Table]:
    """The grid table of `records`, or None when they hold no result. The best number of a
    column is bold in markdown and marked `*` in the other formats. `baseline`: the method
    marks are tested against (default: the runs' spec's `baseline`)."""
    notes = RunNotes.of(manifests)
    if baseline is not None:
        notes.baseline = baseline
    cells = [c for c in cells_of(records, trials) if c.results]
    if not cells:
        return None
    columns = sorted({_column(c) for c in cells}, key=lambda k: (k.benchmark, k.split, k.budget,
                                                                 k.benchmark_config_hash))
    by_row = _rows(cells)
    refused = _refusals(notes.refused, columns, by_row)
    models = {r.model for r in by_row if r.model}
    if len(models) == 1:  # one model: said once, in a note, not in every row
        by_row, refused = _without_model(by_row), {(_no_model(r), c): why for (r, c), why in refused.items()}
    rows = sorted(set(by_row) | {row for row, _ in refused}, key=lambda r: _label(r, by_row))
    marks = _marks(by_row, columns, notes.baseline)
    values = {(row, col): estimate(cell, primary_metric(col.benchmark))
              for row, per in by_row.items() for col, cell in per.items()}
    best = {col: max((v.mean for (r, c), v in values.items() if c == col and not math.isnan(v.mean)),
                     default=math.nan) for col in columns}
    ranks = _mean_ranks(rows, columns, values)
    reasons: dict[str, int] = {}
    body = []
    for row in rows:
        line = [_label(row, by_row)]
        for col in columns:
            cell = by_row.get(row, {}).get(col)
            if cell is None:
                reason = refused.get((row, col))
                line.append(f"×{reasons.setdefault(reason, len(reasons) + 1)}" if reason else "–")
                continue
            value = values[(row, col)]
            digits = _digits(col.benchmark)
            text = _number(value.mean, digits)
            if value.mean == best[col] and len(_cells_in(by_row, col)) > 1:
                text = f"**{text}**" if fmt == "markdown" else f"{text}*"
            interval = (f" [{_number(value.low, digits)}, {_number(value.high, digits)}]"
                        if not math.isnan(value.low) else "")
            smoke = "ˢ" if (col.benchmark, col.split, cell.method, cell.method_config_hash) \
                in notes.smoke else ""
            line.append(f"{text}{marks.get((row, col), '')}{smoke}{interval} n={value.n_label}")
        line.append(f"{ranks[row]:.2f}" if row in ranks else "–")
        body.append(line)
    headers = ["method"] + [_column_label(c, columns) for c in columns] + ["mean rank"]
    table_notes = _notes(notes, columns, marks, reasons, any("ˢ" in c for r in body for c in r),
                         "bold" if fmt == "markdown" else "*")
    table_notes[-1:-1] = seeds_notes((_label(row, by_row), cell) for row in rows
                                     for cell in by_row.get(row, {}).values())
    if len(models) == 1:
        table_notes.insert(0, f"model: {next(iter(models))} (every LLM method's)")
    return Table.of(TITLE, headers, body, notes=table_notes)


def check_baseline(records: list[EpisodeRecord], baseline: Optional[str]) -> None:
    """A baseline asked for by name must have results here: else one line that names the
    methods that do."""
    if baseline is None:
        return
    methods = {r.method for r in records if r.is_result}
    if baseline not in methods:
        error = unknown_name("baseline method", baseline, methods)
        raise UserError(f"{error} (--baseline takes a method with results in the directories given)")


def _no_model(row: RowKey) -> RowKey:
    return RowKey(row.method, row.context, row.context_config_hash, None, row.method_version,
                  row.method_config_hash)


def _without_model(by_row: dict[RowKey, dict[ColumnKey, Cell]]) -> dict[RowKey, dict[ColumnKey, Cell]]:
    return {_no_model(row): per for row, per in by_row.items()}


def _cells_in(by_row: dict[RowKey, dict[ColumnKey, Cell]], col: ColumnKey) -> list[Cell]:
    return [per[col] for per in by_row.values() if col in per]


def _column(cell: Cell) -> ColumnKey:
    return ColumnKey(cell.benchmark, cell.benchmark_config_hash, cell.split, cell.budget)


def _column_label(col: ColumnKey, columns: list[ColumnKey]) -> str:
    """The benchmark's name, with its split, budget and config where it has several."""
    same = [c for c in columns if c.benchmark == col.benchmark]
    text = col.benchmark
    if len({c.split for c in same}) > 1:
        text += f" {col.split}"
    if len({c.budget for c in same}) > 1:
        text += f" ({col.budget} steps)" if col.budget != "default" else " (default budget)"
    if len({c.benchmark_config_hash for c in same}) > 1 and col.benchmark_config_hash:
        text += f" [{col.benchmark_config_hash[:6]}]"
    metric = primary_metric(col.benchmark)
    return f"{text}: {'success' if metric == 'success' else 'score'}"


def _rows(cells: list[Cell]) -> dict[RowKey, dict[ColumnKey, Cell]]:
    """Cells by row and column. A method's configs may differ per benchmark (its protocol's
    arguments): one row. Several configs of it in one column (a sweep): a row per config."""
    per_column: dict[tuple, set[str]] = defaultdict(set)
    for c in cells:
        per_column[(c.method, c.context, c.context_config_hash, c.model, c.method_version,
                    _column(c))].add(c.method_config_hash)
    swept = {key[0] for key, hashes in per_column.items() if len(hashes) > 1}
    out: dict[RowKey, dict[ColumnKey, Cell]] = defaultdict(dict)
    for c in cells:
        row = RowKey(c.method, c.context, c.context_config_hash, c.model, c.method_version,
                     c.method_config_hash if c.method in swept else "")
        out[row][_column(c)] = c
    return out


def _label(row: RowKey, by_row: dict[RowKey, dict[ColumnKey, Cell]]) -> str:
    contexts = {r.context_config_hash for r in by_row if r.method == row.method
                and r.context == row.context}
    versions = {r.method_version for r in by_row if r.method == row.method}
    return method_label(row.method, row.method_config_hash, row.model,
                        bool(row.method_config_hash), row.context, row.context_config_hash,
                        len(contexts) > 1, row.method_version if len(versions) > 1 else "")


def _refusals(refused: list[dict[str, str]], columns: list[ColumnKey],
              by_row: dict[RowKey, dict[ColumnKey, Cell]]) -> dict[tuple[RowKey, ColumnKey], str]:
    """Refused cells placed in the table: a refusal of a method (with a context) on a
    benchmark split fills that column of its rows where no number is; a method with no row
    gets one (a run without a model refuses every LLM method: each still shows)."""
    out: dict[tuple[RowKey, ColumnKey], str] = {}
    for refusal in refused:
        method, context = refusal["method"], refusal.get("context") or ""
        rows = [r for r in by_row if r.method == method and r.context == context] \
            or [RowKey(method, context)]
        for col in columns:
            split = refusal.get("split")
            if col.benchmark != refusal["benchmark"] or (split and split != col.split):
                continue
            for row in rows:
                if col not in by_row.get(row, {}):
                    out.setdefault((row, col), refusal["reason"])
    return out


def _marks(by_row: dict[RowKey, dict[ColumnKey, Cell]], columns: list[ColumnKey],
           baseline: Optional[str]) -> dict[tuple[RowKey, ColumnKey], str]:
    """▲/▼ where a row differs significantly from the baseline method's row (of its context
    and model) in a column (`compare_arms`: paired over the instances both ran, else
    unpaired), Holm-corrected over the table."""
    if baseline is None:
        return {}
    tests = []
    for col in columns:
        metric = primary_metric(col.benchmark)
        for row, per in by_row.items():
            base_row = RowKey(baseline, row.context, row.context_config_hash, row.model,
                              _version(by_row, baseline))
            base = by_row.get(base_row, {}).get(col)
            cell = per.get(col)
            if row.method == baseline or base is None or cell is None:
                continue
            a, b = primary_sample(base), primary_sample(cell)
            c = compare_arms(a, b, metric == "success", families=sampled_families(
                col.benchmark, [*base.results, *cell.results]))
            if not math.isnan(c.result.p):
                tests.append(((row, col), c.result.p, c.mean_b - c.mean_a))
    adjusted = adjust([p for _, p, _ in tests], "holm")
    return {where: ("▲" if diff > 0 else "▼") for (where, _, diff), p in zip(tests, adjusted)
            if p < ALPHA and diff != 0}


def _version(by_row: dict[RowKey, dict[ColumnKey, Cell]], method: str) -> str:
    versions = sorted({r.method_version for r in by_row if r.method == method})
    return versions[-1] if versions else "1"


def _mean_ranks(rows: list[RowKey], columns: list[ColumnKey],
                values: dict[tuple[RowKey, ColumnKey], Any]) -> dict[RowKey, float]:
    """Mean rank (1 = best; ties share their mean rank) over the columns, among the rows
    with a number in every column only."""
    complete = [r for r in rows if all(not math.isnan(getattr(values.get((r, c)), "mean", math.nan))
                                       for c in columns)]
    if len(complete) < 2:
        return {}
    total: dict[RowKey, float] = defaultdict(float)
    for col in columns:
        ordered = sorted(complete, key=lambda r: -values[(r, col)].mean)
        position = 0
        while position < len(ordered):
            tied = [r for r in ordered if values[(r, col)].mean == values[(ordered[position], col)].mean]
            rank = position + (len(tied) + 1) / 2
            for r in tied:
                total[r] += rank
            position += len(tied)
    return {r: total[r] / len(columns) for r in complete}


def _digits(benchmark: str) -> int:
    """Rates and scores within [0, 1] to 3 decimals, wider scores (Crafter's 0-22,
    ScienceWorld's 0-100) to 1."""
    bounds = score_range(benchmark)
    return 3 if primary_metric(benchmark) == "success" or (bounds and bounds[1] <= 1) else 1


def _number(value: float, digits: int) -> str:
    return "—" if math.isnan(value) else f"{value:.{digits}f}"


def _notes(notes: RunNotes, columns: list[ColumnKey], marks: dict, reasons: dict[str, int],
           smoke: bool, best: str) -> list[str]:
    out = ["each cell: the benchmark's primary metric (success rate, or its score where "
           "its column says so) [95% CI] n=instances (and the results behind them where they "
           "differ), trials scored as each method's protocol says, the interval over "
           "instances (their seeds averaged first), clustered by task family only where a "
           f"benchmark samples its families; {best}: the best of the column"]
    if notes.baseline:
        out.append(f"▲/▼: significantly better/worse than {notes.baseline} (paired over the "
                   f"instances both ran, seeds averaged within each: McNemar's exact test or the "
                   f"sign-flip permutation test; two-sided, Holm-corrected over the table, alpha "
                   f"{ALPHA:g}); an n of 5 instances or fewer can never be marked (no exact "
                   f"two-sided test reaches {ALPHA:g} there)")
    else:
        out.append("no baseline method was given (`baseline` in the grid spec, or "
                   "`lifebench leaderboard --baseline METHOD`), so no cell is tested against one")
    out.append("mean rank: over every column, only for rows with a number in each (1 = best)")
    for benchmark in dict.fromkeys(c.benchmark for c in columns):
        note = success_note(benchmark)
        if note and primary_metric(benchmark) == "success":
            out.append(f"{benchmark}: {note}")
    if smoke:
        out.append("ˢ: smoke scale: the method prepared at the reduced scale it declares for "
                   "smoke runs (`make bench`), not its paper's; `make grid` runs the full protocol")
    out += notes.slices
    out += [f"×{n}: {reason}" for reason, n in reasons.items()]
    out.append("–: not run")
    return out
