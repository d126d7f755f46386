"""A test suite's `lifebench` commands started as processes against forked from a parent
that imported the CLI once (`lifebench.testing.cli_forks`, what `tests/conftest.py` turns
on): the median wall time of each command both ways, interleaved, and their ratio.

    python tests/perf/perf_cli_forks.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from lifebench.testing import cli_forks, run_cli

PRELOAD = "numpy,plancraft.config,textworld,crafter"  # as tests/conftest.py
COMMANDS = {
    "list methods": ("list", "methods"),
    "a refused run (unknown benchmark)": ("run", "--benchmark", "nosuch", "--method", "random"),
    "Plancraft, random, 2 episodes": ("run", "--no-progress", "--benchmark", "plancraft",
                                      "--split", "val.small", "--method", "random", "--limit", "2",
                                      "--max-steps", "5", "--workers", "0"),
    "ALFWorld, oracle, 1 episode": ("run", "--no-progress", "--benchmark", "alfworld",
                                    "--method", "oracle", "--limit", "1", "--workers", "0"),
}


def timed(args: tuple[str, ...], mode: str, folder: str) -> float:
    os.environ[cli_forks.ENV] = mode
    out = tempfile.mkdtemp(dir=folder)
    extra = ("--out", out) if args[0] == "run" and "nosuch" not in args else ()
    began = time.perf_counter()
    result = run_cli(*args, *extra)
    seconds = time.perf_counter() - began
    assert result.returncode in (0, 2), result.stderr
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    with tempfile.TemporaryDirectory() as folder:
        timed(("list", "methods"), PRELOAD, folder)  # the parents started, not measured
        print(f"{'command':40} {'started':>9} {'forked':>9} {'ratio':>7}")
        for name, args in COMMANDS.items():
            started, forked = [], []
            for _ in range(rounds):
                started.append(timed(args, "off", folder))
                forked.append(timed(args, PRELOAD, folder))
            a, b = statistics.median(started), statistics.median(forked)
            print(f"{name:40} {a:8.2f}s {b:8.2f}s {a / b:6.1f}x")


if __name__ == "__main__":
    main()
