"""TextWorld cooking games on disk: IGE's 25 games, and the splits lifebench generates.

`ige-cooking` comes from the data home's `textworld/ige_cooking/` (`$LIFEBENCH_DATA`, else
the per-user cache that `lifebench data fetch textworld` fills from the Intelligent
Go-Explore repository: see `remote.py`), or from `$LIFEBENCH_IGE_COOKING` (a folder holding
the games as that repository ships them). Generated splits live in the cache
(`$LIFEBENCH_CACHE`, default `~/.cache/lifebench`) under `textworld/<split>/`, each with a
`manifest.json` of its files' hashes (see `generate.py`).
"""

from __future__ import annotations

import os
from pathlib import Path

from lifebench.api import UserError
from lifebench.api.data import fetch_command, user_cache

from lifebench.benchmarks.datadirs import find_data_dir
from lifebench.benchmarks.manifests import sha256_file

IGE_SPLIT = "ige-cooking"
IGE_DATA_DIR = "textworld/ige_cooking"
IGE_DIR_ENV = "LIFEBENCH_IGE_COOKING"
FETCH = fetch_command("textworld")
# What tw-make writes; the game is played from the first two (the .ni is its source).
GAME_SUFFIXES = (".z8", ".json", ".ni")
PLAYED_SUFFIXES = (".z8", ".json")


def ige_upstream_dirs() -> list[Path]:
    return [Path(os.environ[IGE_DIR_ENV]).expanduser()] if os.environ.get(IGE_DIR_ENV) else []


def ige_games_dir() -> Path:
    return find_data_dir(
        IGE_DATA_DIR, ige_upstream_dirs(), lambda p: any(p.glob("*.z8")),
        f"the 25 cooking games of Intelligent Go-Explore are needed: run `{FETCH}`, or set "
        f"LIFEBENCH_DATA to a folder holding {IGE_DATA_DIR}/, or {IGE_DIR_ENV} to a folder "
        f"holding the games (.z8 and .json) from the Intelligent Go-Explore repository")


def cache_root() -> Path:
    return user_cache() / "textworld"


def verify_games(folder: Path, rows: list[dict], fix: str) -> None:
    """Every game file a split's rows list exists in `folder` with the pinned sha256."""
    for row in rows:
        for suffix, expected in row["sha256"].items():
            file = folder / f"{row['instance_id']}.{suffix}"
            if not file.is_file() or sha256_file(file) != expected:
                raise UserError(f"{file} is missing or is not the game the split was made "
                                f"with; {fix}")
