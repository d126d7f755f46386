"""What the leaderboard asks of plugins: each benchmark's and method's declarations
(`lifebench.api.reporting`). Results of a plugin that is not installed here get the
contract's defaults: its numbers are still tabled, without its own columns and tables."""

from __future__ import annotations

import functools
from typing import Callable, Optional, Sequence

from lifebench import registry
from lifebench.api.context import ContextProvider
from lifebench.api.errors import UserError
from lifebench.api.protocols import Benchmark, Method
from lifebench.api.records import EpisodeRecord
from lifebench.api.reporting import Metric, Table


def _class_or(lookup: Callable[[str], type], name: str, default: type) -> type:
    """The plugin's class, or the contract's (its defaults) when it is not installed here."""
    try:
        return lookup(name)
    except UserError:
        return default


def _benchmark_class(name: str) -> type:
    return _class_or(registry.benchmark_class, name, Benchmark)


def _method_class(name: str) -> type:
    return _class_or(registry.method_class, name, Method)


def _context_class(name: str) -> type:
    return _class_or(registry.context_class, name, ContextProvider)


def trial_aggregation(benchmark: str, override: Optional[str] = None,
                      method: Optional[str] = None) -> str:
    """How an instance's trials count: the reader's `--trials`, else the method's protocol
    on the benchmark (Reflexion: its first success, else its last trial), else the
    benchmark's rule."""
    return override or (method and _scored_trial(method, benchmark)) \
        or _benchmark_class(benchmark).trial_aggregation


@functools.lru_cache(maxsize=None)
def _scored_trial(method: str, benchmark: str) -> Optional[str]:
    try:
        bench = registry.get_benchmark(benchmark)
    except UserError:  # not installed here: the benchmark's rule
        return None
    return _method_class(method).protocol(bench).scored_trial


def per_task_metric(benchmark: str) -> str:
    return _benchmark_class(benchmark).per_task_metric


def primary_metric(benchmark: str) -> str:
    """The grid table's number for the benchmark: "success" (a rate) or "score" (a mean)."""
    cls = _benchmark_class(benchmark)
    return cls.primary_metric or cls.per_task_metric


def success_note(benchmark: str) -> Optional[str]:
    """What the benchmark's success means, where a reader might not guess it."""
    return _benchmark_class(benchmark).success_note


def has_budget_curves(benchmark: str) -> bool:
    return _benchmark_class(benchmark).budget_curves


def score_range(benchmark: str) -> Optional[tuple[float, float]]:
    return _benchmark_class(benchmark).score_range


def metrics(benchmark: str, methods: Sequence[str]) -> list[Metric]:
    """The columns of a benchmark's table: its own metrics, then its methods'."""
    out: dict[str, Metric] = {}
    for metric in _benchmark_class(benchmark).metrics:
        out.setdefault(metric.name, metric)
    for method in sorted(set(methods)):
        for metric in _method_class(method).metrics:
            out.setdefault(metric.name, metric)
    return list(out.values())


def metric_applies(metric: Metric, benchmark: str, method: str) -> bool:
    return metric in _benchmark_class(benchmark).metrics or metric in _method_class(method).metrics


def _peers_around(results: Sequence[EpisodeRecord], name: str,
                  own: Sequence[EpisodeRecord]) -> list[EpisodeRecord]:
    """The records of the method's `table_peers` on the benchmark splits its own ran on."""
    peers = set(_method_class(name).table_peers) - {name}
    if not peers:
        return []
    splits = {(r.benchmark, r.split) for r in own}
    return [r for r in results if r.method in peers and (r.benchmark, r.split) in splits]


def plugin_tables(results: Sequence[EpisodeRecord]) -> list[Table]:
    """Every table the benchmarks and methods of `results` make of their own records (a
    method's with its `table_peers`' records on the same benchmark splits after them), then
    the context providers' tables, each of the records of every benchmark split it ran on
    (with and without it: its tables compare the two)."""
    tables: list[Table] = []
    for lookup, field in ((_benchmark_class, "benchmark"), (_method_class, "method")):
        for name in sorted({getattr(r, field) for r in results}):
            given = [r for r in results if getattr(r, field) == name]
            if field == "method":
                given += _peers_around(results, name, given)
            for make in lookup(name).tables:
                tables.extend(make(given))
    for name in sorted({r.context for r in results if r.context}):
        splits = {(r.benchmark, r.split) for r in results if r.context == name}
        around = [r for r in results if (r.benchmark, r.split) in splits]
        for make in _context_class(name).tables:
            tables.extend(make(around))
    return tables


def families_sampled(benchmark: str) -> bool:
    """Whether the benchmark's task families are a sample (its `population`), so that its
    tests and intervals are made per family."""
    return _benchmark_class(benchmark).population == "families"


def sampled_families(benchmark: str, records: Sequence[EpisodeRecord]) -> Optional[dict[str, str]]:
    """instance -> task family, for `compare_arms`, where the benchmark samples its families
    and every record names one; else None (the instance is the unit)."""
    if not families_sampled(benchmark):
        return None
    families = {r.instance_id: r.task_family for r in records}
    return None if any(f is None for f in families.values()) else families  # type: ignore[return-value]
