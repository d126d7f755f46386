"""The harness against a real server: the embedded endpoint (`lifebench serve`: llama-cpp-
python's server, SmolLM2-135M-Instruct, on this machine's cores).

1. Overhead. ReAct on the corridor benchmark (short prompts, so the model's time per call
   is small and the harness's share is as large as it gets) with 1, 4 and 16 streams played
   at once (`--concurrency N` on one worker, one seed per stream): the harness's CPU seconds
   (the CLI and its worker, the server apart) per LLM call, and its share of the run's wall
   time, whole and without the run's start (the same command again into the same
   directory, which finds everything recorded: imports, plugins, the endpoint's checks).
   Target: under 5%.
2. The plan on real replies. `--plan --pilot 2` on one cell (ReAct on ALFWorld's
   `valid_unseen`, 10 games, 6 steps), then the full run into the same directory: the calls
   and prompt tokens the run spent after the pilot, against the plan's central estimate and
   its 90% interval.

    LIFEBENCH_DATA=... .venv/bin/python tests/perf/perf_embedded_server.py [--skip-plan]

Everything is measured in this one run; run it on an otherwise idle machine (about 10
minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_SHARE = 0.05
STREAMS = (1, 4, 16)


def cli(*args: str) -> tuple[float, float, str]:
    """Run `lifebench ARGS`: (wall seconds, CPU seconds of it and its children, stderr)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "lifebench.cli", *args], capture_output=True, text=True)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"lifebench {' '.join(args[:3])} ...: exit {done.returncode}\n{done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stderr


def records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines() if line]


def overhead(server, scratch: Path) -> list[tuple[int, int, float, float, float, float]]:
    """(streams, calls, wall s, harness CPU s per call, harness share of wall, the same
    without the run's start) per setting."""
    rows = []
    for streams in STREAMS:
        out = scratch / f"overhead-{streams}"
        seeds = ",".join(str(s) for s in range(streams))
        command = ("run", "--benchmark", "corridor", "--split", "small", "--limit", "4",
                   "--method", "react", "--seeds", seeds, "--max-steps", "4",
                   "--model", server.options.model, "--base-url", server.url,
                   "--cache", "off", "--workers", "1", "--concurrency", str(streams),
                   "--no-progress", "--out", str(out))
        wall, cpu, _ = cli(*command)
        start_wall, start_cpu, _ = cli(*command)  # everything recorded: only the start
        calls = sum(r["llm_calls"] for r in records(out))
        rows.append((streams, calls, wall, cpu / max(calls, 1), cpu / wall,
                     (cpu - start_cpu) / max(wall - start_wall, 1e-9)))
    return rows


def plan_against_run(server, scratch: Path) -> dict:
    out = scratch / "plan"
    cell = ["--benchmark", "alfworld", "--split", "valid_unseen", "--limit", "10", "--method",
            "react", "--max-steps", "6", "--model", server.options.model, "--base-url",
            server.url, "--cache", "off", "--workers", "1", "--no-progress", "--out", str(out)]
    cli("run", *cell, "--plan", "--pilot", "2")
    plan = json.loads((out / "plan.json").read_text())
    [planned] = plan["cells"]
    piloted = records(out)
    cli("run", *cell)
    spent = records(out)[len(piloted):]
    found = {"episodes": len(spent), "calls": sum(r["llm_calls"] for r in spent),
             "tokens_in": sum(r["tokens_in"] for r in spent)}
    return {"interval": plan["interval"], "pilot_episodes": len(piloted), "found": found,
            "central": {k: planned["central"][k] for k in ("calls", "tokens_in")},
            "low_high": {k: planned[k] for k in ("calls", "tokens_in")}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-plan", action="store_true")
    parser.add_argument("--prompt-cache", action="store_true", help="serve with the prompt cache")
    args = parser.parse_args()
    from lifebench.llm import embedded

    if not embedded.server_installed():
        raise SystemExit(f"the embedded server is not installed: {embedded.INSTALL_HINT}")
    server = embedded.ServerProcess(embedded.ServerOptions(
        embedded.embedded_weights(), embedded.EMBEDDED_MODEL, prompt_cache=args.prompt_cache))
    server.start()
    try:
        with tempfile.TemporaryDirectory(prefix="perf-embedded-") as tmp:
            rows = overhead(server, Path(tmp))
            print(f"harness overhead against the embedded server (ReAct, corridor, one worker; "
                  f"prompt cache {'on' if args.prompt_cache else 'off'})")
            print("| streams at once | LLM calls | wall s | harness CPU ms per call | harness "
                  "share of wall | without the run's start |")
            print("|---:|---:|---:|---:|---:|---:|")
            for streams, calls, wall, per_call, share, steady in rows:
                print(f"| {streams} | {calls} | {wall:.1f} | {per_call * 1000:.1f} | {share:.1%} "
                      f"| {steady:.1%} |")
            worst = max(steady for *_, steady in rows)
            print(f"worst share without the start {worst:.1%} (target < {TARGET_SHARE:.0%}): "
                  f"{'met' if worst < TARGET_SHARE else 'NOT met'}")
            if not args.skip_plan:
                found = plan_against_run(server, Path(tmp))
                print(f"\nplan (--plan --pilot 2, interval {found['interval']}) against the run, "
                      f"ReAct on ALFWorld valid_unseen, 10 games, 6 steps; after the pilot's "
                      f"{found['pilot_episodes']} episodes, {found['found']['episodes']} played:")
                print("| spent | planned central | planned interval | actual | inside |")
                print("|---|---:|---|---:|---|")
                for name in ("calls", "tokens_in"):
                    low, high = found["low_high"][name]
                    actual = found["found"][name]
                    print(f"| {name} | {found['central'][name]:,.0f} | {low:,.0f} - {high:,.0f} | "
                          f"{actual:,} | {'yes' if low <= actual <= high else 'no'} |")
    finally:
        server.close()


if __name__ == "__main__":
    main()
