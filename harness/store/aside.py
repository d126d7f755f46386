"""Every record the harness writes, it can read back: a record's line stays within the
reader's bound (`lifebench.api.untrusted.MAX_CHARS`).

A record keeps totals; what grows with a preparation's size goes aside, to a file of its
stream under `aside/`, one JSON line per (episode, attempt), and the record points to it
(`extra.aside`): the per-call token list past `CALLS_KEPT` calls (a full InstructRAG
preparation on ALFWorld made 68,506 calls, all charged to its stream's first record) and,
when the line is still too long, the training curves. A line still over the bound after
that is a bug, refused in one line at write time. Lines written before this existed,
over the bound, are read with those fields left out and a note (`read_oversized`).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Optional

from lifebench.api.errors import UserError
from lifebench.api.records import EpisodeRecord
from lifebench.api.training import TRAINING_CURVES
from lifebench.api.untrusted import MAX_CHARS

ASIDE_DIR = "aside"
CALLS_KEPT = 2_000  # per-call entries a record keeps in its own line
ASIDE_KEY = "aside"  # extra.aside: {field: {"file": ..., "count": ...}}
# Reading a line written before the bound was kept: how long it may be at all.
OVERSIZED_MAX_CHARS = 256 * MAX_CHARS


class RecordTooLarge(UserError):
    """A record that would not fit in a line the reader takes: a bug of the harness."""


def keep_readable(record: EpisodeRecord, out: Path, stream_id: str) -> tuple[EpisodeRecord, str]:
    """The record as it is written (its large fields set aside under `out`), and its line."""
    moved: dict[str, Any] = {}
    if len(record.llm_call_tokens) > CALLS_KEPT:
        moved["llm_call_tokens"] = [dataclasses.asdict(c) for c in record.llm_call_tokens]
        record = dataclasses.replace(record, llm_call_tokens=[])
    line = _line(record, moved, stream_id)
    if len(line) > MAX_CHARS and TRAINING_CURVES in record.extra:
        moved[TRAINING_CURVES] = record.extra[TRAINING_CURVES]
        record = dataclasses.replace(record, extra={k: v for k, v in record.extra.items()
                                                    if k != TRAINING_CURVES})
        line = _line(record, moved, stream_id)
    if len(line) > MAX_CHARS:
        raise RecordTooLarge(
            f"the record of {record.instance_id} (stream {stream_id}, episode "
            f"{record.episode_index}) would be {len(line):,} characters, over the reader's "
            f"limit of {MAX_CHARS:,}: a harness bug (its extra holds {_largest(record)}); "
            f"please report it")
    if moved:
        _write_aside(out / ASIDE_DIR / f"{stream_id}.jsonl", record, moved)
        record = _pointed(record, moved, stream_id)
    return record, line


def _line(record: EpisodeRecord, moved: dict[str, Any], stream_id: str) -> str:
    return (_pointed(record, moved, stream_id) if moved else record).to_json()


def _pointed(record: EpisodeRecord, moved: dict[str, Any], stream_id: str) -> EpisodeRecord:
    pointers = {name: {"file": f"{ASIDE_DIR}/{stream_id}.jsonl",
                       "count": len(value) if isinstance(value, (list, dict)) else 1}
                for name, value in moved.items()}
    return dataclasses.replace(record, extra={**record.extra, ASIDE_KEY: pointers})


def _write_aside(path: Path, record: EpisodeRecord, moved: dict[str, Any]) -> None:
    path.parent.mkdir(exist_ok=True)
    entry = {"episode_index": record.episode_index, "trial": record.trial,
             "attempt": record.attempt, **moved}
    with open(path, "a") as f:
        f.write(json.dumps(entry) + "\n")


def _largest(record: EpisodeRecord) -> str:
    sizes = {key: len(json.dumps(value)) for key, value in record.extra.items()}
    key = max(sizes, key=sizes.get, default=None)
    return f"{key!r}, {sizes[key]:,} characters" if key else "nothing"


def read_oversized(data: dict[str, Any]) -> tuple[dict[str, Any], Optional[str]]:
    """A record's fields read from a line over the bound (written before it was kept):
    its per-call token list and training curves left out; and what was left out."""
    left = []
    if data.get("llm_call_tokens"):
        left.append(f"its per-call token list ({len(data['llm_call_tokens']):,} calls)")
        data = {**data, "llm_call_tokens": []}
    extra = data.get("extra")
    if isinstance(extra, dict) and TRAINING_CURVES in extra:
        left.append("its training curves")
        data = {**data, "extra": {k: v for k, v in extra.items() if k != TRAINING_CURVES}}
    return data, " and ".join(left) or None
