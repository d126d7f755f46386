"""LLM-bound runs at 1, 32, 128 and 256 streams in flight on one endpoint (issue 22).

ReAct on Plancraft (`--split`, `--limit` instances spread evenly over it, the same for every
stream; every stream a seed) against the local OpenAI-compatible server run as its own
process with `--policy plancraft` (it answers the planner's next correct action, so every
episode steps the real environment until it is won: ~10 LLM calls an episode here) and
`--latency-ms` per request. Each row is one run in a fresh child process (`workers=0`:
`--concurrency N` streams in that process; `--llm-concurrency N`), as a real run is: the LLM
cache on (`rw`, a fresh file: every call a miss, looked up, then written) and trajectories
written. The child first plays one episode (imports, data, ReAct's few-shot examples, which
every stream shares), then the measured run; a first one-stream run, not reported, fills
the server's cache of planner answers, so every row finds it full. Each `--scheduler` is measured in turn
(`greenlets`: streams are greenlets of one thread; `threads`: one thread each):

- episodes/s and LLM calls/s over the run's wall time, and the ratio to one stream;
- harness CPU per LLM call: the child's CPU time (user + system, all threads, its workers'
  too) over the run / the calls the server answered (the server's own CPU is shown apart);
- peak RSS of the child (and its workers), and RSS per stream: (peak RSS during the run -
  RSS before it) / streams, an upper bound of what an idle stream holds.

Then the records: the run of each stream count is played again at `--concurrency 1` (same
spec) against a second server with no latency, and the two record sets must agree on every
key, status, success, score, step count and LLM call count by role.

Targets: 32 streams >= 30x one stream, 256 >= 200x, harness CPU < 1 ms per call, RSS per
idle stream < 20 MB. Figures from one run of a noisy 2-core machine: ratios, no asserts.

    python tests/perf/perf_llm_concurrency.py [--streams 1,32,128,256]
        [--schedulers greenlets,threads] [--latency-ms 100] [--split val.small] [--limit 16]
        [--steps 30] [--cache rw|off] [--workers 0] [--no-check]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from perf_llm_profile import cpu_s, served

from lifebench.api import Budget
from lifebench.config.run import ExecutionConfig, LLMConfig, RunConfig
from lifebench.runner.run import execute
from lifebench.store.records_file import read_directory
from lifebench.testing.processes import descendant_pids, running

ROOT = Path(__file__).resolve().parents[2]
TARGETS = {32: 30, 256: 200}


def spread(split: str, count: int) -> tuple[str, ...]:
    """`count` instances evenly spread over the split (its first ones are its shortest)."""
    from lifebench.registry import get_benchmark

    ids = [i.instance_id for i in get_benchmark("plancraft").instances(split)]
    return tuple(ids[i * len(ids) // count] for i in range(min(count, len(ids))))


def spec(args: argparse.Namespace, base_url: str, streams: int, out: str,
         limit: int) -> RunConfig:
    llm = LLMConfig(base_url=base_url, cache=args.cache, concurrency=max(16, streams),
                    cache_path=str(Path(out) / "llm-cache.sqlite"))
    return RunConfig(benchmarks=("plancraft",), methods=("react",),
                     splits={"plancraft": (args.split,)}, seeds=tuple(range(streams)),
                     instances=spread(args.split, limit), model="fake",
                     budgets=(Budget(args.steps),), llm=llm)


PAGE = os.sysconf("SC_PAGE_SIZE")


def vm_rss(workers: bool = False) -> int:
    """The resident set of this process (and its workers) now, in bytes (statm: one short
    line each, cheap to read; finding the workers reads all of /proc)."""
    total = 0
    for pid in [os.getpid(), *(descendant_pids(os.getpid()) if workers else ())]:
        try:
            with open(f"/proc/{pid}/statm", "rb") as statm:
                total += int(statm.read().split()[1]) * PAGE
        except OSError:  # a worker that just ended
            pass
    return total


class RssPeak:
    """The highest RSS seen while the run plays (sampled every 50 ms): ru_maxrss would
    include the warm-up."""

    def __init__(self, workers: bool) -> None:
        self.workers = workers
        self.peak = vm_rss(workers)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, vm_rss(self.workers))

    def __enter__(self) -> "RssPeak":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, vm_rss(self.workers))


def child(args: argparse.Namespace) -> None:
    """One measured run in this (fresh) process; prints its figures as JSON."""
    streams = args.child
    with tempfile.TemporaryDirectory() as warm:  # imports, data, examples, connections
        execute(spec(args, args.url, 1, warm, 1),
                ExecutionConfig(out=warm, workers=0, progress=False, trajectories=True))
    with tempfile.TemporaryDirectory() as out:
        run = spec(args, args.url, streams, out, args.limit)
        execution = ExecutionConfig(out=out, workers=args.workers, progress=False,
                                    concurrency=-(-streams // max(1, args.workers)),
                                    scheduler=args.scheduler, trajectories=True)
        calls_before, server_before = served(args.url), cpu_s(args.server_pid)
        before_rss = vm_rss(args.workers > 0)
        usage_before = _usage()
        began = time.perf_counter()
        with RssPeak(args.workers > 0) as rss:
            outcome = execute(run, execution)
        wall = time.perf_counter() - began
        usage = _usage()
        calls = served(args.url) - calls_before
        server_cpu = cpu_s(args.server_pid) - server_before
        if args.records:
            Path(args.records).write_text(json.dumps(summary(read_directory(out))))
    cpu = (usage[0] - usage_before[0]) + (usage[1] - usage_before[1])
    system = usage[1] - usage_before[1]
    switches = usage[2] - usage_before[2]
    print(json.dumps({"system": system, "switches": switches, "streams": streams, "episodes": outcome.results,
                      "successes": outcome.successes, "calls": calls, "wall": wall, "cpu": cpu,
                      "server_cpu": server_cpu, "rss_before": before_rss, "rss_peak": rss.peak}))


def _usage() -> tuple[float, float, int]:
    """User and system CPU seconds and context switches of this process and its workers
    (they are reaped at the end of the run, so they count by then)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    workers = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (own.ru_utime + workers.ru_utime, own.ru_stime + workers.ru_stime,
            own.ru_nvcsw + own.ru_nivcsw + workers.ru_nvcsw + workers.ru_nivcsw)


def summary(records: list[Any]) -> list[list[Any]]:
    """What must not depend on concurrency, per record, in key order."""
    rows = [[repr(r.key), str(r.status), r.success, r.score, r.steps, r.llm_calls,
             {role: u.calls for role, u in sorted(r.llm_usage.items())}] for r in records]
    return sorted(rows, key=lambda row: row[0])


def measure(args: argparse.Namespace, base_url: str, server_pid: int, streams: int,
            records: str = "") -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", str(streams), "--url", base_url,
               "--server-pid", str(server_pid), "--split", args.split, "--limit",
               str(args.limit), "--steps", str(args.steps), "--records", records,
               "--cache", args.cache, "--workers", str(args.workers),
               "--scheduler", args.scheduler]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        sys.exit(f"the run of {streams} stream(s) failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def reference(args: argparse.Namespace, streams: int, scratch: Path) -> list[Any]:
    """The same run at --concurrency 1 against a server without latency: its records."""
    with running(server_command(0), stdout=subprocess.PIPE, text=True, cwd=ROOT) as server:
        base_url = server.stdout.readline().split()[-1]
        out = scratch / f"reference-{streams}"
        execute(spec(args, base_url, streams, str(out), args.limit),
                ExecutionConfig(out=str(out), workers=0, progress=False, trajectories=True))
    return json.loads(json.dumps(summary(read_directory(out))))


def server_command(latency_ms: float) -> list[str]:
    return [sys.executable, "-m", "lifebench.testing.fakeserver", "--port", "0",
            "--policy", "plancraft", "--latency-ms", str(latency_ms)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", default="1,32,128,256")
    parser.add_argument("--schedulers", default="greenlets,threads",
                        help="--scheduler values to measure, each at every stream count")
    parser.add_argument("--latency-ms", type=float, default=100)
    parser.add_argument("--split", default="val.small")
    parser.add_argument("--limit", type=int, default=16,
                        help="instances per stream, spread evenly over the split")
    parser.add_argument("--steps", type=int, default=30, help="step budget per episode")
    parser.add_argument("--cache", default="rw", choices=("rw", "off"),
                        help="the LLM cache: on as in a real run (a fresh file), or off")
    parser.add_argument("--workers", type=int, default=0,
                        help="worker processes sharing the streams (0: all in the run's process)")
    parser.add_argument("--no-check", dest="check", action="store_false",
                        help="skip comparing the records with a run at concurrency 1")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--scheduler", default="greenlets", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--server-pid", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--records", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    counts = [int(n) for n in args.streams.split(",")]
    tables: dict[str, list[dict[str, Any]]] = {}
    checks: list[str] = []
    references: dict[int, list[Any]] = {}
    with tempfile.TemporaryDirectory() as scratch_dir, \
            running(server_command(args.latency_ms), stdout=subprocess.PIPE, text=True,
                    cwd=ROOT) as server:
        scratch = Path(scratch_dir)
        base_url = server.stdout.readline().split()[-1]  # "listening on URL"
        # A first pass, not reported, fills the server's cache of planner answers: the
        # first row would otherwise wait on the planner (1-14 ms a new state), the others not.
        args.scheduler = args.schedulers.split(",")[0]
        measure(args, base_url, server.pid, 1)
        for scheduler in args.schedulers.split(","):
            args.scheduler = scheduler
            rows = tables[scheduler] = []
            for streams in counts:
                records = scratch / f"records-{scheduler}-{streams}.json"
                rows.append(measure(args, base_url, server.pid, streams, str(records)))
                if args.check and streams > 1:
                    if streams not in references:
                        references[streams] = reference(args, streams, scratch)
                    same = json.loads(records.read_text()) == references[streams]
                    checks.append(f"{scheduler}, {streams} streams: records "
                                  f"{'identical to' if same else 'DIFFER from'} the run at "
                                  f"concurrency 1 ({rows[-1]['episodes']} episodes, "
                                  f"{rows[-1]['calls']} LLM calls)")
    report(args, tables, checks)


def report(args: argparse.Namespace, tables: dict[str, list[dict[str, Any]]],
           checks: list[str]) -> None:
    print(f"ReAct on Plancraft {args.split} ({args.limit} instances spread over it per stream, "
          f"budget {args.steps}), against the local server in its own process answering the "
          f"planner's next action after {args.latency_ms:g} ms; cache {args.cache}, "
          f"trajectories on, workers {args.workers}; {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.2f} (one run)")
    for scheduler, rows in tables.items():
        print(f"\n  --scheduler {scheduler}")
        print(f"  {'streams':>7s} {'episodes':>8s} {'calls':>6s} {'wall s':>7s} "
              f"{'episodes/s':>10s} {'calls/s':>8s} {'ratio':>7s} {'CPU ms/call':>11s} "
              f"{'server':>7s} {'peak RSS':>9s} {'RSS/stream':>10s}")
        one = next((r for r in rows if r["streams"] == 1), None)
        for row in rows:
            rate, calls = row["episodes"] / row["wall"], max(row["calls"], 1)
            ratio = rate / (one["episodes"] / one["wall"]) if one else float("nan")
            per_stream = (row["rss_peak"] - row["rss_before"]) / row["streams"]
            print(f"  {row['streams']:7d} {row['episodes']:8d} {row['calls']:6d} "
                  f"{row['wall']:7.2f} {rate:10.2f} {row['calls'] / row['wall']:8.1f} "
                  f"{ratio:6.1f}x {1e3 * row['cpu'] / calls:11.3f} "
                  f"{1e3 * row['server_cpu'] / calls:7.3f} {row['rss_peak'] / 2**20:7.0f}MB "
                  f"{per_stream / 2**20:8.2f}MB")
        for row in rows:
            target = TARGETS.get(row["streams"])
            if target and one:
                ratio = (row["episodes"] / row["wall"]) / (one["episodes"] / one["wall"])
                print(f"  {row['streams']} streams: {ratio:.1f}x one stream "
                      f"(target >= {target}x: {'met' if ratio >= target else 'NOT met'})")
        many = [r for r in rows if r["streams"] >= 32] or rows
        worst_cpu = max(1e3 * r["cpu"] / max(r["calls"], 1) for r in many)
        worst_rss = max((r["rss_peak"] - r["rss_before"]) / r["streams"] for r in many)
        print(f"  harness CPU per call at 32 streams or more, worst row: {worst_cpu:.3f} ms "
              f"(target < 1 ms: {'met' if worst_cpu < 1 else 'NOT met'})")
        print(f"  RSS per stream at 32 streams or more, worst row: {worst_rss / 2**20:.2f} MB "
              f"(target < 20 MB: {'met' if worst_rss < 20 * 2**20 else 'NOT met'})")
    print("\n  (CPU ms/call: this harness's CPU per LLM call, its workers' included; server: "
          "the server process's)")
    for line in checks:
        print(f"  {line}")


if __name__ == "__main__":
    main()
