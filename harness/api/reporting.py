"""What a plugin declares for the leaderboard: its metrics, its tables, how its trials count.

A benchmark (or a method) names these as class attributes; the leaderboard asks for them
and never tests a plugin's name:

- `metrics`: `Metric`s, columns of the benchmark's table computed from a cell's records
  (e.g. Plancraft's impossible F1);
- `tables`: functions from the result records of the plugin's benchmark (or method) to
  `Table`s (e.g. Crafter's per-achievement table, How²'s Table 1);
- on a method also `table_peers`: names of other methods whose result records, on the
  benchmark splits the method's own ran on, its `tables` get after its own (a paper's
  table of the method beside its baselines);
- on a benchmark also `trial_aggregation` (how an instance's trials count, one of
  `TRIAL_AGGREGATIONS`), `per_task_metric` ("success" or "score"), `task_family_key` and
  `budget_curves` (see `Benchmark`).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence, Union

if TYPE_CHECKING:
    from lifebench.api.records import EpisodeRecord

# How an instance's trials count: every episode, or one per (instance, seed): the best
# (score, then success, then the earliest trial: STEP's and CLIN's protocol), the last or
# the first trial, or the first that succeeded, else the last (Reflexion's: it stops at its
# first success, and that trial's score is its score).
TRIAL_AGGREGATIONS = ("all", "max", "last", "first", "first_success")
PER_TASK_METRICS = ("success", "score")


@dataclass(frozen=True)
class Metric:
    """A column of a leaderboard table: `compute` takes a cell's result records and gives a
    number (formatted by the table) or a text shown as it is."""

    name: str
    header: str
    compute: Callable[[Sequence["EpisodeRecord"]], Union[float, str]]


@dataclass(frozen=True)
class Table:
    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...] = ()  # printed under the table: what a reader must know

    @classmethod
    def of(cls, title: str, headers: Sequence[str], rows: Sequence[Sequence[object]],
           notes: Sequence[str] = ()) -> "Table":
        return cls(title, tuple(map(str, headers)), tuple(tuple(map(str, r)) for r in rows),
                   tuple(notes))


# A plugin's table maker: the result records of its benchmark (or method), and a method's
# `table_peers`' on the same splits -> tables.
TableMaker = Callable[[Sequence["EpisodeRecord"]], Sequence[Table]]


def config_setting(config: Any, leave_out: Sequence[str] = ()) -> str:
    """A typed config's fields away from their defaults, as `name=value, ...` ("" when none),
    the fields in `leave_out` aside: what tells two configurations of one method apart where
    a table shows some of its fields in columns of their own (How²'s strategy and teacher)."""
    default = type(config)()
    return ", ".join(f"{f.name}={getattr(config, f.name)}" for f in dataclasses.fields(config)
                     if f.name not in leave_out and getattr(config, f.name) != getattr(default, f.name))


def aggregate_trials(results: Sequence["EpisodeRecord"], how: str) -> list["EpisodeRecord"]:
    """One record per (instance, seed) from its trials, as `how` says (`all` keeps every
    episode). Raises ValueError for an unknown rule."""
    if how == "all":
        return list(results)
    if how not in TRIAL_AGGREGATIONS:
        raise ValueError(f"unknown trial aggregation {how!r}; choose from: "
                         f"{', '.join(TRIAL_AGGREGATIONS)}")
    groups: dict[tuple, list["EpisodeRecord"]] = defaultdict(list)
    for r in results:
        groups[(r.instance_id, r.seed)].append(r)
    pick = {
        "max": lambda rs: max(rs, key=lambda r: (r.score, r.success, -r.trial)),
        "last": lambda rs: max(rs, key=lambda r: r.trial),
        "first": lambda rs: min(rs, key=lambda r: r.trial),
        "first_success": lambda rs: min((r for r in rs if r.success), key=lambda r: r.trial,
                                        default=max(rs, key=lambda r: r.trial)),
    }[how]
    return [pick(rs) for _, rs in sorted(groups.items())]
