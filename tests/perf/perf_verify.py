"""`lifebench verify` against re-running (issue 52): the scripted reference grid (every LLM
method on every benchmark, `specs/reference-llm.toml` and `specs/reference-contexts.toml`)
run against the local scripted server, exported with its answers, then replayed from them
by `lifebench verify` with no server running; both timed in one run, on the same workers.
Target: verifying takes no longer than the run. Prints both times and their ratio, the
answers' size and the verdict. No asserts: one run's figures.

    python tests/perf/perf_verify.py [--workers N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPECS = ("reference-llm.toml", "reference-contexts.toml")


def timed(command: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    return time.monotonic() - started, done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--keep", help="folder to keep the run and its submission in")
    args = parser.parse_args()
    lifebench = [sys.executable, "-m", "lifebench.cli"]
    with tempfile.TemporaryDirectory(prefix="perf-verify-") as scratch:
        folder = Path(args.keep or scratch)
        out, archive = folder / "grid", folder / "grid.tar.gz"
        ran = 0.0
        for spec in SPECS:
            seconds, done = timed([sys.executable, "-m", "lifebench.testing.fakeserver", "--policy",
                                   "scripted", "--", *lifebench, "run", str(ROOT / "specs" / spec),
                                   "--base-url", "{url}", "--no-trajectories", "--no-progress",
                                   "--workers", str(args.workers), "--out", str(out)])
            if done.returncode != 0:
                sys.exit(f"{spec} failed (exit {done.returncode}): {done.stderr[-2000:]}")
            ran += seconds
        exported = subprocess.run([*lifebench, "export", "--submission", str(archive), str(out)],
                                  capture_output=True, text=True, cwd=ROOT)
        if exported.returncode != 0:
            sys.exit(f"export failed: {exported.stderr}")
        verified, done = timed([*lifebench, "verify", str(archive), "--workers", str(args.workers)])
        print(f"scripted reference grid against the local server ({args.workers} workers): "
              f"{ran:.1f} s")
        print(f"lifebench verify of its submission, no server: {verified:.1f} s "
              f"(exit {done.returncode}) = {verified / ran:.2f} of the run (target: <= 1.00)")
        print(exported.stdout.strip())
        print(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-500:])


if __name__ == "__main__":
    main()
