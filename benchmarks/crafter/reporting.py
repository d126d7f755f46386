"""Crafter's own leaderboard columns and tables, from records' `extra.achievements`.

Crafter's score (Hafner 2021): an achievement's success rate s_i is the percentage of
episodes in which it was unlocked at least once; the score is the geometric mean of
(1 + s_i) less one, `exp(mean_i ln(1 + s_i)) - 1`, in percent, over the 22 achievements.
Its confidence interval is a percentile bootstrap over instances (worlds: the unit that was
sampled; an instance's several seeds, which may replay one episode, are resampled
together), seeded so that a table prints the same interval every time.

Besides the score columns, the leaderboard gets a table of every achievement's rate per
cell and, for the `random` method at Crafter's full episode length, a comparison with the
published random agent: the paper's score (1.6), the official score file's (1.55), and,
when that file is in the data home (`crafter/crafter_noreward-random.json` under
`$LIFEBENCH_DATA`, else the per-user cache `lifebench data fetch crafter` fills from the
Crafter repository's `scores/`, pinned by sha256), each achievement's published rate
beside ours with its Wilson interval. A file there whose sha256 is not the pinned one is
still read, and the table says it is not the published file.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from pathlib import Path
from statistics import fmean
from typing import Optional, Sequence

import numpy as np

from lifebench.api import EpisodeRecord, Metric, Table, UserError
from lifebench.api.data import DataFile, RemoteData, Upstream, data_home, fetch_command
from lifebench.api.comparison import n_label
from lifebench.api.stats import bounded_interval

ACHIEVEMENTS = (
    "collect_coal", "collect_diamond", "collect_drink", "collect_iron", "collect_sapling",
    "collect_stone", "collect_wood", "defeat_skeleton", "defeat_zombie", "eat_cow",
    "eat_plant", "make_iron_pickaxe", "make_iron_sword", "make_stone_pickaxe",
    "make_stone_sword", "make_wood_pickaxe", "make_wood_sword", "place_furnace",
    "place_plant", "place_stone", "place_table", "wake_up",
)
BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 0
PAPER_SCORE = 1.6          # the Crafter paper's random agent
OFFICIAL_FILE_SCORE = 1.55  # the same agent's official score file
PAPER_BUDGET = 1e6         # the paper scores the episodes that end within 1e6 steps
OFFICIAL_FILE = "crafter_noreward-random.json"
# The score file as published in danijar/crafter (`scores/`), at a commit that holds it.
SCORES_COMMIT = "d751a98bbca8fd4494e67ea4326dca562f0800d4"
OFFICIAL_URL = f"https://raw.githubusercontent.com/danijar/crafter/{SCORES_COMMIT}/scores/{OFFICIAL_FILE}"
OFFICIAL_SHA256 = "05c69c6212c9cc7ab21927ec32560a03c64def0eb0c517c645d87539d0746d7f"
DATA_FOLDER = "crafter"


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
    """Percentile bootstrap interval of the score, resampling instances (each with the
    mean over its episodes: the instance is the unit)."""
    per_instance = _instance_rates(records)
    n = len(per_instance)
    if n < 2:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, n, size=(samples, n))
    scores = score_of_rates(100 * per_instance[picks].mean(axis=1))  # samples x achievements
    tail = (1 - confidence) / 2
    low, high = np.quantile(scores, [tail, 1 - tail])
    return (float(low), float(high))


def _instance_rates(records: Sequence[EpisodeRecord]) -> np.ndarray:
    """Per instance (rows, in order of first appearance), the share of its episodes that
    unlocked each achievement (columns)."""
    unlocked = unlocked_matrix(records)
    rows: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(records):
        rows[r.instance_id].append(i)
    return np.array([unlocked[i].mean(axis=0) for i in rows.values()]).reshape(
        len(rows), len(ACHIEVEMENTS))


def score_interval_text(records: Sequence[EpisodeRecord]) -> str:
    low, high = bootstrap_interval(records)
    return "—" if math.isnan(low) else f"[{low:.2f}, {high:.2f}]"


CRAFTER_SCORE = Metric("crafter_score", "Crafter score", crafter_score)
CRAFTER_SCORE_CI = Metric("crafter_score_ci", "Crafter score 95% CI", score_interval_text)


def _cells(records: Sequence[EpisodeRecord]) -> dict[str, list[EpisodeRecord]]:
    """Records by leaderboard cell, labelled "split method [model] [config] [budget N]"."""
    cells: dict[tuple, list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        cells[(r.split, r.method, r.model, r.method_config_hash, r.benchmark_config_hash,
               r.budget)].append(r)
    configs = defaultdict(set)
    for split, method, model, config, _, _ in cells:
        configs[(split, method, model)].add(config)
    out = {}
    for (split, method, model, config, bench_config, budget), rs in sorted(
            cells.items(), key=lambda kv: tuple(str(k) for k in kv[0])):
        label = [split, method + (f" [{config[:6]}]" if len(configs[(split, method, model)]) > 1 else "")]
        label += [model] if model else []
        label += [f"[{bench_config[:6]}]"] if bench_config else []
        label += [f"budget {budget}"] if budget is not None else []
        out[" ".join(label)] = rs
    return out


def achievement_tables(records: Sequence[EpisodeRecord]) -> list[Table]:
    """Success rate (%) of every achievement, a column per cell, with the score and its
    interval in the last rows."""
    groups = _cells(records)
    if not groups:
        return []
    columns = {label: success_rates(unlocked_matrix(rs)) for label, rs in groups.items()}
    rows = [[name, *(f"{rates[i]:.1f}" for rates in columns.values())]
            for i, name in enumerate(ACHIEVEMENTS)]
    rows.append(["score", *(f"{float(score_of_rates(r)):.2f}" for r in columns.values())])
    rows.append(["score 95% CI", *(score_interval_text(groups[label]) for label in columns)])
    return [Table.of("Crafter: success rate per achievement (% of episodes)",
                     ["achievement", *columns], rows)]


def official_rates(path: Path, budget: float = PAPER_BUDGET) -> dict[str, float]:
    """Per-achievement success rates (%) from a Crafter score file (a list of runs, each with
    `xs`, the step at which each episode ended, and per-episode `achievement_<name>` counts),
    as the paper's analysis computes them: per seed, the episodes that end within `budget`
    steps, then the mean over seeds."""
    try:
        runs = json.loads(Path(path).read_text())
        if isinstance(runs, dict):
            runs = [runs]
        per_seed = []
        for run in runs:
            episodes = int((np.array(run["xs"]) <= budget).sum())
            per_seed.append({a: 100 * float((np.array(run[f"achievement_{a}"][:episodes]) >= 1).mean())
                             for a in ACHIEVEMENTS})
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UserError(f"{path} is not a Crafter score file with per-episode achievement "
                        f"lists ({type(exc).__name__}: {exc}); replace it with the Crafter "
                        f"repository's scores/{OFFICIAL_FILE}") from None
    return {a: fmean(seed[a] for seed in per_seed) for a in ACHIEVEMENTS}


def official_file() -> Optional[Path]:
    """The published score file in the data home, when it is there."""
    path = data_home() / DATA_FOLDER / OFFICIAL_FILE
    return path if path.is_file() else None


def is_published_file(path: Path) -> bool:
    return hashlib.sha256(path.read_bytes()).hexdigest() == OFFICIAL_SHA256


def score_file_data() -> RemoteData:
    """The published score file, for `lifebench data` (the benchmark runs without it): what
    `CrafterBenchmark.remote_data` returns."""
    upstream = Upstream(
        name=f"the Crafter repository (danijar/crafter) at commit {SCORES_COMMIT[:7]}",
        checked=False,
        note=f"scores/{OFFICIAL_FILE} at this commit was seen in a stored public copy of the "
             f"repository (the same length and first bytes as ours); it was not fetched from "
             f"here, so the sha256 pin is that of this workspace's copy")
    return RemoteData(
        benchmark="crafter", folder=DATA_FOLDER, what="Crafter's published random-agent scores",
        files=(DataFile(target=OFFICIAL_FILE, sha256=OFFICIAL_SHA256, url=OFFICIAL_URL),),
        upstream=upstream, optional=True)


def published_tables(records: Sequence[EpisodeRecord]) -> list[Table]:
    """The random agent at Crafter's full length, beside the published random agent."""
    comparable = [r for r in records if r.method == "random" and not r.benchmark_config_hash
                  and r.budget is None]
    path = official_file()
    published = official_rates(path) if path else None
    source = _source(path)
    tables = []
    for label, rs in _cells(comparable).items():
        tables.append(_comparison(label, rs, published, source))
    return tables


def _source(path: Optional[Path]) -> str:
    """Where the published rates came from, for the table's title."""
    if path is None:
        return f"per-achievement published rates: run `{fetch_command('crafter')}`"
    if is_published_file(path):
        return f"published rates from {OFFICIAL_FILE}"
    return (f"rates from {path}, which is not the published {OFFICIAL_FILE}: its sha256 "
            f"differs; `{fetch_command('crafter', force=True)}` gets it")


def _comparison(label: str, records: list[EpisodeRecord], published: Optional[dict[str, float]],
                source: str) -> Table:
    unlocked = unlocked_matrix(records)
    per_instance = _instance_rates(records)
    headers = ["achievement", "this run %", "95% interval"]
    headers += ["published %", "inside"] if published else []
    rows, inside = [], 0
    for i, name in enumerate(ACHIEVEMENTS):
        # over instances (Wilson's where each has one episode)
        low, high = bounded_interval(list(per_instance[:, i]), 0.0, 1.0)
        row = [name, f"{100 * unlocked[:, i].mean():.2f}", f"[{100 * low:.2f}, {100 * high:.2f}]"]
        if published:
            ok = 100 * low - 1e-9 <= published[name] <= 100 * high + 1e-9
            inside += ok
            row += [f"{published[name]:.2f}", "yes" if ok else "NO"]
        rows.append(row)
    score = crafter_score(records)
    low, high = bootstrap_interval(records)
    blank = ["", ""] if published else []
    rows.append(["score", f"{score:.2f}", f"[{low:.2f}, {high:.2f}]", *blank])
    for what, value in (("published score (paper)", PAPER_SCORE),
                        ("published score (score file)", OFFICIAL_FILE_SCORE)):
        rows.append([what, f"{value:.2f}", "inside" if low <= value <= high else "OUTSIDE", *blank])
    if published:
        rates = np.array([published[a] for a in ACHIEVEMENTS])
        rows.append(["published rates' score", f"{float(score_of_rates(rates)):.2f}",
                     f"{inside}/{len(ACHIEVEMENTS)} rates inside", "", ""])
    n = n_label(len(per_instance), len(records))
    return Table.of(f"Crafter {label} (n={n}, mean length "
                    f"{fmean(r.steps for r in records):.0f}) vs the published random agent "
                    f"({source})", headers, rows)
