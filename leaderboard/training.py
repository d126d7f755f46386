"""The training curves of a group's streams (`extra.training_curves`, `lifebench.api.training`),
for the figures and the results site: per arm and seed, those of the stream's first record
that carries them, checked. A malformed value is left out, and said so in one line each on
stderr (the first few: results from outside may hold many)."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from lifebench.api.records import EpisodeRecord
from lifebench.api.training import TRAINING_CURVES, TrainingCurves
from lifebench.leaderboard.grouping import Arm

MAX_SAID = 5  # skipped values said on stderr; the rest are counted


@dataclass(frozen=True)
class StreamCurves:
    arm: Arm
    label: str  # the arm's label in its group
    seed: int
    curves: TrainingCurves


@dataclass(frozen=True)
class Skipped:
    where: str  # group, arm and seed
    reason: str  # never the value itself: it comes from outside

    def __str__(self) -> str:
        return f"{self.where}: extra.{TRAINING_CURVES} left out ({self.reason})"


def stream_curves(title: str, raw: dict[Arm, list[EpisodeRecord]], labels: dict[Arm, str]
                  ) -> tuple[list[StreamCurves], list[Skipped]]:
    """The valid curves of the group's streams (every trial's records: `raw`), by label and
    seed, and the streams whose value is malformed."""
    first: dict[tuple[Arm, int], EpisodeRecord] = {}
    for arm, records in raw.items():
        carrying = [r for r in records if TRAINING_CURVES in r.extra]
        for r in sorted(carrying, key=lambda r: (r.episode_index, r.trial)):
            first.setdefault((arm, r.seed), r)
    found, skipped = [], []
    for (arm, seed), record in sorted(first.items(), key=lambda kv: (labels[kv[0][0]], kv[0][1])):
        try:
            found.append(StreamCurves(arm, labels[arm], seed,
                                      TrainingCurves.from_value(record.extra[TRAINING_CURVES])))
        except ValueError as exc:
            skipped.append(Skipped(f"{title}, {labels[arm]}, seed {seed}", str(exc)))
    return found, skipped


def say_skipped(skipped: list[Skipped]) -> None:
    for s in skipped[:MAX_SAID]:
        print(f"note: {s}", file=sys.stderr)
    if len(skipped) > MAX_SAID:
        print(f"note: and {len(skipped) - MAX_SAID} more streams' extra.{TRAINING_CURVES} "
              f"left out, malformed", file=sys.stderr)
