"""Crafter's official score (Hafner 2021), from records' `extra.achievements`.

An achievement's success rate s_i is the percentage of episodes in which it was unlocked at
least once; the score is the geometric mean of (1 + s_i) less one:
`exp(mean_i ln(1 + s_i)) - 1`, in percent, over Crafter's 22 achievements. Its confidence
interval is a percentile bootstrap over episodes (the unit that was sampled).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from harness.records import EpisodeRecord

ACHIEVEMENTS = (
    "collect_coal", "collect_diamond", "collect_drink", "collect_iron", "collect_sapling",
    "collect_stone", "collect_wood", "defeat_skeleton", "defeat_zombie", "eat_cow",
    "eat_plant", "make_iron_pickaxe", "make_iron_sword", "make_stone_pickaxe",
    "make_stone_sword", "make_wood_pickaxe", "make_wood_sword", "place_furnace",
    "place_plant", "place_stone", "place_table", "wake_up",
)
BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 0


def unlocked_matrix(records: Sequence[EpisodeRecord]) -> np.ndarray:
    """Episodes x achievements: 1 where the episode unlocked it."""
    return np.array([[float(r.extra.get("achievements", {}).get(a, 0) > 0) for a in ACHIEVEMENTS]
                     for r in records]).reshape(len(records), len(ACHIEVEMENTS))


def success_rates(unlocked: np.ndarray) -> np.ndarray:
    """Per achievement, the percentage of episodes that unlocked it."""
    return 100 * unlocked.mean(axis=0)


def score_of_rates(rates: np.ndarray) -> np.ndarray:
    """Crafter's score of success rates in percent (works along the last axis)."""
    return np.exp(np.log1p(rates).mean(axis=-1)) - 1


def crafter_score(records: Sequence[EpisodeRecord]) -> float:
    if not records:
        return math.nan
    return float(score_of_rates(success_rates(unlocked_matrix(records))))


def bootstrap_interval(records: Sequence[EpisodeRecord], confidence: float = 0.95,
                       samples: int = BOOTSTRAP_SAMPLES, seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """Percentile bootstrap interval of the score, resampling episodes; seeded, so a table
    prints the same interval every time."""
    unlocked = unlocked_matrix(records)
    n = len(unlocked)
    if n < 2:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, n, size=(samples, n))
    rates = 100 * unlocked[picks].mean(axis=1)  # samples x achievements
    scores = score_of_rates(rates)
    tail = (1 - confidence) / 2
    low, high = np.quantile(scores, [tail, 1 - tail])
    return (float(low), float(high))


def score_interval_text(records: Sequence[EpisodeRecord]) -> str:
    low, high = bootstrap_interval(records)
    return "—" if math.isnan(low) else f"[{low:.2f}, {high:.2f}]"


def achievement_table(groups: dict[str, Sequence[EpisodeRecord]]) -> tuple[list[str], list[list[str]]]:
    """Success rate (%) of every achievement, one column per group of episodes (a cell of
    the leaderboard), with the score and its interval in the last rows."""
    columns = {label: success_rates(unlocked_matrix(rs)) for label, rs in groups.items() if rs}
    headers = ["achievement", *columns]
    rows = [[name, *(f"{rates[i]:.1f}" for rates in columns.values())]
            for i, name in enumerate(ACHIEVEMENTS)]
    rows.append(["score", *(f"{float(score_of_rates(r)):.2f}" for r in columns.values())])
    rows.append(["score 95% CI", *(score_interval_text(groups[label]) for label in columns)])
    return headers, rows
