"""The LLM part of `make bench` (issue 32): the smoke grid, every method on every available
benchmark's headline split, BENCH_LLM_LIMIT instances each, Crafter at 2000 steps,
preparation at smoke scale, against a zero-latency OpenAI-compatible server (the built-in
scripted model) in a fresh results directory. Prints the wall time, its ratio to the
20-minute target, the episodes recorded and the cells refused. No asserts: one run's figures.

    python tests/perf/perf_bench_grid.py [--limit 2] [--workers N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET_S = 20 * 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=2)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--keep", help="results directory to keep (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="perf-bench-grid-") as scratch:
        out = Path(args.keep or Path(scratch) / "bench")
        command = [sys.executable, "-m", "lifebench.testing.fakeserver", "--policy", "scripted",
                   "--", sys.executable, "-m", "lifebench.cli", "grid", str(ROOT / "specs" / "grid.toml"),
                   "--smoke", "--limit", str(args.limit), "--benchmark-arg", "crafter.length=2000",
                   "--model", "scripted", "--base-url", "{url}", "--cache", "off",
                   "--allow-unconfined-code", "--no-progress", "--workers", str(args.workers),
                   "--out", str(out)]
        started = time.monotonic()
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
        seconds = time.monotonic() - started
        if done.returncode != 0:
            print(done.stderr[-3000:], file=sys.stderr)
            sys.exit(f"the smoke grid failed (exit {done.returncode})")
        records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
        runs = json.loads((out / "manifest.json").read_text())["runs"]
        refused = runs[-1].get("refused") or []
        cells = {(r["method"], r["benchmark"]) for r in records}
        print(f"smoke grid, LLM part (limit {args.limit}, {args.workers} workers): "
              f"{seconds / 60:.1f} min = {seconds / TARGET_S:.2f} of the 20-min target")
        print(f"{len(records)} episodes in {len(cells)} cells; {len(refused)} cells refused; "
              f"{done.stdout.strip().splitlines()[-1]}")


if __name__ == "__main__":
    main()
