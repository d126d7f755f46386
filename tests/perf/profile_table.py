"""Where the suite's time goes: the tables of tests/README.md, from the report `make
test-profile` writes (`--profile-report`, tests/timing.py: one JSON line per test).

    .venv/bin/python tests/perf/profile_table.py results/test-profile.jsonl [--wall S]

Seconds are test-seconds (setup, call and teardown summed over the workers), so they add up
to about `workers x wall time`. A fixture's setup is charged to the first test that needed
it; a process is counted where the test's own process started it (the CLI's own children,
such as its JVMs, are the CLI's time).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

LIMIT_S = 30.0


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def seconds(test: dict) -> float:
    return sum(test["seconds"].values())


def cpu(test: dict) -> float:
    """CPU seconds (0 in reports written before they were recorded)."""
    return test.get("cpu", 0.0)


def kind(test: dict) -> str:
    """The one kind a test's time is charged to: what it spends its time waiting on."""
    started = test["processes"]
    if "real_model" in test["marks"] or started.get("llama.cpp server"):
        return "real model (llama.cpp server)"
    if started.get("lifebench CLI"):
        return "lifebench CLI subprocesses"
    if started.get("chromium"):
        return "headless Chromium"
    if started:
        return "other processes (JVMs, Ray, pip, scripts)"
    if "llm_server" in test["fixtures"]:
        return "in process, with the scripted server"
    return "in process"


def table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " if i == 0 else " ---: "
                                                               for i in range(len(headers))) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def report(tests: list[dict], wall: float | None, top: int) -> str:
    total = sum(seconds(t) for t in tests)
    out = [f"{len(tests)} tests, {total:,.0f} test-seconds"
           + (f" in {wall:,.0f} s of wall time" if wall else "")
           + f" (setup {sum(t['seconds'].get('setup', 0) for t in tests):,.0f} s, call "
             f"{sum(t['seconds'].get('call', 0) for t in tests):,.0f} s, teardown "
             f"{sum(t['seconds'].get('teardown', 0) for t in tests):,.0f} s); "
             f"{sum(map(cpu, tests)):,.0f} CPU-seconds", ""]

    by_kind: dict[str, list[dict]] = defaultdict(list)
    for t in tests:
        by_kind[kind(t)].append(t)
    started = Counter()
    for t in tests:
        started.update(t["processes"])
    out += ["By kind (each test counted once, under what it waits on):", "",
            table(["kind", "tests", "seconds", "share", "CPU-seconds"],
                  [[k, len(ts), f"{sum(map(seconds, ts)):,.0f}", f"{sum(map(seconds, ts)) / total:.0%}",
                    f"{sum(map(cpu, ts)):,.0f}"]
                   for k, ts in sorted(by_kind.items(), key=lambda kv: -sum(map(seconds, kv[1])))]),
            "", "Processes the tests started:", "",
            table(["process", "started"], [[k, n] for k, n in started.most_common()]), ""]

    by_file: dict[str, list[dict]] = defaultdict(list)
    for t in tests:
        by_file[t["file"]].append(t)
    files = sorted(by_file.items(), key=lambda kv: -sum(map(seconds, kv[1])))
    out += [f"By file (the {top} costliest):", "",
            table(["file", "tests", "seconds", "share", "CPU-seconds", "CLI runs"],
                  [[f, len(ts), f"{sum(map(seconds, ts)):,.0f}", f"{sum(map(seconds, ts)) / total:.1%}",
                    f"{sum(map(cpu, ts)):,.0f}", sum(t["processes"].get("lifebench CLI", 0) for t in ts)]
                   for f, ts in files[:top]]),
            ""]

    setups: dict[str, list[float]] = defaultdict(list)
    for t in tests:
        for name, s in t["fixture_setup"].items():
            setups[name].append(s)
    fixtures = sorted(setups.items(), key=lambda kv: -sum(kv[1]))
    out += [f"By fixture (setup seconds; the {top} costliest):", "",
            table(["fixture (scope)", "set up", "seconds", "each"],
                  [[name, len(s), f"{sum(s):,.1f}", f"{sum(s) / len(s):.2f}"] for name, s in fixtures[:top]]),
            ""]

    slowest = sorted(tests, key=lambda t: -seconds(t))
    out += [f"The {top} slowest tests:", "",
            table(["test", "seconds", "CPU-seconds", "marked slow"],
                  [[t["test"], f"{seconds(t):.1f}", f"{cpu(t):.1f}", "yes" if "slow" in t["marks"] else ""]
                   for t in slowest[:top]]), ""]
    costliest = sorted(tests, key=lambda t: -cpu(t))
    if cpu(costliest[0]):
        out += [f"The {top} costliest tests in CPU (what a test costs CI, whose check takes the "
                "cores the tests leave idle):", "",
                table(["test", "CPU-seconds", "seconds"],
                      [[t["test"], f"{cpu(t):.1f}", f"{seconds(t):.1f}"] for t in costliest[:top]]), ""]
    ends: dict[str, float] = {}
    for t in tests:
        if "ended" in t:
            ends[t["worker"]] = max(ends.get(t["worker"], 0.0), t["ended"])
    if len(ends) > 1:
        out += [f"The workers ended {max(ends.values()) - min(ends.values()):.0f} s apart "
                f"(the run's tail on fewer cores).", ""]
    over = [t for t in slowest if seconds(t) > LIMIT_S and "slow" not in t["marks"]]
    out.append(f"Tests over {LIMIT_S:g} s not marked slow: "
               + (", ".join(f"{t['test']} ({seconds(t):.0f} s)" for t in over) if over else "none"))
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("--wall", type=float, help="the run's wall time, in seconds")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    print(report(load(args.report), args.wall, args.top))


if __name__ == "__main__":
    main()
