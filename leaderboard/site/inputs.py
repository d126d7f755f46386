"""What the site is made of: the records of one or more results directories (deduplicated
as the leaderboard does, each remembering its directory), every infrastructure failure ever
recorded (those a retry resolved too) and the run manifests."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lifebench.api.errors import UserError
from lifebench.api.records import EpisodeRecord
from lifebench.store.records_file import deduplicate, read_directory
from lifebench.leaderboard.loading import read_manifests


@dataclass
class SiteInputs:
    directories: list[Path]
    records: list[EpisodeRecord]  # one per key, as `lifebench leaderboard` counts them
    failures: list[EpisodeRecord]  # every failure record written, resolved or not
    manifests: list[dict[str, Any]]  # each run's manifest entry, with its "directory" index
    directory_of: dict[int, int] = field(default_factory=dict)  # id(record) -> directory

    def directory(self, record: EpisodeRecord) -> int:
        return self.directory_of[id(record)]


def load_inputs(directories: list[str | Path]) -> SiteInputs:
    paths = [Path(d) for d in directories]
    everything: list[EpisodeRecord] = []
    directory_of: dict[int, int] = {}
    manifests: list[dict[str, Any]] = []
    for index, path in enumerate(paths):
        found = read_directory(path)
        for record in found:
            directory_of[id(record)] = index
        everything.extend(found)
        folder = path if path.is_dir() else path.parent  # DIR or DIR/episodes.jsonl
        manifests += [{**m, "directory": index} for m in read_manifests(folder)]
    if not everything:
        raise UserError(f"no episode records in {', '.join(map(str, paths))}; "
                        f"run `lifebench run ... --out DIR` first")
    return SiteInputs(directories=paths, records=deduplicate(everything),
                      failures=[r for r in everything if not r.is_result],
                      manifests=manifests, directory_of=directory_of)
