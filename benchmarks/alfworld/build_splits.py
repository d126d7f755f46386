"""Build the ALFWorld split manifests from the games in the data folder.

    LIFEBENCH_DATA=../shared/data python -m lifebench.benchmarks.alfworld.build_splits

One row per trial folder holding a `game.tw-pddl`, sorted by instance id (the trial path
relative to the split). As alfworld's own loader does, games marked unsolvable and
movable-receptacle or sliced-object trials are left out (none of the 474 here is). Each
row pins the game's content hash, which the adapter checks before running.
"""

from __future__ import annotations

from lifebench.benchmarks.alfworld.data import (GAME_FILE, SPLITS, game_hash, read_game, split_dir,
                                      task_metadata, walkthrough)
from lifebench.benchmarks.manifests import sha256_file, write_checksums, write_manifest


def rows(split: str) -> list[dict]:
    root = split_dir(split)
    out, skipped = [], 0
    for path in sorted(root.glob(f"*/*/{GAME_FILE}")):
        instance_id = path.parent.relative_to(root).as_posix()
        game = read_game(path)
        if str(game.get("solvable", True)) != "True" or "movable" in instance_id \
                or "Sliced" in instance_id:
            skipped += 1
            continue
        out.append({"instance_id": instance_id, **task_metadata(instance_id),
                    "walkthrough_length": len(walkthrough(game)),
                    "game_sha256": game_hash(game), "file_sha256": sha256_file(path)})
    if skipped:
        print(f"{split}: left out {skipped} unsolvable, movable or sliced games")
    return out


def build() -> None:
    for split in SPLITS:
        manifest = rows(split)
        print(f"{split}: {len(manifest)} instances -> {write_manifest('alfworld', split, manifest)}")
    print(f"checksums -> {write_checksums()}")


if __name__ == "__main__":
    build()
