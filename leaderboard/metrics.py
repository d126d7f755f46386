"""Benchmark-specific leaderboard metrics, named by a benchmark's `extra_metrics`."""

from __future__ import annotations

from statistics import fmean
from typing import Callable

from harness.records import EpisodeRecord
from leaderboard.crafter import crafter_score, score_interval_text
from leaderboard.stats import f1_score


def impossible_f1(records: list[EpisodeRecord]) -> float:
    """F1 of declaring a task impossible (Plancraft): positives are truly impossible tasks."""
    tp = fp = fn = 0
    for r in records:
        predicted = bool(r.extra.get("impossible_predicted"))
        truth = bool(r.extra.get("impossible_truth"))
        tp += predicted and truth
        fp += predicted and not truth
        fn += truth and not predicted
    return f1_score(tp, fp, fn)


def normalized_score(records: list[EpisodeRecord]) -> float:
    """Mean of points over the game's maximum (TextWorld), so games of different sizes weigh
    alike."""
    return fmean(float(r.extra.get("normalized_score", 0.0)) for r in records)


# name -> (column header, function of a cell's records: a number, or text shown as is)
EXTRA_METRICS: dict[str, tuple[str, Callable[[list[EpisodeRecord]], float | str]]] = {
    "impossible_f1": ("impossible F1", impossible_f1),
    "normalized_score": ("normalized score", normalized_score),
    "crafter_score": ("Crafter score", crafter_score),
    "crafter_score_ci": ("score 95% CI", score_interval_text),
}
