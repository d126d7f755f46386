"""Where ALFWorld's games come from: the archive of alfworld's release 0.4.0 that alfworld
0.4.2's `alfworld-download` fetches (`json_2.1.2_tw-pddl.zip`, which unpacks into
`json_2.1.1/`), read with lifebench's own bounded download instead of that script (which
has no timeout and no hashes, fetches files lifebench does not use, and keeps older games
unless forced). Only the games the split manifests list are unpacked, each checked against
its manifest row: the file's sha256, or else the same game (`game_hash`) with a
walkthrough of the same length. The loader reads neither `traj_data.json` nor `logic/`:
each game file embeds its domain and grammar.
"""

from __future__ import annotations

import functools

from lifebench.api.data import DataArchive, DataFile, RemoteData, Upstream

from lifebench.benchmarks.alfworld.data import GAME_FILE, JSON_DIR, SPLITS, game_problem, upstream_dirs
from lifebench.benchmarks.manifests import read_manifest

# The URL is alfworld 0.4.2's (its `alfworld-download` script, TW_PDDL_FILES_URL).
ARCHIVE_URL = "https://github.com/alfworld/alfworld/releases/download/0.4.0/json_2.1.2_tw-pddl.zip"
ARCHIVE_MAX_BYTES = 4 << 30

UPSTREAM = Upstream(
    name="alfworld's release 0.4.0 (json_2.1.2_tw-pddl.zip, as alfworld 0.4.2 downloads it)",
    checked=False,
    note="the URL is the one in alfworld 0.4.2's alfworld-download; it was not fetched from "
         "here, so the archive's sha256 is not pinned: each game unpacked from it is "
         "checked against the split manifests instead")


@functools.lru_cache(maxsize=1)
def _rows() -> dict[str, dict]:
    """Every split's manifest rows by the game's path in the data folder."""
    return {f"{JSON_DIR}/{split}/{row['instance_id']}/{GAME_FILE}": row
            for split in SPLITS for row in read_manifest("alfworld", split)}


def _check(file: DataFile, data: bytes) -> str | None:
    return game_problem(data, _rows()[file.target])


def remote_data() -> RemoteData:
    files = tuple(DataFile(target=target, sha256=row["file_sha256"], member=target,
                           content_sha256=row["game_sha256"])
                  for target, row in _rows().items())
    return RemoteData(
        benchmark="alfworld", folder="alfworld", what=f"ALFWorld's {len(files)} games",
        files=files, upstream=UPSTREAM,
        archive=DataArchive(url=ARCHIVE_URL, sha256=None, max_bytes=ARCHIVE_MAX_BYTES),
        also_read_from=tuple(upstream_dirs()), check=_check)
