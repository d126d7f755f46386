"""Where the harness CPU of an LLM-bound run goes, per LLM call (issue 22, deliverable 1).

ReAct on Plancraft `val.small` against the local OpenAI-compatible server run as its own
process with `--policy plancraft` (it answers the planner's next correct action, so the
episodes are real ones: the environment steps, succeeds and ends) and `--latency-ms` per
request; `--streams` seeds played at once in this process (`workers=0`, one thread per
stream), the LLM cache on (`rw`, a fresh file: every call a miss, read then written) and
trajectories written, as in a real run.

The same run is played three times against the same server: a small warm-up (imports,
Plancraft's data, the HTTP pool), then without the profiler (the harness CPU per LLM call:
this process's CPU time over the run / the LLM calls the server answered), then under
cProfile (stdlib), one profiler per thread with a per-thread CPU clock
(`time.thread_time_ns`), so time a thread spends blocked (locks, queues, select, the socket
waiting for the server's 100 ms) costs nothing and only CPU is counted. Each function's
own CPU is put in the bucket of its file (prompt building: methods/react; the HTTP client
and JSON: llm/transport.py, llm/client.py's request/response path; the cache: llm/cache.py;
token accounting; records and trajectories: store/, runner/writer.py; environment steps:
Plancraft; thread hand-offs: threading, queue, concurrent.futures); a function in none
(the stdlib's json, sqlite3, builtins) is charged to its callers' buckets, in proportion
to the CPU each caller spent in it. The table shows each bucket's profiled CPU per call, its
share, that share of the unprofiled CPU per call and its function calls per LLM call. The
estimate is rough: the profiler's cost is per function call (on Linux the thread CPU clock is
a system call, not vDSO: most of the profiled run's CPU is in the kernel), so buckets of many
small Python calls are overstated. Buckets go by where code
lives, so the oracle rollouts that make ReAct's few-shot examples (per stream) count as
environment steps and prompt building; a second table gives such subtrees' cumulative CPU.
Then the top functions by cumulative and by own CPU per LLM call.

`--policy think` makes the server always answer a `think:` action instead: every episode
lasts its `--steps` budget, the history grows, and per-episode costs weigh less per call.

Figures from one run of a noisy machine (2 cores, often a CI run beside it): ratios, no
asserts. Before issue 22 this process's own CPU was 7.3 to 10.7 ms per call over four
runs (65% in the `openai` package's request building); the README has the table after.
Streams are threads here (cProfile follows threads, not greenlets).

    python tests/perf/perf_llm_profile.py [--streams 32] [--limit 8] [--steps 12]
        [--latency-ms 100] [--policy plancraft|think] [--cache rw|off] [--top 15]
        [--dump FILE.prof]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any, Optional

from lifebench.api import Budget
from lifebench.config.run import ExecutionConfig, LLMConfig, RunConfig
from lifebench.runner.run import execute
from lifebench.store.records_file import read_directory
from lifebench.testing.processes import running

ROOT = Path(__file__).resolve().parents[2]
TICK = os.sysconf("SC_CLK_TCK")

# (bucket, path fragments of the function's file, function names or None for all).
# The first rule that matches a function names its bucket; order matters.
RULES: list[tuple[str, tuple[str, ...], Optional[tuple[str, ...]]]] = [
    ("token accounting", ("/harness/llm/client.py",),
     ("take_usage", "take_calls", "cost")),
    ("token accounting", ("/harness/llm/prices.py",), None),
    ("HTTP client + JSON", ("/harness/llm/client.py",),
     ("_call_with_retries", "_post_when_a_slot_frees", "_reply_of", "_endpoint_slots",
      "_refused", "_redact", "_reasoning_tokens")),
    ("HTTP client + JSON", ("/harness/llm/server_errors.py", "/harness/llm/reasoning.py"), None),
    ("HTTP client + JSON", ("/harness/llm/transport.py",), None),
    ("LLM client: request assembly", ("/harness/llm/client.py",), None),
    ("cache reads + writes (llm/cache.py)", ("/harness/llm/cache.py",), None),
    ("HTTP client + JSON",
     ("/openai/", "/httpx/", "/httpcore/", "/h11/", "/anyio/", "/pydantic/", "/pydantic_core/",
      "/http/client.py", "/email/", "/ssl.py", "/socket.py", "/idna/", "/certifi/",
      "/urllib/parse.py", "/httpx2/", "/typing_extensions.py", "/distro/", "/sniffio/"), None),
    ("prompt building (methods/react)", ("/methods/react/", "/methods/"), None),
    ("records + trajectories (store, writer)",
     ("/harness/store/", "/harness/runner/writer.py", "/harness/runner/progress.py"), None),
    ("environment steps (plancraft)", ("/benchmarks/plancraft/", "/plancraft/", "/numpy/"), None),
    ("token accounting", ("/harness/api/records.py",), ("CallTokens", "RoleUsage")),
    ("runner: episode loop, events", ("/harness/runner/",), None),
    ("thread hand-offs (CPU only)",
     ("/threading.py", "/queue.py", "/concurrent/futures/", "/selectors.py",
      "/harness/cooperative.py"), None),
]
HANDOFF_BUILTINS = ("_thread.lock", "_thread.RLock", "time.sleep",
                    "_queue.SimpleQueue")
SOCKET_BUILTINS = ("_socket.socket", "_ssl.")
OTHER = "other (unattributed: imports, main loop)"
BUCKETS = ["prompt building (methods/react)", "HTTP client + JSON",
           "LLM client: request assembly", "cache reads + writes (llm/cache.py)",
           "token accounting", "records + trajectories (store, writer)",
           "environment steps (plancraft)", "thread hand-offs (CPU only)",
           "runner: episode loop, events", OTHER]

Func = tuple[str, int, str]
# Subtrees worth a line of their own, by cumulative CPU (they overlap the buckets and each
# other): (label, path fragment, function name).
SUBTREES = [
    ("HTTP exchange (transport post)", "/harness/llm/transport.py", "post"),
    ("request body + cache key (json + sha256)", "/harness/llm/cache.py", "body_and_key"),
    ("cache get", "/harness/llm/cache.py", "get"),
    ("cache put (insert + commit)", "/harness/llm/cache.py", "put"),
    ("ReAct prompt (_messages)", "/methods/react/__init__.py", "_messages"),
    ("ReAct few-shot examples (ExampleBank)", "/methods/react/examples.py", "examples"),
    ("  of which oracle rollouts (per stream)", "/methods/rollouts.py", "oracle_rollout"),
    ("Plancraft env reset", "/benchmarks/plancraft/env.py", "reset"),
    ("Plancraft env step", "/benchmarks/plancraft/env.py", "step"),
    ("episode record (make_record)", "/harness/runner/unit.py", "make_record"),
    ("writer (Writer.handle: records, trajectories)", "/harness/runner/writer.py", "handle"),
]
THINK = "Thought: I will take stock first.\nAction: think: what does the recipe need?"


def own_bucket(func: Func) -> Optional[str]:
    """The bucket a function's own CPU goes to by where it lives; None: its callers'."""
    filename, _, name = func
    if filename == "~":  # a builtin: "<method 'acquire' of '_thread.lock' objects>"
        if any(b in name for b in HANDOFF_BUILTINS):
            return "thread hand-offs (CPU only)"
        if any(b in name for b in SOCKET_BUILTINS):
            return "HTTP client + JSON"
        return None
    path = filename.replace(os.sep, "/")
    for bucket, fragments, names in RULES:
        if any(f in path for f in fragments) and (names is None or name in names):
            return bucket
    return None


def bucket_shares(stats: dict[Func, tuple]
                  ) -> tuple[dict[str, float], dict[str, dict[Func, float]], dict[str, float]]:
    """Seconds of CPU per bucket, and each function's part in it: each function's own time
    in its bucket, or spread over its callers' buckets in proportion to the CPU each caller
    spent in it."""
    memo: dict[Func, dict[str, float]] = {}  # final answers
    busy: set[Func] = set()  # on the current path: a caller there closes a cycle

    def spread(func: Func, partial: dict[Func, dict[str, float]]) -> tuple[dict[str, float], bool]:
        """(bucket -> share, complete): incomplete when a cycle cut some callers off; those
        answers hold only for the current top-level function (`partial`)."""
        if func in memo:
            return memo[func], True
        if func in partial:
            return partial[func], False
        bucket = own_bucket(func)
        if bucket is not None:
            memo[func] = {bucket: 1.0}
            return memo[func], True
        busy.add(func)
        complete, weighted = True, []
        for caller, edge in (stats[func][4] if func in stats else {}).items():
            if caller in busy:
                complete = False
                continue
            shares, done = spread(caller, partial)
            complete = complete and done
            if shares:
                weighted.append((shares, edge[3] or edge[1] or 1e-12))
        busy.discard(func)
        total = sum(w for _, w in weighted)
        out: dict[str, float] = {}
        for shares, weight in weighted:
            for b, share in shares.items():
                out[b] = out.get(b, 0.0) + share * weight / total
        if not weighted and complete:
            out = {OTHER: 1.0}  # nobody classified calls it: the thread's own loop
        (memo if complete else partial)[func] = out
        return out, complete

    def final(func: Func) -> dict[str, float]:
        if func not in memo:
            shares, _ = spread(func, {})
            memo[func] = shares or {OTHER: 1.0}
        return memo[func]

    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    totals = {b: 0.0 for b in BUCKETS}
    parts: dict[str, dict[Func, float]] = {b: {} for b in BUCKETS}
    events = {b: 0.0 for b in BUCKETS}  # function calls (Python and builtin)
    for func, (_, nc, tt, _, _) in stats.items():
        for b, share in final(func).items():
            totals[b] = totals.get(b, 0.0) + tt * share
            parts.setdefault(b, {})[func] = tt * share
            events[b] = events.get(b, 0.0) + nc * share
    return totals, parts, events


class ThreadProfiles:
    """cProfile in every thread started while active (the streams' pool threads), each
    with its own CPU clock; the main thread's profile apart (run set-up and waits)."""

    def __init__(self) -> None:
        self.profiles: list[cProfile.Profile] = []
        self.main = cProfile.Profile(time.thread_time_ns, 1e-9)
        self._lock = threading.Lock()
        self._run = threading.Thread.run

    def __enter__(self) -> "ThreadProfiles":
        original, profiles, lock = self._run, self.profiles, self._lock

        def profiled_run(thread: threading.Thread) -> None:
            profile = cProfile.Profile(time.thread_time_ns, 1e-9)
            profile.enable()
            try:
                original(thread)
            finally:
                profile.disable()
                with lock:
                    profiles.append(profile)

        threading.Thread.run = profiled_run  # type: ignore[method-assign]
        self.main.enable()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.main.disable()
        threading.Thread.run = self._run  # type: ignore[method-assign]

    def streams(self) -> pstats.Stats:
        merged = pstats.Stats(self.profiles[0])
        for profile in self.profiles[1:]:
            merged.add(profile)
        return merged


def cpu_s(pid: int) -> float:
    """User + system CPU of a process (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def _switches() -> int:
    """Context switches of this process so far, voluntary and not (all threads)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_nvcsw + usage.ru_nivcsw


def served(base_url: str) -> int:
    root = base_url.rsplit("/v1", 1)[0]
    with urllib.request.urlopen(f"{root}/stats", timeout=10) as answer:
        return int(json.load(answer)["requests"])


def play(base_url: str, args: argparse.Namespace, streams: int, limit: int,
         profiles: Optional[ThreadProfiles] = None) -> dict[str, Any]:
    """One run; its wall and CPU time, the calls the server answered and the records'."""
    with tempfile.TemporaryDirectory() as out:
        llm = LLMConfig(base_url=base_url, cache=args.cache, concurrency=max(64, streams),
                        cache_path=str(Path(out) / "llm-cache.sqlite"))  # fresh: every call a miss
        spec = RunConfig(benchmarks=("plancraft",), methods=("react",),
                         splits={"plancraft": ("val.small",)}, seeds=tuple(range(streams)),
                         limit=limit, model="fake", budgets=(Budget(args.steps),), llm=llm)
        execution = ExecutionConfig(out=out, workers=0, progress=False, concurrency=streams,
                                    trajectories=True)
        calls_before, server_before = served(base_url), cpu_s(args.server_pid)
        cpu_before, began, usage = time.process_time(), time.perf_counter(), os.times()
        switches = _switches()
        if profiles is None:
            outcome = execute(spec, execution)
        else:
            with profiles:
                outcome = execute(spec, execution)
        cpu, wall = time.process_time() - cpu_before, time.perf_counter() - began
        system = os.times().system - usage.system
        switches = _switches() - switches
        calls, server_cpu = served(base_url) - calls_before, cpu_s(args.server_pid) - server_before
        records = read_directory(out)
    return {"wall": wall, "cpu": cpu, "system": system, "switches": switches,
            "calls": calls, "server_cpu": server_cpu,
            "episodes": outcome.results, "successes": outcome.successes,
            "record_calls": sum(r.llm_calls for r in records)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=32, help="streams in flight (threads)")
    parser.add_argument("--limit", type=int, default=8, help="instances per stream")
    parser.add_argument("--steps", type=int, default=12, help="step budget per episode")
    parser.add_argument("--latency-ms", type=float, default=100)
    parser.add_argument("--cache", default="rw", choices=("rw", "off"))
    parser.add_argument("--policy", default="plancraft", choices=("plancraft", "think"),
                        help="the server's replies: the planner's next action (episodes end when "
                             "won), or always a `think:` action (every episode --steps calls)")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--dump", help="also write the stream threads' merged profile here")
    args = parser.parse_args()
    scratch = tempfile.TemporaryDirectory()
    server_cmd = [sys.executable, "-m", "lifebench.testing.fakeserver", "--port", "0",
                  "--latency-ms", str(args.latency_ms)]
    if args.policy == "plancraft":
        server_cmd += ["--policy", "plancraft"]
    else:
        script = Path(scratch.name) / "reply.json"
        script.write_text(json.dumps([THINK]))
        server_cmd += ["--script", str(script)]
    with scratch, running(server_cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT) as server:
        base_url = server.stdout.readline().split()[-1]  # "listening on URL"
        args.server_pid = server.pid
        play(base_url, args, streams=2, limit=1)  # warm-up: imports, data, connections
        plain = play(base_url, args, args.streams, args.limit)
        profiles = ThreadProfiles()
        profiled = play(base_url, args, args.streams, args.limit, profiles)
    report(args, plain, profiled, profiles)


def report(args: argparse.Namespace, plain: dict[str, Any], profiled: dict[str, Any],
           profiles: ThreadProfiles) -> None:
    calls = profiled["calls"] or 1
    print(f"ReAct on Plancraft val.small: {args.streams} streams x {args.limit} episode(s), "
          f"budget {args.steps} steps, workers=0 (threads), cache {args.cache}, trajectories on; "
          f"fake server replying {args.policy!r}, {args.latency_ms:g} ms per request, its own "
          f"process; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} "
          f"(one run: expect noise)")
    for label, run in (("without profiler", plain), ("under cProfile", profiled)):
        n = run["calls"] or 1
        print(f"  {label:17s} {run['episodes']:4d} episodes ({run['successes']} won), "
              f"{run['calls']:5d} LLM calls (records say {run['record_calls']}), "
              f"{run['wall']:6.2f} s wall, {run['calls'] / run['wall']:6.1f} calls/s; harness CPU "
              f"{run['cpu']:6.2f} s = {1e3 * run['cpu'] / n:6.2f} ms/call "
              f"({100 * run['system'] / (run['cpu'] or 1):.0f}% in the kernel, "
              f"{run['switches'] / n:.1f} context switches/call); server CPU "
              f"{1e3 * run['server_cpu'] / n:5.2f} ms/call")
    base = plain["cpu"] / (plain["calls"] or 1)
    stream_stats = profiles.streams()
    main_stats = pstats.Stats(profiles.main)
    stream_cpu = stream_stats.total_tt
    main_cpu = main_stats.total_tt
    profiled_total = stream_cpu + main_cpu
    print(f"\nharness CPU per LLM call (target < 1 ms): {1e3 * base:.2f} ms without the profiler; "
          f"cProfile makes it {profiled['cpu'] / calls / base if base else 0:.1f}x slower.")
    print(f"Profiled CPU: {1e3 * stream_cpu / calls:.2f} ms/call in the {len(profiles.profiles)} "
          f"stream threads, {1e3 * main_cpu / calls:.2f} ms/call in the main thread (run set-up: "
          f"plan, manifest, store; it waits on the streams), {1e3 * profiled['cpu'] / calls:.2f} "
          f"ms/call for the process (the rest: the interpreter, GC, the profiler itself).")
    buckets, parts, events = bucket_shares(stream_stats.stats)  # type: ignore[attr-defined]
    buckets["main thread: run set-up + teardown"] = main_cpu
    events["main thread: run set-up + teardown"] = sum(
        row[1] for row in main_stats.stats.values())  # type: ignore[attr-defined]
    print("\nPer LLM call, by bucket: CPU under cProfile (waits excluded), its share, that share of"
          "\nthe unprofiled CPU per call (an estimate: the profiler's cost is per function call, so"
          "\nbuckets of many small Python calls are overstated), and function calls per LLM call.")
    print(f"  {'bucket':42s} {'profiled ms':>11s} {'share':>7s} {'est. ms':>8s} {'fn calls':>9s}")
    for bucket, seconds in sorted(buckets.items(), key=lambda kv: -kv[1]):
        share = seconds / profiled_total if profiled_total else 0.0
        print(f"  {bucket:42s} {1e3 * seconds / calls:11.3f} {100 * share:6.1f}% "
              f"{1e3 * base * share:8.3f} {events.get(bucket, 0.0) / calls:9.0f}")
    print(f"  {'total':42s} {1e3 * profiled_total / calls:11.3f} {100.0:6.1f}% {1e3 * base:8.3f} "
          f"{sum(events.values()) / calls:9.0f}")
    print("\nthe largest own-CPU parts of each bucket (profiled ms per LLM call)")
    for bucket, seconds in sorted(buckets.items(), key=lambda kv: -kv[1]):
        top = sorted(parts.get(bucket, {}).items(), key=lambda kv: -kv[1])[:3]
        if top:
            print(f"  {bucket}: " + "; ".join(f"{_where(f)} {1e3 * t / calls:.2f}" for f, t in top))

    rows = stream_stats.stats  # type: ignore[attr-defined]
    print("\nsubtrees, cumulative profiled CPU per LLM call (they overlap the buckets)")
    for label, fragment, name in SUBTREES:
        found = [row for (f, _, n), row in rows.items()
                 if fragment in f.replace(os.sep, "/") and n == name]
        cum = sum(row[3] for row in found)
        print(f"  {label:46s} {1e3 * cum / calls:8.3f} ms  ({sum(r[1] for r in found) / calls:.2f} "
              f"calls per LLM call)")
    for title, index in (("cumulative", 3), ("own (tottime)", 2)):
        print(f"\ntop {args.top} functions of the stream threads by {title} CPU per LLM call "
              f"(profiled ms; calls per LLM call)")
        print(f"  {'cum ms':>8s} {'own ms':>8s} {'calls':>7s}  function")
        for func, row in sorted(rows.items(), key=lambda kv: -kv[1][index])[:args.top]:
            print(f"  {1e3 * row[3] / calls:8.3f} {1e3 * row[2] / calls:8.3f} "
                  f"{row[1] / calls:7.2f}  {_where(func)}")
    if args.dump:
        stream_stats.dump_stats(args.dump)
        print(f"\nprofile of the stream threads written to {args.dump} (python -m pstats)")


def _where(func: Func) -> str:
    filename, line, name = func
    return name if filename == "~" else f"{_short(filename)}:{line}({name})"


def _short(filename: str) -> str:
    for marker in ("site-packages/", str(ROOT) + "/"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    return re.sub(r".*/lib/python3\.\d+/", "", filename)


if __name__ == "__main__":
    main()
