"""Whether a folder holds a benchmark's files: each one's pinned sha256, or the benchmark's
own check of its content (`RemoteData.check`). Problems are counted by kind, so that a
thousand old games are one line naming the first."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from lifebench.api.data import DataFile, RemoteData

MISSING = "missing"
DIFFERS = "not the pinned file (its sha256 differs)"


def problem_of(remote: RemoteData, file: DataFile, data: bytes,
               sha256: Optional[str] = None) -> Optional[str]:
    """None when `data` is the file (its pinned bytes, or content the benchmark accepts);
    else what is wrong, in a few words."""
    if (sha256 or hashlib.sha256(data).hexdigest()) == file.sha256:
        return None
    return remote.check(file, data) if remote.check else DIFFERS


@dataclass(frozen=True)
class FileCheck:
    file: DataFile
    problem: Optional[str]  # None: verified; MISSING: not there


@dataclass(frozen=True)
class FolderCheck:
    folder: Path
    files: tuple[FileCheck, ...]

    @property
    def verified(self) -> int:
        return sum(c.problem is None for c in self.files)

    @property
    def complete(self) -> bool:
        return self.verified == len(self.files)

    @property
    def present(self) -> int:
        return sum(c.problem != MISSING for c in self.files)

    def unverified(self) -> list[DataFile]:
        return [c.file for c in self.files if c.problem is not None]

    def problems(self) -> list[str]:
        """One phrase per kind of problem: "3 missing (e.g. a.z8)", "2 without a walkthrough
        (...) (e.g. x/game.tw-pddl)", missing files last."""
        counts = Counter(c.problem for c in self.files if c.problem is not None)
        first = {}
        for c in self.files:
            first.setdefault(c.problem, c.file.target)
        kinds = sorted(counts, key=lambda p: (p == MISSING, -counts[p]))
        return [f"{counts[p]} {p} (e.g. {first[p]})" for p in kinds]


def check_folder(remote: RemoteData, folder: Path) -> FolderCheck:
    checks = []
    for file in remote.files:
        path = folder / file.target
        try:
            data = path.read_bytes() if path.is_file() else None
        except OSError:
            data = None
        problem = MISSING if data is None else problem_of(remote, file, data)
        checks.append(FileCheck(file, problem))
    return FolderCheck(folder, tuple(checks))


def where_found(remote: RemoteData) -> Optional[FolderCheck]:
    """The first folder readers look in that holds any of the files, checked; None when
    none does."""
    for folder in remote.locations():
        if any((folder / f.target).is_file() for f in remote.files):
            return check_folder(remote, folder)
    return None
