"""Records for the leaderboard's commands."""

from __future__ import annotations

from pathlib import Path

from lifebench.api.errors import UserError
from lifebench.api.records import EpisodeRecord
from lifebench.store.records_file import load_records


def load_nonempty(directories: list[str | Path]) -> list[EpisodeRecord]:
    """Records of the directories (deduplicated by key); a UserError when there are none."""
    records = load_records(directories)
    if not records:
        raise UserError(f"no episode records in {', '.join(map(str, directories))}; "
                        f"run `lifebench run ... --out DIR` first")
    return records
