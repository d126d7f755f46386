"""Build the `ige-cooking` manifest from IGE's 25 TextWorld cooking games.

    LIFEBENCH_DATA=../shared/data python -m lifebench.benchmarks.textworld.build_splits

One row per game, sorted by file name, with the sha256 of its .z8 and .json (the adapter
runs only these exact files), its maximum score and its walkthrough's length.
"""

from __future__ import annotations

import json

from lifebench.benchmarks.textworld.data import PLAYED_SUFFIXES, IGE_SPLIT, ige_games_dir
from lifebench.benchmarks.manifests import sha256_file, write_checksums, write_manifest


def rows() -> list[dict]:
    folder = ige_games_dir()
    out = []
    for z8 in sorted(folder.glob("*.z8")):
        meta = json.loads(z8.with_suffix(".json").read_text())["metadata"]
        out.append({"instance_id": z8.stem, "max_score": meta["max_score"],
                    "walkthrough_length": len(meta["walkthrough"]),
                    "ingredients": len(meta["ingredients"]), "uuid": meta["uuid"],
                    "sha256": {s.lstrip("."): sha256_file(z8.with_suffix(s)) for s in PLAYED_SUFFIXES}})
    return out


def build() -> None:
    manifest = rows()
    print(f"{IGE_SPLIT}: {len(manifest)} instances -> "
          f"{write_manifest('textworld', IGE_SPLIT, manifest)}")
    print(f"checksums -> {write_checksums()}")


if __name__ == "__main__":
    build()
