"""Plancraft's own leaderboard metric: how well a method tells impossible tasks apart."""

from __future__ import annotations

from typing import Sequence

from lifebench.api import EpisodeRecord, Metric
from lifebench.api.stats import binary_f1


def impossible_f1(records: Sequence[EpisodeRecord]) -> float:
    """F1 of declaring a task impossible: positives are the truly impossible tasks."""
    return binary_f1([bool(r.extra.get("impossible_predicted")) for r in records],
                     [bool(r.extra.get("impossible_truth")) for r in records])


IMPOSSIBLE_F1 = Metric("impossible_f1", "impossible F1", impossible_f1)
