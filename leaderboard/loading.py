"""Records for the leaderboard's commands."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from lifebench.api.errors import UserError
from lifebench.api.records import EpisodeRecord
from lifebench.store.records_file import load_records
from lifebench.store.results import MANIFEST_FILE, read_manifest_runs


def load_nonempty(directories: list[str | Path]) -> list[EpisodeRecord]:
    """Records of the directories (deduplicated by key); a UserError when there are none."""
    records = load_records(directories)
    if not records:
        raise UserError(f"no episode records in {', '.join(map(str, directories))}; "
                        f"run `lifebench run ... --out DIR` first")
    return records


def read_manifests(directory: Path) -> list[dict[str, Any]]:
    """The entries of a results directory's manifest.json (none when it is missing or
    unreadable, said in one line: the records are still shown)."""
    try:
        return read_manifest_runs(directory)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else exc
        print(f"note: {directory / MANIFEST_FILE} is unreadable ({reason}): the runs' "
              f"settings (refused cells, baseline, smoke scale) are left out", file=sys.stderr)
        return []


def manifests_of(directories: list[str | Path]) -> list[dict[str, Any]]:
    """Every run entry of the directories' manifests (DIR or DIR/episodes.jsonl)."""
    out: list[dict[str, Any]] = []
    for d in map(Path, directories):
        out += read_manifests(d if d.is_dir() else d.parent)
    return out


def where(records: list[EpisodeRecord], conditions: list[str]) -> list[EpisodeRecord]:
    """The records whose fields take one of the listed values: `FIELD=V1,V2` (a record
    field or extra.KEY), every condition holding."""
    wanted = []
    for condition in conditions:
        name, sep, values = condition.partition("=")
        if not sep or not name.strip():
            raise UserError(f"--where {condition!r}: expected FIELD=VALUE[,VALUE...], e.g. "
                            f"extra.how2_strategy=just-ask,memory-only")
        name = name.strip()
        if not name.startswith("extra.") and name not in EpisodeRecord.__dataclass_fields__:
            raise UserError(f"--where {condition!r}: {name!r} is neither a record field nor extra.KEY")
        wanted.append((name, {v.strip() for v in values.split(",")}))
    kept = [r for r in records if all(str(r.value(n)) in vs for n, vs in wanted)]
    if conditions and not kept:
        raise UserError(f"no record matches --where {' '.join(conditions)}")
    return kept
