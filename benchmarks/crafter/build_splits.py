"""Build the Crafter split manifests: one instance per world seed.

    python -m lifebench.benchmarks.crafter.build_splits

`seeds-100` is world seeds 0..99 and `seeds-1000` 0..999; `seeds-support` is world seeds
1000..1099, outside both (what methods that learn before testing learn from); instance
`world-S` is the world crafter's `Env(seed=S)` generates.
"""

from __future__ import annotations

from lifebench.benchmarks.manifests import write_checksums, write_manifest

# split -> its world seeds
SEEDS = {"seeds-100": range(100), "seeds-1000": range(1000), "seeds-support": range(1000, 1100)}


def build() -> None:
    for split, seeds in SEEDS.items():
        rows = [{"instance_id": f"world-{s}", "world_seed": s} for s in seeds]
        print(f"{split}: {len(rows)} instances -> {write_manifest('crafter', split, rows)}")
    print(f"checksums -> {write_checksums()}")


if __name__ == "__main__":
    build()
