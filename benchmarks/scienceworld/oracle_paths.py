"""The paths the oracle replays: `splits/scienceworld/oracle_paths.jsonl`, one row per
instance (rows: instance_id, simplification, gold_length, path): the simulator's gold path
shortened by `shorten.py` where it was longer than the budget, or pinned as it is by
`pin_gold.py` for every other instance of the step18 splits (the live gold path depends on
what the JVM loaded before). Each path was checked by a replay on the real simulator under
`simplification`; under another preset, and for an instance without a row, the oracle
replays the live gold."""

from __future__ import annotations

import functools
import json
import os

from lifebench.benchmarks.manifests import SPLITS_DIR, write_checksums

PATHS_FILE = SPLITS_DIR / "scienceworld" / "oracle_paths.jsonl"
# The preset the paths were shortened and checked under (CLIN's and STEP's).
SIMPLIFICATION = "easy"


@functools.lru_cache(maxsize=1)
def _rows() -> dict[str, dict]:
    if not PATHS_FILE.is_file():
        return {}
    return {row["instance_id"]: row for row in map(json.loads, PATHS_FILE.read_text().splitlines())}


def oracle_path(instance_id: str, simplification: str) -> list[str]:
    """The shortened path of the instance under `simplification`, or [] (replay the gold)."""
    row = _rows().get(instance_id)
    return list(row["path"]) if row and row["simplification"] == simplification else []


def save_oracle_path(instance_id: str, path: list[str], gold_length: int) -> None:
    """Add or replace the instance's row (rows kept sorted by id) and update the checksums."""
    rows = dict(_rows())
    rows[instance_id] = {"instance_id": instance_id, "simplification": SIMPLIFICATION,
                         "gold_length": gold_length, "path": list(path)}
    partial = PATHS_FILE.with_suffix(".partial")  # replaced at once: a reader never sees half
    partial.write_text("".join(json.dumps(rows[k]) + "\n" for k in sorted(rows)))
    os.replace(partial, PATHS_FILE)
    _rows.cache_clear()
    write_checksums()
