"""What a results directory already holds for a run being planned: the episodes recorded
(their spending, every attempt), and the preparation artifacts stored. A resumed run skips
both, so the plan leaves them out of its estimate and shows them apart."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from lifebench.api.records import EpisodeRecord, RecordKey
from lifebench.runner.streams import StreamSpec
from lifebench.store.prepared import PreparedStore
from lifebench.store.records_file import EPISODES_FILE, read_records_file

# A cell of the plan: a method config on a benchmark split, with an instance context.
CellKey = tuple[str, str, str, str, str, str, str]


def cell_of(stream: StreamSpec) -> CellKey:
    return (stream.method, stream.benchmark, stream.benchmark_config_hash, stream.split,
            stream.method_config_hash, stream.context, stream.context_config_hash)


def record_cell(record: EpisodeRecord) -> CellKey:
    return (record.method, record.benchmark, record.benchmark_config_hash, record.split,
            record.method_config_hash, record.context, record.context_config_hash)


@dataclass
class Spent:
    """Episodes and what they spent: every attempt's calls, tokens and wall time."""

    episodes: int = 0  # results: what a resumed run skips
    attempts: int = 0
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    wall_s: float = 0.0
    preparations: int = 0  # preparation artifacts stored, of this cell's keys

    def add(self, record: EpisodeRecord) -> None:
        self.episodes += record.is_result
        self.attempts += 1
        self.calls += record.llm_calls
        self.tokens_in += record.tokens_in
        self.tokens_out += record.tokens_out
        self.wall_s += record.wall_s

    def to_dict(self) -> dict[str, float]:
        return {"episodes": self.episodes, "attempts": self.attempts, "calls": self.calls,
                "tokens_in": self.tokens_in, "tokens_out": self.tokens_out,
                "wall_s": round(self.wall_s, 3), "preparations": self.preparations}


@dataclass
class Holdings:
    """The directory's records of the run's streams, by cell."""

    finished: set[RecordKey] = field(default_factory=set)  # the keys a resumed run skips
    succeeded: set[RecordKey] = field(default_factory=set)  # of those, the successes
    records: list[EpisodeRecord] = field(default_factory=list)  # every attempt, in order
    spent: dict[CellKey, Spent] = field(default_factory=lambda: defaultdict(Spent))
    stored: set[str] = field(default_factory=set)  # preparation keys already stored

    def remaining(self, stream: StreamSpec) -> list[int]:
        """The stream's positions a run into the directory still plays (not those after a
        recorded success, in a stream that stops an instance there)."""
        def succeeded(position: int) -> bool:
            return stream.key_at(position) in self.succeeded

        return [p for p in range(len(stream.instance_ids) * stream.trials)
                if stream.key_at(p) not in self.finished and not stream.skipped(p, succeeded)]


def holdings(out: Path, streams: list[StreamSpec]) -> Holdings:
    """What `out` holds of `streams` (an empty Holdings for a new directory)."""
    found = Holdings()
    path = out / EPISODES_FILE
    records = read_records_file(path).records if path.is_file() else []
    cells = {cell_of(s) for s in streams}
    keys = {s.key_at(p) for s in streams for p in range(len(s.instance_ids) * s.trials)}
    for record in records:
        if record.key in keys and record_cell(record) in cells:
            found.records.append(record)
            found.spent[record_cell(record)].add(record)
            if record.is_result:
                found.finished.add(record.key)
                if record.success:
                    found.succeeded.add(record.key)
    prepared = PreparedStore(out)
    for stream in streams:
        key = stream.prepared_key()
        if key is not None and key not in found.stored and prepared.path(key).is_file():
            found.stored.add(key)
            found.spent[cell_of(stream)].preparations += 1
    return found
