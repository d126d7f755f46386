"""Does a preparation use every worker? InstructRAG on ALFWorld (`--limit 2`, the scripted
server, no cache) with `--workers 2` against `--workers 1`: the wall time of the
preparation (its stages' seconds, as its record gives them) and of the whole run, and
whether the prepared artifact and the records are identical (wall times aside). Target: the
preparation at most 0.6x.

    LIFEBENCH_DATA=... .venv/bin/python tests/perf/perf_preparation_workers.py [OUT]
        [--iterations N] [--support-limit N] [--full] [--rounds N]

By default the meta-training is capped at 12 iterations on 120 support games (about 4
minutes a run here), and the pair is played twice, one worker then two in turn, the best of
each kept (two runs of one setting differ by up to a fifth here). `--full` plays the
protocol's whole preparation (all 200 support games of `valid_train`, up to 200 iterations:
over half an hour a run). Run it on an otherwise idle machine: the ratio is measured in
this one run.
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

RUN = ["--method", "instructrag", "--benchmark", "alfworld", "--limit", "2", "--model", "m",
       "--cache", "off", "--no-progress", "--run-id", "perf"]
TARGET = 0.6


def run(out: Path, workers: int, method_args: list[str], url: str) -> float:
    """The run's wall seconds."""
    command = [sys.executable, "-m", "lifebench.cli", "run", *RUN, *method_args,
               "--workers", str(workers), "--out", str(out), "--base-url", url]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"--workers {workers}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return time.monotonic() - started


def timeless(stages: dict) -> dict:
    return {k: v for k, v in stages.items() if not k.endswith("_s")}


def records(out: Path) -> list[dict]:
    """The records (wall times aside), each with its per-call list set aside
    (`aside/<stream>.jsonl`) where it has one."""
    out_records = []
    for line in (out / "episodes.jsonl").read_text().splitlines():
        record = json.loads(line)
        record.pop("wall_s", None)
        stages = record["extra"].get("instructrag_stages")
        if stages:
            record["extra"]["instructrag_stages"] = timeless(stages)
        out_records.append(record)
    aside = sorted((out / "aside").glob("*.jsonl")) if (out / "aside").is_dir() else []
    return out_records + [{"aside": path.name, "calls": path.read_text()} for path in aside]


def artifact(out: Path) -> dict:
    [path] = (out / "prepared").glob("*.json")
    state = json.loads(path.read_text())["state"]
    return {**state, "stages": timeless(state["stages"])}


def stages(out: Path) -> dict:
    [path] = (out / "prepared").glob("*.json")
    return json.loads(path.read_text())["state"]["stages"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?")
    parser.add_argument("--iterations", type=int, default=12)
    parser.add_argument("--support-limit", type=int, default=120)
    parser.add_argument("--full", action="store_true", help="the protocol's whole preparation")
    parser.add_argument("--rounds", type=int, default=2, help="pairs of runs (the best of each)")
    parser.add_argument("--base-url", help="(set by the script: both runs ask one scripted server)")
    args = parser.parse_args()
    os.environ.setdefault("LIFEBENCH_DATA", str(Path(__file__).resolve().parents[2].parent / "shared" / "data"))
    if not args.base_url:  # again, beside a scripted server (the requests name its URL)
        command = [sys.executable, "-m", "lifebench.testing.fakeserver", "--policy", "scripted",
                   "--", sys.executable, *sys.argv, "--base-url", "{url}"]
        raise SystemExit(subprocess.run(command).returncode)
    method_args = [] if args.full else [
        "--method-arg", f"instructrag.iterations={args.iterations}",
        "--method-arg", f"instructrag.support_limit={args.support_limit}"]
    root = Path(args.out or tempfile.mkdtemp(prefix="perf-preparation-"))
    walls: dict[int, list[float]] = {1: [], 2: []}
    preparations: dict[int, list[float]] = {1: [], 2: []}
    for round_ in range(args.rounds):  # one worker, then two, in turn: noise hits both
        for workers in (1, 2):
            out = root / f"w{workers}-{round_}"
            walls[workers].append(run(out, workers, method_args, args.base_url))
            s = stages(out)
            preparations[workers].append(s["construction_s"] + s["training_s"] + s["few_shot_s"])
    one, two = root / "w1-0", root / "w2-0"
    same_artifact = artifact(one) == artifact(two)
    same_records = records(one) == records(two)
    calls = sum(r.get("llm_calls", 0) for r in records(one))
    scale = "full preparation" if args.full else \
        f"{args.iterations} iterations, {args.support_limit} support games"
    print(f"InstructRAG on ALFWorld --limit 2 ({scale}; {calls:,} LLM calls, scripted server; "
          f"best of {args.rounds}), in {root}")
    print("| workers | run wall s | preparation s | construction s | training s | few-shot s |")
    print("|---|---|---|---|---|---|")
    for workers, out in ((1, one), (2, two)):
        s = stages(out)
        print(f"| {workers} | {min(walls[workers]):.1f} | {min(preparations[workers]):.1f} | "
              f"{s['construction_s']:.1f} | {s['training_s']:.1f} | {s['few_shot_s']:.1f} |")
    prepared = min(preparations[2]) / min(preparations[1])
    print(f"--workers 2 / --workers 1: the preparation {prepared:.2f}x (target <= {TARGET}x), "
          f"the whole run {min(walls[2]) / min(walls[1]):.2f}x (its start and two scored "
          f"episodes are one process's either way); prepared artifact identical: "
          f"{'yes' if same_artifact else 'NO'}; records and their per-call lists identical "
          f"(wall times aside): {'yes' if same_records else 'NO'}")
    if not (same_artifact and same_records):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
