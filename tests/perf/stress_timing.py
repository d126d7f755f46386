"""The timing-sensitive tests under load (issue 64), outside CI: with `--busy` processes
spinning on every core, the tests that read a clock or count what overlaps run `--runs`
times in a row; each run's result is printed, and the exit code is 1 if any failed.

    python tests/perf/stress_timing.py [--runs 5] [--busy 1] [--workers 2]

The tests (each bound is a deadline the product promises, with a margin of 5x or more, or
an order instead of a time): the runner's hung-episode timeout, the cooperative hub's
pauses, CLIN's parser on pathological replies, AutoManual's sandbox caps and its round-3
attacks, the data fetcher's stalled downloads, the fake server's overlap barrier, the
LLM client against a dripping server, the plan checker's linear reads.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = [
    "tests/runner/test_runner.py::test_hung_episode_is_killed_as_timeout",
    "tests/runner/test_cooperative.py",
    "tests/methods/clin/test_clin.py",
    "tests/methods/automanual/test_automanual.py",
    "tests/data/test_fetch.py::test_truncated_oversized_stalled_and_slow_downloads_end_in_one_line",
    "tests/testing/test_fakeserver.py",
    "tests/hostile/test_hostile_servers.py",
    "tests/hostile/test_hostile_code.py",
    "tests/hostile/test_hostile_sandbox.py",
]
SPIN = "while True:\n    pass\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--busy", type=int, default=1, help="spinning processes per core")
    parser.add_argument("--workers", type=int, default=2, help="pytest -n")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(cores * args.busy)]
    failed = 0
    try:
        print(f"{len(spinners)} busy processes on {cores} cores; {len(TESTS)} test files or "
              f"tests, {args.runs} runs", flush=True)
        for run in range(1, args.runs + 1):
            started = time.monotonic()
            result = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-n", str(args.workers), "--dist",
                 "loadgroup", "-p", "no:cacheprovider", *TESTS],
                cwd=ROOT, capture_output=True, text=True)
            summary = (result.stdout.strip().splitlines() or ["(no output)"])[-1]
            print(f"run {run}: {'passed' if result.returncode == 0 else 'FAILED'} in "
                  f"{time.monotonic() - started:.0f} s: {summary}", flush=True)
            if result.returncode != 0:
                failed += 1
                print("\n".join(line for line in result.stdout.splitlines()
                                if line.startswith(("FAILED", "ERROR", "E "))), flush=True)
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    print(f"{args.runs - failed} of {args.runs} runs passed under load")
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
