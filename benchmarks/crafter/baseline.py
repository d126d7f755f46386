"""Compare a run's Crafter results with the published random-agent baseline.

    python -m benchmarks.crafter.baseline RESULTS_DIR [--method random] [--official FILE]

(`--official` defaults to `$LIFEBENCH_DATA/crafter/crafter_noreward-random.json` when
that file exists.)

Prints the run's success rate per achievement (with a Wilson 95% interval), its Crafter
score with the bootstrap 95% interval, and the published random-agent score: 1.6 in the
Crafter paper (Hafner 2021) and 1.55 from its official score file. With `--official`, a
score file of the Crafter repository in its own format (`scores/crafter_noreward-random.json`:
a list of runs, each with `xs`, the step at which each episode ended, and one
`achievement_<name>` list of per-episode counts), the published rate of every achievement
is computed as the paper's analysis does (episodes ending within 1e6 steps, per seed, then
the mean over seeds) and printed beside the run's, with whether it falls inside the
run's interval.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from statistics import fmean
from typing import Optional

import numpy as np

from benchmarks.datadirs import lifebench_data
from harness.errors import UserError
from harness.results import load_records
from leaderboard.crafter import (ACHIEVEMENTS, bootstrap_interval, crafter_score,
                                 score_of_rates, unlocked_matrix)
from leaderboard.stats import wilson_interval

PAPER_SCORE = 1.6
OFFICIAL_FILE_SCORE = 1.55
PAPER_BUDGET = 1e6
OFFICIAL_FILE = "crafter_noreward-random.json"


def official_rates(path: Path, budget: float = PAPER_BUDGET) -> dict[str, float]:
    """Per-achievement success rates (%) from a Crafter score file, as the paper's
    analysis computes them."""
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
                        f"lists ({type(exc).__name__}: {exc})") from None
    return {a: fmean(seed[a] for seed in per_seed) for a in ACHIEVEMENTS}


def report(results: list[str], method: str, official: Optional[Path]) -> str:
    records = [r for r in load_records(results)
               if r.benchmark == "crafter" and r.method == method and r.is_result]
    if not records:
        raise UserError(f"no Crafter results of {method!r} in {', '.join(results)}")
    unlocked = unlocked_matrix(records)
    n = len(records)
    published = official_rates(official) if official else None
    lines = [f"Crafter, {method}: {n} episodes, mean length "
             f"{fmean(r.steps for r in records):.0f} steps",
             f"{'achievement':20s} {'this run %':>10s} {'95% interval':>16s}"
             + (f" {'published %':>12s}  inside" if published else "")]
    inside = 0
    for i, name in enumerate(ACHIEVEMENTS):
        wins = int(unlocked[:, i].sum())
        low, high = wilson_interval(wins, n)
        line = f"{name:20s} {100 * wins / n:10.2f} [{100 * low:6.2f}, {100 * high:6.2f}]"
        if published:
            ok = 100 * low - 1e-9 <= published[name] <= 100 * high + 1e-9
            inside += ok
            line += f" {published[name]:12.2f}  {'yes' if ok else 'NO'}"
        lines.append(line)
    score = crafter_score(records)
    low, high = bootstrap_interval(records)
    lines.append(f"score {score:.2f}, bootstrap 95% interval [{low:.2f}, {high:.2f}]")
    for label, value in (("Crafter paper", PAPER_SCORE), ("official score file", OFFICIAL_FILE_SCORE)):
        lines.append(f"  published ({label}): {value:.2f} -> "
                     f"{'inside' if low <= value <= high else 'OUTSIDE'} the interval")
    if published:
        rates = np.array([published[a] for a in ACHIEVEMENTS])
        lines.append(f"  published rates give score {float(score_of_rates(rates)):.2f}; "
                     f"{inside}/{len(ACHIEVEMENTS)} published rates inside this run's intervals")
    else:
        lines.append("  (per-achievement published rates: pass --official with the Crafter "
                     "repository's scores/crafter_noreward-random.json)")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.crafter.baseline")
    parser.add_argument("results", nargs="+")
    parser.add_argument("--method", default="random")
    parser.add_argument("--official", type=Path)
    args = parser.parse_args(argv)
    shared = lifebench_data("crafter")
    if args.official is None and shared is not None and (shared / OFFICIAL_FILE).is_file():
        args.official = shared / OFFICIAL_FILE
    try:
        print(report(args.results, args.method, args.official))
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
