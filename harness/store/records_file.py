"""Reading `episodes.jsonl` files, strictly: a bad line is an error with its line number.

Records of every schema version are read (and upgraded: `EpisodeRecord.from_dict`). A
final line cut short by a crash mid-write is not a result and is reported separately, so
the writer can set it aside and the reader can skip it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from lifebench.api.errors import UserError
from lifebench.api.records import EpisodeRecord
from lifebench.api.untrusted import MAX_CHARS, parse_json
from lifebench.store.aside import OVERSIZED_MAX_CHARS, read_oversized

EPISODES_FILE = "episodes.jsonl"


@dataclass
class RecordsFile:
    records: list[EpisodeRecord] = field(default_factory=list)
    # bytes after the last newline that do not parse: a write cut short by a crash
    torn_tail: bytes = b""
    # a final record that parses but lacks its newline
    unterminated: bool = False


def parse_record(line: str | bytes, where: str) -> EpisodeRecord:
    try:
        if len(line) > MAX_CHARS:  # written before records were kept within the bound
            return _oversized(line, where)
        return EpisodeRecord.from_dict(parse_json(line))
    except (ValueError, TypeError) as exc:
        raise UserError(f"{where}: not a valid episode record ({exc}); fix or delete that "
                        f"line, the other records are intact") from None


def _oversized(line: str | bytes, where: str) -> EpisodeRecord:
    """A record over the reader's bound, read with what made it so left out, said once."""
    data, left = read_oversized(parse_json(line, max_chars=OVERSIZED_MAX_CHARS))
    record = EpisodeRecord.from_dict(data)
    if left:
        print(f"note: {where}: a record of {len(line):,} characters (over the limit of "
              f"{MAX_CHARS:,}) is read without {left}", file=sys.stderr)
    return record


def read_records_file(path: Path) -> RecordsFile:
    out = RecordsFile()
    if not path.exists():
        return out
    data = path.read_bytes()
    body, _, tail = data.rpartition(b"\n") if b"\n" in data else (b"", b"", data)
    for number, line in enumerate(body.split(b"\n") if body else [], start=1):
        if line.strip():
            out.records.append(parse_record(line, f"{path}:{number}"))
    if tail.strip():
        try:
            out.records.append(EpisodeRecord.from_dict(parse_json(tail)))
            out.unterminated = True
        except (ValueError, TypeError):
            out.torn_tail = tail
    return out


def results_file(directory: str | Path) -> Path:
    d = Path(directory)
    path = d / EPISODES_FILE if d.is_dir() or not d.suffix else d
    if not path.exists():
        raise UserError(f"no results at {path}; give a directory written by `lifebench run --out DIR`")
    return path


def load_records(directories: list[str | Path]) -> list[EpisodeRecord]:
    """Records from several results directories, deduplicated by key: a result record wins
    over a failure, and among equals the last written wins. A final line cut short (a run
    killed mid-write) is skipped, and said so on stderr."""
    return deduplicate(r for d in directories for r in read_directory(d))


def read_directory(directory: str | Path) -> list[EpisodeRecord]:
    """Every record of one results directory, in the order written (failures and their
    retries included); a final line cut short is skipped, and said so on stderr."""
    path = results_file(directory)
    try:
        found = read_records_file(path)
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or type(exc).__name__}; give "
                        f"a directory written by `lifebench run --out DIR`") from None
    if found.torn_tail:
        print(f"note: the last line of {path} is cut short ({len(found.torn_tail)} bytes of "
              f"an unfinished write): skipped; a `lifebench run` into it sets it aside",
              file=sys.stderr)
    return found.records


def deduplicate(records: Iterable[EpisodeRecord]) -> list[EpisodeRecord]:
    """One record per key, in the order of the keys' first records: a result record wins
    over a failure, and among equals the last one wins."""
    chosen: dict = {}
    for record in records:
        previous = chosen.get(record.key)
        if previous is None or record.is_result or not previous.is_result:
            chosen[record.key] = record
    return list(chosen.values())
