"""The leaderboard's grid: one row per cell (benchmark split, method config, model,
budget) with success and mean score, their intervals, steps, the plugins' own metrics and
the infrastructure failures. One table per benchmark, with that benchmark's columns only;
as CSV, one table of every cell."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from statistics import fmean
from typing import Iterable, Optional

from lifebench.api.comparison import (InstanceEstimate, InstanceSample, agreement_note,
                                      records_sample, sample_estimate)
from lifebench.api.records import EpisodeRecord, Status
from lifebench.api.reporting import Metric, Table, aggregate_trials
from lifebench.leaderboard.grouping import Arm, arm_labels, budget_label, method_label
from lifebench.leaderboard.plugins import (families_sampled, metric_applies, metrics,
                                           primary_metric, score_range, trial_aggregation)
from lifebench.llm.faults import faults_note
from lifebench.llm.truncation import CutCalls

# n: instances, with the results behind them where they differ ("134 (402 results)")
COLUMNS = ("split", "method", "model", "budget", "trials", "n", "success", "95% CI",
           "mean score", "score 95% CI", "clusters", "mean steps")


@dataclass
class Cell:
    benchmark: str
    benchmark_config_hash: str  # "" for the benchmark's default config
    split: str
    method: str
    method_config_hash: str
    model: Optional[str]
    budget: str  # the budget asked for: a number, or "default" (per-instance defaults)
    context: str = ""  # the instance context provider ("" for none)
    context_config_hash: str = ""
    method_version: str = "1"
    results: list[EpisodeRecord] = field(default_factory=list)
    failures: int = 0  # infrastructure failures never resolved by a retry
    _samples: dict[str, InstanceSample] = field(default_factory=dict, repr=False, compare=False)

    def sample(self, metric: str) -> InstanceSample:
        """The results as per-instance values of `metric` (a record field), made once."""
        if metric not in self._samples:
            self._samples[metric] = records_sample(self.results,
                                                   lambda r: float(getattr(r, metric)))
        return self._samples[metric]

    @property
    def key(self) -> tuple:
        """What its records share (`cell_key`)."""
        return (self.benchmark, self.benchmark_config_hash, self.split, self.method,
                self.method_config_hash, self.model, self.budget, self.context,
                self.context_config_hash, self.method_version)


def cell_key(record: EpisodeRecord) -> tuple:
    """The key of the cell a record belongs to (`Cell.key`)."""
    return (record.benchmark, record.benchmark_config_hash, record.split, record.method,
            record.method_config_hash, record.model, budget_label(record), record.context,
            record.context_config_hash, record.method_version)


def cells_of(records: list[EpisodeRecord], trials: Optional[str] = None) -> list[Cell]:
    """The cells of `records`, their results' trials aggregated as each benchmark's
    protocol says (or as `trials` overrides)."""
    cells: dict[tuple, Cell] = {}
    for r in records:
        key = cell_key(r)
        cell = cells.setdefault(key, Cell(*key))
        if r.is_result:
            cell.results.append(r)
        else:
            cell.failures += 1
    for cell in cells.values():
        cell.results = aggregate_trials(cell.results, trial_aggregation(cell.benchmark, trials,
                                                                        cell.method))
    return sorted(cells.values(), key=lambda c: (c.benchmark, c.benchmark_config_hash, c.split,
                                                 c.method, c.context, c.model or "", c.budget,
                                                 c.method_version, c.method_config_hash,
                                                 c.context_config_hash))


def _fmt(value: float | str, digits: int = 3) -> str:
    if isinstance(value, str):
        return value
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else f"{value:.{digits}f}"


def _budget_shown(cell: Cell) -> str:
    """The budgets the cell's episodes had, e.g. "30", or "37/70" for ScienceWorld's
    per-task defaults."""
    budgets = sorted({r.budget_steps for r in cell.results}) or [cell.budget]
    return "/".join(map(str, budgets))


Estimate = InstanceEstimate  # a cell's number: the instance is the unit


def estimate(cell: Cell, metric: str) -> Estimate:
    """Success rate or mean score of the cell with its 95% interval (`instance_estimate`):
    bounded on [0, 1] for success and on the score's range where the benchmark declares
    one, cluster-robust over task families where the benchmark samples them and they
    carry information."""
    bounds = (0.0, 1.0) if metric == "success" else score_range(cell.benchmark)
    return sample_estimate(cell.sample(metric), cell.results, bounds,
                           families_sampled(cell.benchmark))


def _clusters(cell: Cell, success: Estimate) -> str:
    """What the interval counts as independent: families, or instances where they had
    several results each."""
    if success.families:
        return f"{success.families} famil{'y' if success.families == 1 else 'ies'}"
    if success.results > success.n:
        return f"{success.n} instance{'' if success.n == 1 else 's'}"
    return "—"


def _values(cell: Cell, trials: Optional[str], ambiguous: bool,
            context_ambiguous: bool = False, version_ambiguous: bool = False) -> dict[str, str]:
    """The cell's value of every column of COLUMNS."""
    success, score = estimate(cell, "success"), estimate(cell, "score")
    method = method_label(cell.method, cell.method_config_hash, None, ambiguous, cell.context,
                          cell.context_config_hash, context_ambiguous,
                          cell.method_version if version_ambiguous else "")
    return {
        "split": cell.split, "method": method, "model": cell.model or "—",
        "budget": _budget_shown(cell), "trials": trial_aggregation(cell.benchmark, trials, cell.method),
        "n": success.n_label, "success": _fmt(success.mean),
        "95% CI": f"[{_fmt(success.low)}, {_fmt(success.high)}]" if not math.isnan(success.low) else "—",
        "mean score": _fmt(score.mean),
        "score 95% CI": f"[{_fmt(score.low)}, {_fmt(score.high)}]" if not math.isnan(score.low) else "—",
        "clusters": _clusters(cell, success),
        "mean steps": _fmt(fmean(r.steps for r in cell.results) if cell.results else math.nan, 2),
    }


def _metric_value(metric: Metric, cell: Cell) -> str:
    if not cell.results or not metric_applies(metric, cell.benchmark, cell.method):
        return "—"
    return _fmt(metric.compute(cell.results))


def _rows(cells: list[Cell], trials: Optional[str], columns: list[str],
          shown_metrics: list[Metric]) -> list[list[str]]:
    configs, contexts, versions = defaultdict(set), defaultdict(set), defaultdict(set)
    for c in cells:
        configs[(c.benchmark, c.split, c.method)].add(c.method_config_hash)
        contexts[(c.benchmark, c.split, c.method, c.context)].add(c.context_config_hash)
        versions[c.method].add(c.method_version)
    rows = []
    for c in cells:
        values = _values(c, trials, len(configs[(c.benchmark, c.split, c.method)]) > 1,
                         len(contexts[(c.benchmark, c.split, c.method, c.context)]) > 1,
                         len(versions[c.method]) > 1)
        values["benchmark"] = c.benchmark + (f" [{c.benchmark_config_hash[:6]}]"
                                             if c.benchmark_config_hash else "")
        values["config"] = c.benchmark_config_hash[:6] or "default"
        rows.append([values[name] for name in columns]
                    + [_metric_value(m, c) for m in shown_metrics] + [str(c.failures)])
    return rows


def benchmark_tables(records: list[EpisodeRecord], trials: Optional[str] = None) -> list[Table]:
    """One table per benchmark, with its own metrics' columns (and a config column when
    one of its cells ran a non-default benchmark config)."""
    return [table for table, _ in benchmark_grids(records, trials)]


def benchmark_grids(records: list[EpisodeRecord], trials: Optional[str] = None
                    ) -> list[tuple[Table, list[Cell]]]:
    """`benchmark_tables`, each with its cells: the cell of every row, in order."""
    by_benchmark: dict[str, list[Cell]] = defaultdict(list)
    for cell in cells_of(records, trials):
        by_benchmark[cell.benchmark].append(cell)
    tables = []
    for benchmark, cells in sorted(by_benchmark.items()):
        shown = metrics(benchmark, [c.method for c in cells])
        columns = (["config"] if any(c.benchmark_config_hash for c in cells) else []) + list(COLUMNS)
        headers = columns + [m.header for m in shown] + ["failed"]
        table = Table.of(benchmark, headers, _rows(cells, trials, columns, shown),
                         notes=_pooling_notes(cells) + seeds_notes(
                             (f"{c.split} {_label(c, cells)}", c) for c in cells) + server_notes(cells))
        tables.append((table, cells))
    return tables


def primary_sample(cell: Cell) -> InstanceSample:
    """The cell's results as per-instance values of its benchmark's primary metric."""
    return cell.sample(primary_metric(cell.benchmark))


def seeds_notes(labelled: Iterable[tuple[str, Cell]]) -> list[str]:
    """The notes' line on seeds that agreed (`agreement_note`), if any ran several."""
    note = agreement_note((label, primary_sample(cell)) for label, cell in labelled)
    return [note] if note else []


def _label(cell: Cell, cells: list[Cell]) -> str:
    """The cell's method, with its config hash where the split ran several of it."""
    configs = {c.method_config_hash for c in cells if (c.split, c.method, c.model, c.context)
               == (cell.split, cell.method, cell.model, cell.context)}
    return method_label(cell.method, cell.method_config_hash, cell.model, len(configs) > 1,
                        cell.context)


def _episodes(cell: Cell) -> dict[int, frozenset[str]]:
    by_seed: dict[int, set[str]] = defaultdict(set)
    for r in cell.results:
        by_seed[r.seed].add(r.instance_id)
    return {seed: frozenset(ids) for seed, ids in by_seed.items()}


def server_notes(cells: list[Cell]) -> list[str]:
    """What the model's server did to a row's episodes that its numbers hide: replies cut at
    their token cap, episodes ended at the model's context window (results, counted as
    failures, shown here apart), and the misbehaviour its calls survived (retried)."""
    notes = []
    for cell in cells:
        where = f"{cell.split} {cell.method}" + (f" ({cell.model})" if cell.model else "")
        overflowed = sum(r.status is Status.CONTEXT_OVERFLOW for r in cell.results)
        if overflowed:
            notes.append(f"{where}: {overflowed} of {len(cell.results)} episodes ended at the "
                         f"model's context window (context_overflow), counted as failures")
        cut = CutCalls()
        faults: Counter = Counter()
        for record in cell.results:
            cut.add(record.llm_call_tokens)
            counted = record.extra.get("endpoint_faults")
            if isinstance(counted, dict):
                faults.update({k: v for k, v in counted.items() if isinstance(v, int)})
        if cut.note():
            notes.append(f"{where}: {cut.note()}")
        if faults_note(faults):
            notes.append(f"{where}: {faults_note(faults)}")
    return notes


def _pooling_notes(cells: list[Cell]) -> list[str]:
    """What the rows pool that a reader would not guess: seeds of one row that ran
    different instances, and rows of one split and budget that ran different episodes."""
    notes = []
    groups: dict[tuple, list[Cell]] = defaultdict(list)
    for cell in cells:
        episodes = _episodes(cell)
        if len(set(episodes.values())) > 1:
            counts = ", ".join(f"seed {s}: {len(ids)}" for s, ids in sorted(episodes.items()))
            notes.append(f"{cell.split} {cell.method}: its seeds ran different instances "
                         f"({counts}), pooled in one row")
        groups[(cell.benchmark_config_hash, cell.split, cell.budget)].append(cell)
    for (_, split, budget), group in groups.items():
        arms = {Arm(c.method, c.method_config_hash, c.model, c.context, c.context_config_hash,
                    c.method_version): c
                for c in group if c.results}
        labels = arm_labels(arms)
        sets = {labels[arm]: _episodes(cell) for arm, cell in arms.items()}
        if len({tuple(sorted(e.items())) for e in sets.values()}) > 1:
            shown = "; ".join(f"{name}: {sum(len(i) for i in e.values())} episodes, seeds "
                              f"{','.join(map(str, sorted(e)))}" for name, e in sorted(sets.items()))
            notes.append(f"{split} (budget {budget}): the rows ran different episodes ({shown}); "
                         f"`lifebench compare` pairs them over the instances both ran, each "
                         f"with as many seeds on either side, or compares them unpaired where "
                         f"fewer than half of either row's instances are shared, counting the "
                         f"instances only one ran")
    return notes


def grid(records: list[EpisodeRecord], trials: Optional[str] = None) -> tuple[list[str], list[list[str]]]:
    """Every cell in one table (the CSV form): a benchmark column, and every metric's
    column ("—" where a metric is not the cell's)."""
    cells = cells_of(records, trials)
    shown: dict[str, Metric] = {}
    for benchmark in dict.fromkeys(c.benchmark for c in cells):
        for metric in metrics(benchmark, [c.method for c in cells if c.benchmark == benchmark]):
            shown.setdefault(metric.name, metric)
    columns = ["benchmark", *COLUMNS]
    headers = columns + [m.header for m in shown.values()] + ["failed"]
    return headers, _rows(cells, trials, columns, list(shown.values()))
