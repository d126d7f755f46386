"""The whole path of a fresh machine, run by hand (not collected by pytest; ~10-20 min):

1. a clean clone of this repository (`git clone`, then the working tree's uncommitted
   changes and new files applied, so what is checked is what would be committed;
   `--patch FILE` applies more), in a scratch folder;
2. a fresh HOME, `LIFEBENCH_DATA` set empty (so `../shared/data` is not used: the data home
   is the fresh HOME's cache), no `ALFWORLD_DATA` nor `LIFEBENCH_IGE_COOKING`, and
   `LIFEBENCH_MIRROR` pointing at a full loopback mirror of the upstreams built from the
   data folder (`lifebench.testing.datamirror`); pip keeps its usual cache;
3. `make install` in the clone (timed apart), the mirror built by the clone's own code,
   then `make bench` there: it fetches what is missing (one line per benchmark) and runs
   the smoke grid on all five benchmarks;
4. the oracle on ALFWorld and TextWorld run again, from the data folder itself, by the
   clone's venv: its records and trajectories must equal those `make bench` made from the
   fetched data (timings and run ids aside).

    .venv/bin/python tests/data/whole_path.py [--data ../shared/data] [--keep DIR] [--patch FILE]

Prints each phase's wall time and exits 1 when anything differs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMPARED = ("alfworld", "textworld")
VOLATILE = ("wall_s", "run_id")
UNSET = ("LIFEBENCH_DATA", "ALFWORLD_DATA", "LIFEBENCH_IGE_COOKING", "XDG_CACHE_HOME",
         "VIRTUAL_ENV", "LIFEBENCH_MODEL", "LIFEBENCH_BASE_URL", "LIFEBENCH_OFFLINE",
         "LIFEBENCH_MIRROR", "PYTHONPATH")


def run(command: list[str], cwd: Path, env: dict[str, str] | None = None,
        log: Path | None = None) -> None:
    print(f"$ {' '.join(command)}", flush=True)
    with open(log, "w") if log else open(os.devnull, "w") as out:
        done = subprocess.run(command, cwd=cwd, env=env, stdout=out if log else None,
                              stderr=subprocess.STDOUT if log else None)
    if done.returncode != 0:
        tail = log.read_text()[-3000:] if log else ""
        sys.exit(f"failed ({done.returncode}): {' '.join(command)}\n{tail}")


def clean_clone(into: Path, patch: Path | None) -> Path:
    """The repository as it would be committed: HEAD, plus the working tree's changes."""
    clone = into / "clone"
    run(["git", "clone", "-q", str(ROOT), str(clone)], into)
    diff = subprocess.run(["git", "diff", "HEAD", "--binary"], cwd=ROOT, capture_output=True,
                          check=True).stdout
    if diff:
        subprocess.run(["git", "apply", "--whitespace=nowarn"], cwd=clone, input=diff, check=True)
    new = subprocess.run(["git", "ls-files", "--others", "--exclude-standard", "-z"], cwd=ROOT,
                         capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, new):
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, clone / name)
    if patch:
        subprocess.run(["git", "apply", str(patch.resolve())], cwd=clone, check=True)
    return clone


def fresh_environment(home: Path, mirror_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin)
    env.update(HOME=str(home), LIFEBENCH_DATA="", LIFEBENCH_MIRROR=mirror_url,
               PIP_CACHE_DIR=os.environ.get("PIP_CACHE_DIR") or str(Path("~/.cache/pip").expanduser()))
    return env


def oracle_records(out: Path, benchmark: str) -> dict[tuple, dict]:
    records = {}
    for line in (out / "episodes.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["method"] == "oracle" and record["benchmark"] == benchmark:
            key = (record["split"], record["instance_id"], record["seed"], record["trial"],
                   record["attempt"])
            records[key] = {k: v for k, v in record.items() if k not in VOLATILE}
    return records


def trajectories(out: Path, benchmark: str) -> list[dict]:
    lines = []
    for path in sorted((out / "trajectories").glob(f"{benchmark}.*.oracle-*.jsonl")):
        lines += [json.loads(line) for line in path.read_text().splitlines()]
    return sorted(lines, key=lambda t: (t["instance_id"], t["trial"], t["attempt"]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"),
                        help="the data folder the mirror is built from and the oracle is "
                             "compared with (default ../shared/data)")
    parser.add_argument("--keep", help="work in this folder (kept) instead of a temporary one")
    parser.add_argument("--patch", help="a diff to apply to the clone after the working tree's")
    args = parser.parse_args()
    from lifebench.testing.datamirror import MirrorServer

    data = Path(args.data).resolve()
    work = Path(args.keep).resolve() if args.keep else Path(tempfile.mkdtemp(prefix="whole-path-"))
    work.mkdir(parents=True, exist_ok=True)
    times: dict[str, float] = {}
    started = time.monotonic()
    clone = clean_clone(work, Path(args.patch) if args.patch else None)
    times["clone"] = time.monotonic() - started
    home = work / "home"
    home.mkdir(exist_ok=True)
    env = fresh_environment(home, "")

    mark = time.monotonic()
    run(["make", "install"], clone, env, work / "make-install.log")
    times["make install"] = time.monotonic() - mark
    mark = time.monotonic()
    run([str(clone / ".venv" / "bin" / "python"), "-m", "lifebench.testing.datamirror",
         "--from", str(data), "--into", str(work / "mirror")], clone, env)
    times["mirror"] = time.monotonic() - mark
    with MirrorServer(work / "mirror") as mirror:
        env["LIFEBENCH_MIRROR"] = mirror.url
        mark = time.monotonic()
        run(["make", "bench"], clone, env, work / "make-bench.log")
        times["make bench"] = time.monotonic() - mark
        served = sum(mirror.requests.values())
    log = (work / "make-bench.log").read_text()
    print("\n".join(line for line in log.splitlines() if line.startswith("lifebench data: ")))
    print(f"{served} requests to the mirror; data home: "
          f"{home / '.cache' / 'lifebench' / 'data'}")

    reference = work / "reference"
    mark = time.monotonic()
    run([str(clone / ".venv" / "bin" / "lifebench"), "run", "--no-progress", "--benchmark",
         ",".join(COMPARED), "--method", "oracle", "--out", str(reference)], clone,
        {**env, "LIFEBENCH_DATA": str(data), "LIFEBENCH_MIRROR": ""}, work / "reference.log")
    times["oracle on the data folder"] = time.monotonic() - mark

    bench = clone / "results" / "bench"
    ran = sorted({json.loads(line)["benchmark"] for line in
                  (bench / "episodes.jsonl").read_text().splitlines()})
    differences = []
    for benchmark in COMPARED:
        fetched, shared = oracle_records(bench, benchmark), oracle_records(reference, benchmark)
        same = fetched == shared and trajectories(bench, benchmark) == trajectories(reference, benchmark)
        print(f"{benchmark}: {len(fetched)} oracle records from the fetched data, {len(shared)} "
              f"from {data}: {'identical (records and trajectories)' if same else 'DIFFERENT'}")
        differences += [] if same and fetched else [benchmark]
    print(f"benchmarks run by make bench: {', '.join(ran)}")
    for phase, seconds in times.items():
        print(f"{phase}: {seconds / 60:.1f} min")
    print(f"in all: {(time.monotonic() - started) / 60:.1f} min; kept in {work}")
    return 1 if differences or len(ran) < 5 else 0


if __name__ == "__main__":
    sys.exit(main())
