"""The leaderboard's statistics at 100,000 episodes (issue 46): `lifebench leaderboard`
(with a baseline, so every cell of the grid table is tested) and `lifebench compare
--metric success --metric score` over the synthetic results of perf_view.py (four
benchmarks x five arms x 5 seeds x 1,000 instances), timed in this tree ("after") and in
an older revision ("before": by default the commit before the instance rule), in alternating
rounds so that both see the same machine. Target: after / before <= 1.25 for the
leaderboard.

The older revision is taken with `git archive` into a temporary folder laid out as the
installed package (`lifebench/`, `lifebench/benchmarks/`, ...) and put first on PYTHONPATH;
its entry points resolve there. Each round runs each command as a user would, a fresh
`python -m lifebench.cli` process (start, imports, reading the 100,000 records, the
statistics, the tables), timed as a whole; the grid spec's baseline (`random`) is in the
results' manifest, which both revisions read.

    python tests/perf/perf_leaderboard_stats.py [--before REV] [--rounds 3]
        [--episodes-per-stream 1000] [--target 1.25]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from perf_view import write_results  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BEFORE = "1f9a8b5"  # the commit before issue 46's instance rule
FOLDERS = {"harness": "lifebench", "benchmarks": "lifebench/benchmarks",
           "methods": "lifebench/methods", "leaderboard": "lifebench/leaderboard",
           "splits": "lifebench/splits"}
COMMANDS = {"leaderboard": ["leaderboard", "{dir}", "--no-plots"],
            "compare": ["compare", "{dir}", "--metric", "success", "--metric", "score",
                        "--format", "json"]}


def old_tree(revision: str, into: Path) -> Path:
    """The package of `revision` laid out as installed, under `into`."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, *FOLDERS],
                             check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        for member in tar.getmembers():
            top, _, rest = member.name.partition("/")
            if top in FOLDERS:
                member.name = f"{FOLDERS[top]}/{rest}" if rest else FOLDERS[top]
                tar.extract(member, into, filter="data")
    return into


def measure(results: Path, command: str, pythonpath: str | None) -> tuple[float, int]:
    """Seconds the command took, and what it found significant (▲/▼ in the grid table;
    comparisons at p_adjusted < 0.05)."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    else:
        env.pop("PYTHONPATH", None)
    argv = [a.replace("{dir}", str(results)) for a in COMMANDS[command]]
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "lifebench.cli", *argv], env=env, check=True,
                         capture_output=True, text=True).stdout
    seconds = time.perf_counter() - started
    if command == "leaderboard":
        grid = out.split("\n\n")[1]
        return seconds, grid.count("▲") + grid.count("▼")
    return seconds, sum(1 for c in json.loads(out)
                        if c["p_adjusted"] is not None and c["p_adjusted"] < 0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE, help=f"the older revision (default {BEFORE})")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--episodes-per-stream", type=int, default=1000)
    parser.add_argument("--target", type=float, default=1.25,
                        help="the leaderboard's after / before to meet (issue 46: 1.25 against "
                             "the commit before the instance rule; issue 60: 1.1 against 6b4e5eb, "
                             "the commit before its tests)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lifebench-perf-stats-") as tmp:
        results = Path(tmp) / "results"
        count = write_results(results, args.episodes_per_stream)
        manifest = json.loads((results / "manifest.json").read_text())
        manifest["runs"][0]["spec"] = {"baseline": "random"}  # every cell tested against it
        (results / "manifest.json").write_text(json.dumps(manifest))
        before = str(old_tree(args.before, Path(tmp) / "before"))
        imported = subprocess.run([sys.executable, "-c", "import lifebench; print(lifebench.__file__)"],
                                  env={**os.environ, "PYTHONPATH": before}, check=True,
                                  capture_output=True, text=True).stdout.strip()
        assert imported.startswith(before), f"the older revision did not load: {imported}"
        print(f"{count:,} synthetic episodes; before = {args.before}, after = this tree; "
              f"{args.rounds} alternating rounds, medians")
        ok = True
        for command in COMMANDS:
            runs: dict[str, list[tuple[float, int]]] = {"before": [], "after": []}
            for _ in range(args.rounds):
                runs["before"].append(measure(results, command, before))
                runs["after"].append(measure(results, command, None))
            median = {side: statistics.median(s for s, _ in rs) for side, rs in runs.items()}
            for side in ("before", "after"):
                print(f"lifebench {command:<12} {side:<7} {median[side]:6.2f} s   "
                      f"significant: {runs[side][0][1]}")
            ratio = median["after"] / median["before"]
            target = f" (target <= {args.target:g})" if command == "leaderboard" else ""
            print(f"lifebench {command:<12} after / before: {ratio:.2f}{target}")
            ok &= command != "leaderboard" or ratio <= args.target
        print("target met" if ok else "TARGET MISSED")


if __name__ == "__main__":
    main()
