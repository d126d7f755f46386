"""Where IGE's 25 cooking games come from: the Intelligent Go-Explore repository
(conglu1997/intelligent-go-explore), folder `textworld/tw_games/the_cooking_game/`, at a
pinned commit; each game's `.z8` and `.json` (what is played) is fetched and checked
against the sha256 the `ige-cooking` manifest pins.

Why not regenerate them with `tw-make` (offline, nothing to download): textworld 1.7 does
not make the same games. Each game's `.json` holds its generation settings and seed
(`settings.seed`, not the number in its file name); `tw-make tw-cooking --recipe 5 --take 5
--go 12 --open --cook --cut --split test --seed <settings.seed>` with `PYTHONHASHSEED=0`
gives the same walkthrough, metadata and objective, but its world has one more fact
(`closed(oven_0)`: "The oven_0 is closed." in the Inform 7 source), its quests differ, and
its `.z8` differs in thousands of bytes besides the serial number; textworld 1.6.2 does the
same (the README's "Where the games come from" has the measurements).
"""

from __future__ import annotations

from lifebench.api.data import DataFile, RemoteData, Upstream

from lifebench.benchmarks.manifests import read_manifest
from lifebench.benchmarks.textworld.data import IGE_DATA_DIR, IGE_SPLIT, ige_upstream_dirs

REPOSITORY = "conglu1997/intelligent-go-explore"
COMMIT = "99c0aefa161a547f09f0ea962b5db0df6925a2c8"
FOLDER = "textworld/tw_games/the_cooking_game"
RAW_URL = f"https://raw.githubusercontent.com/{REPOSITORY}/{COMMIT}/{FOLDER}/"

UPSTREAM = Upstream(
    name=f"the Intelligent Go-Explore repository ({REPOSITORY}) at commit {COMMIT[:7]}",
    checked=False,
    note=f"the folder {FOLDER}/ at this commit, with these 75 file names, was seen in a "
         f"stored public copy of the repository (a game's .ni and .json there have the "
         f"length and text of ours); nothing was fetched from raw.githubusercontent.com from "
         f"here, so the sha256 pins are those of this workspace's copy")


def remote_data() -> RemoteData:
    files = tuple(DataFile(target=f"{row['instance_id']}.{suffix}", sha256=sha256,
                           url=f"{RAW_URL}{row['instance_id']}.{suffix}")
                  for row in read_manifest("textworld", IGE_SPLIT)
                  for suffix, sha256 in sorted(row["sha256"].items()))
    return RemoteData(
        benchmark="textworld", folder=IGE_DATA_DIR,
        what=f"IGE's {len(files) // 2} cooking games", files=files, upstream=UPSTREAM,
        also_read_from=tuple(ige_upstream_dirs()))
