"""LLM-bound runs: episodes/s with 1 stream in flight against 32, on one endpoint.

ReAct on Plancraft `val.small` against the local OpenAI-compatible server, run as its own
process (a fixed reply, 100 ms latency per request), every episode `--steps` LLM calls
long; 32 streams (seeds), run in this process with `concurrency` 1 and then 32 (one thread
per stream). Target: 32 streams >= 20x the episodes/s of 1.

    python tests/perf/perf_llm_concurrency.py [--latency-ms 100] [--streams 32]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


from lifebench.api import Budget  # noqa: E402
from lifebench.runner.run import execute  # noqa: E402
from lifebench.config.run import ExecutionConfig, LLMConfig, RunConfig  # noqa: E402


REPLY = "Thought: I will take stock first.\nAction: think: what does the recipe need?"


def episodes_per_s(base_url: str, streams: int, concurrency: int, limit: int,
                   steps: int) -> tuple[float, int, int]:
    spec = RunConfig(benchmarks=("plancraft",), methods=("react",), splits={"plancraft": ("val.small",)},
                   seeds=tuple(range(streams)), limit=limit, model="fixed", budgets=(Budget(steps),),
                   llm=LLMConfig(base_url=base_url, cache="off", concurrency=max(64, streams)))
    with tempfile.TemporaryDirectory() as out:
        began = time.perf_counter()
        outcome = execute(spec, ExecutionConfig(out=out, workers=0, progress=False,
                                           concurrency=concurrency, trajectories=False))
        elapsed = time.perf_counter() - began
    return outcome.results / elapsed, outcome.results, outcome.successes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency-ms", type=float, default=100)
    parser.add_argument("--streams", type=int, default=32)
    parser.add_argument("--limit", type=int, default=1, help="instances per stream")
    parser.add_argument("--steps", type=int, default=8, help="LLM calls per episode")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        script = Path(scratch) / "reply.json"
        script.write_text(json.dumps([REPLY]))
        server = subprocess.Popen([sys.executable, "-m", "lifebench.testing.fakeserver", "--port", "0",
                                   "--script", str(script), "--latency-ms", str(args.latency_ms)],
                                  stdout=subprocess.PIPE, text=True,
                                  cwd=Path(__file__).resolve().parents[2])
        try:
            base_url = server.stdout.readline().split()[-1]  # "listening on URL"
            one = episodes_per_s(base_url, args.streams, 1, args.limit, args.steps)
            many = episodes_per_s(base_url, args.streams, args.streams, args.limit, args.steps)
        finally:
            server.terminate()
            server.wait(timeout=10)
    print(f"ReAct on Plancraft val.small, {args.streams} streams x {args.limit} episode(s) of "
          f"{args.steps} LLM calls, {args.latency_ms:g} ms per request (server in its own process)")
    for label, (rate, n, wins) in (("1 stream in flight", one), (f"{args.streams} streams in flight", many)):
        print(f"  {label:22s} {rate:7.2f} episodes/s ({n} episodes)")
    ratio = many[0] / one[0]
    print(f"  ratio = {ratio:.1f}x (target >= 20x: {'met' if ratio >= 20 else 'NOT met'})")


if __name__ == "__main__":
    main()
