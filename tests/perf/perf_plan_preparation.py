"""Is a preparation priced right? For each method that prepares, its full-scale preparation
is played once against the scripted server (`lifebench run --limit 1`: the preparation and
one episode), and set beside what `--plan` priced it at: on the scripted model (nothing
sent), and from a pilot of one instance (the preparation at smoke scale on the server).

    LIFEBENCH_DATA=... .venv/bin/python tests/perf/perf_plan_preparation.py OUT [CASE ...]

CASE is METHOD:BENCHMARK (default: every case below). A case whose full run is in OUT
already is not played again. InstructRAG's full preparation on ALFWorld takes hours here
(6,000 training episodes, each loading a game); it runs on Plancraft, whose episodes are
fast. RAP's support paths are the oracle's (no call) where a benchmark has one, so it runs
on Crafter (support_paths=agent), its episodes cut to 3 steps (length=3).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

CASES = {
    "instructrag:plancraft": ["--method", "instructrag", "--benchmark", "plancraft", "--split", "val"],
    "automanual:plancraft": ["--method", "automanual", "--benchmark", "plancraft", "--split", "val"],
    "automanual:alfworld": ["--method", "automanual", "--benchmark", "alfworld"],
    "rap:crafter": ["--method", "rap", "--benchmark", "crafter", "--benchmark-arg", "length=3"],
    "rap:plancraft": ["--method", "rap", "--benchmark", "plancraft", "--split", "val"],
}
COMMON = ["--limit", "1", "--model", "m", "--cache", "off", "--no-progress"]


def lifebench(*args: str, server: bool) -> float:
    """Run `lifebench ARGS` (beside a scripted server when `server`); its wall seconds."""
    command = [sys.executable, "-m", "lifebench.cli", *args]
    if server:
        command = [sys.executable, "-m", "lifebench.testing.fakeserver", "--policy", "scripted",
                   "--", *command, "--base-url", "{url}"]
    else:
        command += ["--base-url", "http://127.0.0.1:9/v1"]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return time.monotonic() - started


def preparation(out: Path) -> dict:
    for line in (out / "episodes.jsonl").read_text().splitlines():
        note = json.loads(line)["extra"].get("prepared")
        if isinstance(note, dict) and note.get("reused") is False:
            return note
    raise SystemExit(f"{out}: no record carries its preparation")


def planned(out: Path, spent: int) -> str:
    """The plan's preparation calls, central (low–high), and where what was spent lies."""
    [cell] = [c for c in json.loads((out / "plan.json").read_text())["cells"]]
    low, high = cell["preparation_calls"]
    where = "below" if spent < low else "above" if spent > high else "within"
    return f"{cell['central']['preparation_calls']:,.0f} ({low:,.0f}–{high:,.0f}) | {where}"


def main() -> None:
    root = Path(sys.argv[1])
    cases = sys.argv[2:] or list(CASES)
    print("| method | benchmark | full preparation: calls | prompt tokens | wall s | "
          "plan, scripted: calls | spent | plan, pilot of 1: calls | spent |")
    print("|---|---|---|---|---|---|---|---|---|")
    for case in cases:
        args, where = CASES[case], root / case.replace(":", "-")
        full = where / "full"
        wall = "(earlier)"
        if not (full / "episodes.jsonl").exists():
            wall = f"{lifebench('run', *args, *COMMON, '--out', str(full), server=True):.0f}"
        spent = preparation(full)
        lifebench("run", "--plan", *args, *COMMON, "--out", str(where / "scripted"), server=False)
        lifebench("run", "--plan", "--pilot", "1", *args, *COMMON, "--out", str(where / "pilot"),
                  server=True)
        calls = spent["llm_calls"]
        method, benchmark = case.split(":")
        print(f"| {method} | {benchmark} | {calls:,} | {spent['tokens_in']:,} | {wall} | "
              f"{planned(where / 'scripted', calls)} | {planned(where / 'pilot', calls)} |", flush=True)


if __name__ == "__main__":
    main()
