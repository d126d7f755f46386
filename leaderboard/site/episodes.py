"""The episode browser's data: an index of every episode as columns (strings as codes into
per-column dictionaries, so that filtering 100,000 episodes is a loop over small integers),
and one file per stream with its records and trajectories, loaded only when one of its
episodes is opened.

A stream's file is found from a record by the runner's own stream id (`StreamSpec`), the
name of its `trajectories/<stream>.jsonl`."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Iterator

from lifebench.api.budget import Budget
from lifebench.api.records import EpisodeRecord
from lifebench.leaderboard.grouping import budget_label, method_label
from lifebench.runner.streams import StreamSpec
from lifebench.api.untrusted import parse_json
from lifebench.store.results import MAX_STATE_CHARS, TRAJECTORIES_DIR

CODED = ("benchmark", "split", "method", "model", "budget", "status", "family", "instance")
NUMBERS = ("seed", "trial", "episode_index", "attempt", "success", "score", "steps", "tokens",
           "cost", "llm_calls", "wall_s")


RECORD_FIELDS = tuple(f.name for f in dataclasses.fields(EpisodeRecord))


def record_dict(record: EpisodeRecord) -> dict[str, Any]:
    """`EpisodeRecord.to_dict()` without its deep copy (ten times faster: the site writes
    every record once and copies nothing), each of `llm_call_tokens` as a list: [role,
    tokens in, tokens out, cached]."""
    data = {name: getattr(record, name) for name in RECORD_FIELDS}
    data["status"] = record.status.value
    data["llm_usage"] = {role: dataclasses.asdict(u) for role, u in record.llm_usage.items()}
    data["llm_call_tokens"] = [[c.role, c.tokens_in, c.tokens_out, c.cached]
                               for c in record.llm_call_tokens]
    return data


def stream_id(record: EpisodeRecord) -> str:
    """The id of the stream that played `record` (its trajectories file's name)."""
    return StreamSpec(
        run_id=record.run_id, benchmark=record.benchmark, split=record.split,
        method=record.method, benchmark_config=None,
        benchmark_config_hash=record.benchmark_config_hash, method_config=None,
        method_config_hash=record.method_config_hash, model=record.model, seed=record.seed,
        budget=Budget(record.budget), trials=1, instance_ids=(), timeout_s=0.0, retries=0,
        context=record.context, context_config_hash=record.context_config_hash).stream_id


class MethodLabels:
    """A method's label in the browser: its name, its config hash where that name ran with
    several configs, and its instance context (the grid's labels, over every record)."""

    def __init__(self, records: list[EpisodeRecord]) -> None:
        self.configs: dict[str, set[str]] = defaultdict(set)
        self.contexts: dict[tuple, set[str]] = defaultdict(set)
        for r in records:
            self.configs[r.method].add(r.method_config_hash)
            self.contexts[(r.method, r.context)].add(r.context_config_hash)

    def of(self, method: str, config_hash: str, context: str, context_hash: str) -> str:
        return method_label(method, config_hash, None, len(self.configs[method]) > 1, context,
                            context_hash, len(self.contexts[(method, context)]) > 1)

    def record(self, r: EpisodeRecord) -> str:
        return self.of(r.method, r.method_config_hash, r.context, r.context_config_hash)


def order_key(r: EpisodeRecord) -> tuple:
    return (r.benchmark, r.benchmark_config_hash, r.split, r.method, r.method_config_hash,
            r.context, r.context_config_hash, r.model or "", budget_label(r), r.seed,
            r.episode_index, r.trial)


class Coder:
    """Strings as small integers, in order of first use."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self.codes: dict[Any, int] = {}

    def __call__(self, value: Any) -> int:
        code = self.codes.get(value)
        if code is None:
            code = self.codes[value] = len(self.values)
            self.values.append(value)
        return code


def episode_index(records: list[EpisodeRecord], labels: MethodLabels,
                  stream_of: Callable[[EpisodeRecord], int]) -> dict[str, Any]:
    """The columns of every episode (records in `order_key` order): what the browser filters,
    lists and sorts; `stream` is the number of the stream file holding the rest."""
    coders = {name: Coder() for name in CODED}
    columns: dict[str, list] = {name: [] for name in (*CODED, *NUMBERS, "stream")}
    for r in records:
        values = {"benchmark": r.benchmark + (f" [{r.benchmark_config_hash[:6]}]"
                                              if r.benchmark_config_hash else ""),
                  "split": r.split, "method": labels.record(r), "model": r.model or "—",
                  "budget": budget_label(r), "status": r.status.value,
                  "family": r.task_family or "—", "instance": r.instance_id}
        for name in CODED:
            columns[name].append(coders[name](values[name]))
        columns["seed"].append(r.seed)
        columns["trial"].append(r.trial)
        columns["episode_index"].append(r.episode_index)
        columns["attempt"].append(r.attempt)
        columns["success"].append(int(r.success))
        columns["score"].append(round(r.score, 6))
        columns["steps"].append(r.steps)
        columns["tokens"].append(r.tokens_in + r.tokens_out)
        columns["cost"].append(None if r.cost_usd is None else round(r.cost_usd, 8))
        columns["llm_calls"].append(r.llm_calls)
        columns["wall_s"].append(round(r.wall_s, 3))
        columns["stream"].append(stream_of(r))
    return {"count": len(records), "columns": columns,
            "values": {name: coders[name].values for name in CODED}}


def read_trajectories(path: Path) -> dict[int, list[dict[str, Any]]]:
    """A stream's trajectories by episode index: every attempt, in order (a line written
    again for the same attempt, by a resumed run, replaces the earlier one)."""
    by_episode: dict[int, dict[tuple, dict]] = defaultdict(dict)
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return {}
    for line in lines:
        try:
            entry = parse_json(line, MAX_STATE_CHARS)
            key = (entry["trial"], entry.get("attempt", 0))
            by_episode[int(entry["episode_index"])][key] = entry
        except (ValueError, KeyError, TypeError):
            continue  # a torn line (a run killed mid-write): its episode is played again
    return {i: [entries[k] for k in sorted(entries)] for i, entries in by_episode.items()}


def stream_payloads(streams: dict[tuple[int, str], list[EpisodeRecord]],
                    failures: dict[tuple[int, str], list[EpisodeRecord]],
                    directories: list[Path]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Per stream (numbered in order of `streams`): its records, the failures recorded on
    the way (errors of attempts a retry resolved too) and its trajectories."""
    for number, (key, records) in enumerate(streams.items()):
        directory, sid = key
        path = directories[directory] / TRAJECTORIES_DIR / f"{sid}.jsonl"
        failed: dict[int, list] = defaultdict(list)
        for f in failures.get(key, []):
            failed[f.episode_index].append(record_dict(f))
        yield number, {"stream": sid, "directory": str(directories[directory]),
                       "has_trajectories": path.exists(),
                       "records": {r.episode_index: record_dict(r) for r in records},
                       "failures": dict(failed),
                       "trajectories": read_trajectories(path) if path.exists() else {}}


def failure_rows(failures: list[EpisodeRecord], standing: dict[Any, EpisodeRecord],
                 rows: dict[Any, int], labels: MethodLabels, limit: int) -> list[dict[str, Any]]:
    """Every infrastructure failure recorded (at most `limit`): whether a retry resolved it
    (its key now has a result), and the row of the episode that stands for its key."""
    return [{"benchmark": f.benchmark, "split": f.split, "method": labels.record(f),
             "model": f.model or "—", "seed": f.seed, "instance": f.instance_id,
             "trial": f.trial, "attempt": f.attempt, "status": f.status.value,
             "error": (f.error or "")[:500], "run_id": f.run_id,
             "resolved": standing[f.key].is_result, "episode": rows.get(f.key)}
            for f in failures[:limit]]
