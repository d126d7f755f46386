"""Build the Plancraft split manifests from the installed package (plancraft==0.4.9).

    python -m lifebench.benchmarks.plancraft.build_splits

Each manifest lists the split's instances in the package's order with the metadata the
leaderboard groups by, plus the source file's sha256 so a different package version is
caught at load time instead of silently changing the benchmark.
"""

from __future__ import annotations

from lifebench.benchmarks.plancraft.data import SPLIT_FILES, load_raw_examples, split_file
from lifebench.benchmarks.manifests import sha256_file, write_checksums, write_manifest


def build() -> None:
    for split in SPLIT_FILES:
        source_sha = sha256_file(split_file(split))
        rows = [{
            "instance_id": ex["id"],
            "target": ex["target"],
            "complexity_split": ex["complexity_split"],
            "impossible": bool(ex["impossible"]),
            "source_sha256": source_sha,
        } for ex in load_raw_examples(split)]
        print(f"{split}: {len(rows)} instances -> {write_manifest('plancraft', split, rows)}")
    print(f"checksums -> {write_checksums()}")


if __name__ == "__main__":
    build()
