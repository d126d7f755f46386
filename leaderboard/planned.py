"""The plan beside what was spent: a results directory holding the `plan.json` that
`--plan` wrote gets a table of each cell's planned LLM calls and prompt tokens (the central
estimate and its range or 90% interval) and what its records spent, each marked within,
below or above, so the plan's calibration is shown, not assumed.

A plan of version 2 prices what the run still had to spend and keeps apart what the
directory held then (`recorded`): the whole cell's plan is their sum. Version 1 priced the
whole cell as a range, without a central estimate."""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, Optional

from lifebench.api.reporting import Table
from lifebench.api.untrusted import parse_json
from lifebench.store.records_file import EPISODES_FILE, read_records_file

PLAN_FILE = "plan.json"
MAX_PLAN_CHARS = 64 * 2**20


def read_plan(directory: Path) -> list[dict[str, Any]]:
    """The plan's cells ([] without a plan; an unreadable one is said in one line), each
    with its `interval` ("range" or "90%")."""
    path = directory / PLAN_FILE
    if not path.is_file():
        return []
    try:
        plan = parse_json(path.read_bytes(), MAX_PLAN_CHARS)
        cells = plan.get("cells") if isinstance(plan, dict) else None
        if plan.get("format") != "lifebench-plan" or not isinstance(cells, list):
            raise ValueError("not a plan `--plan` wrote")
    except (OSError, ValueError, AttributeError) as exc:
        print(f"note: {path} is unreadable ({exc}); the plan is left out", file=sys.stderr)
        return []
    interval = "90%" if plan.get("interval") == "90%" else "range"
    return [{**c, "interval": interval} for c in cells if isinstance(c, dict)
            and _pair(c.get("calls")) and _pair(c.get("tokens_in"))
            and all(isinstance(c.get(k), str) for k in ("method", "benchmark", "split"))]


def _pair(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(_number(v) for v in value)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def planned(cell: dict[str, Any], name: str) -> tuple[float, float, float]:
    """(central, low, high) of the whole cell: what the directory held when it was planned
    plus the estimate of the rest (a version-1 plan: its range, centred)."""
    low, high = cell[name]
    central = (cell.get("central") or {}).get(name)
    recorded = (cell.get("recorded") or {}).get(name, 0)
    held = recorded if _number(recorded) else 0
    central = central if _number(central) else (low + high) / 2
    return central + held, low + held, high + held


def plan_table(directories: list[str | Path]) -> Optional[Table]:
    """The table, for the directories that hold a plan. What was spent is read from each
    directory itself, every attempt (the leaderboard's records, one per key, would leave
    out the retried failures a plan prices)."""
    rows, intervals = [], set()
    for directory in map(Path, directories):
        directory = directory if directory.is_dir() else directory.parent
        cells = read_plan(directory)
        if not cells:
            continue
        spent = _spent(directory)
        for c in cells:
            key = (c["method"], c["benchmark"], c["split"], c.get("method_config_hash"),
                   c.get("context") or "")
            if key not in spent:
                continue
            calls, tokens, episodes = spent[key]
            intervals.add(c["interval"])
            rows.append([c["method"] + (f" + {key[4]}" if key[4] else ""), c["benchmark"],
                         c["split"], f"{c.get('episodes', '?')}", str(episodes),
                         _figure(planned(c, "calls")), f"{calls:,}", _where(calls, planned(c, "calls")),
                         _figure(planned(c, "tokens_in")), f"{tokens:,}",
                         _where(tokens, planned(c, "tokens_in"))])
    if not rows:
        return None
    what = " and ".join(sorted({"90%": "a pilot's 90% interval", "range": "the scripted "
                                "model's low–high range"}[i] for i in intervals))
    return Table.of("The plan against what was spent",
                    ["method", "benchmark", "split", "planned episodes", "episodes recorded",
                     "planned calls", "calls", "", "planned prompt tokens", "prompt tokens", " "],
                    rows, notes=[f"planned: the central estimate and, in brackets, {what} (what "
                                 f"the directory held when planned included); spent: every "
                                 f"attempt's, failures too; a run still under way shows less "
                                 f"than its plan"])


def _spent(directory: Path) -> dict[tuple, list[int]]:
    """Per cell, the calls and prompt tokens of every attempt recorded, and the episodes."""
    path = directory / EPISODES_FILE
    records = read_records_file(path).records if path.is_file() else []
    spent: dict[tuple, list[int]] = defaultdict(lambda: [0, 0, 0])
    for r in records:
        total = spent[(r.method, r.benchmark, r.split, r.method_config_hash, r.context)]
        total[0] += r.llm_calls
        total[1] += r.tokens_in
        total[2] += r.is_result
    return spent


def _figure(value: tuple[float, float, float]) -> str:
    return f"{value[0]:,.0f} ({value[1]:,.0f}–{value[2]:,.0f})"


def _where(value: float, planned: tuple[float, float, float]) -> str:
    return "below" if value < planned[1] else "above" if value > planned[2] else "within"
