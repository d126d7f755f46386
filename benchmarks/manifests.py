"""Split manifests: the committed JSONL files of `lifebench.splits` (the repository's
`splits/` folder), read by the benchmarks and written by their `build_splits` scripts."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import lifebench.splits
from lifebench.api import UserError

SPLITS_DIR = Path(lifebench.splits.__file__).resolve().parent


def manifest_path(benchmark: str, split: str) -> Path:
    return SPLITS_DIR / benchmark / f"{split}.jsonl"


def read_manifest(benchmark: str, split: str) -> list[dict]:
    """The manifest's rows in order. Raises UserError when it is missing."""
    path = manifest_path(benchmark, split)
    if not path.is_file():
        raise UserError(f"split manifest {path} is missing; rebuild it with "
                        f"`python -m lifebench.benchmarks.{benchmark.replace('-', '_')}.build_splits`")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_manifest(benchmark: str, split: str, rows: list[dict]) -> Path:
    path = manifest_path(benchmark, split)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    return path


def sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def write_checksums() -> Path:
    """`checksums.sha256` in sha256sum's format over every manifest."""
    lines = [f"{sha256_file(p)}  {p.relative_to(SPLITS_DIR).as_posix()}\n"
             for p in sorted(SPLITS_DIR.glob("*/*.jsonl"))]
    out = SPLITS_DIR / "checksums.sha256"
    out.write_text("".join(lines))
    return out
