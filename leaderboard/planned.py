"""The plan beside what was spent: a results directory holding the `plan.json` that
`--plan` wrote gets a table of each cell's planned range of LLM calls and prompt tokens and
the calls and tokens its records spent, so the plan's calibration is shown, not assumed."""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, Optional

from lifebench.api.records import EpisodeRecord
from lifebench.api.reporting import Table
from lifebench.api.untrusted import parse_json

PLAN_FILE = "plan.json"
MAX_PLAN_CHARS = 64 * 2**20


def read_plan(directory: Path) -> list[dict[str, Any]]:
    """The plan's cells ([] without a plan; an unreadable one is said in one line)."""
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
    return [c for c in cells if isinstance(c, dict) and _pair(c.get("calls"))
            and _pair(c.get("tokens_in")) and all(isinstance(c.get(k), str) for k in
                                                  ("method", "benchmark", "split"))]


def _pair(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)


def plan_table(directories: list[str | Path], records: list[EpisodeRecord]) -> Optional[Table]:
    cells = [c for d in map(Path, directories) for c in read_plan(d if d.is_dir() else d.parent)]
    if not cells:
        return None
    spent: dict[tuple, list[int]] = defaultdict(lambda: [0, 0, 0])
    for r in records:  # every attempt spent, failures too
        total = spent[(r.method, r.benchmark, r.split, r.method_config_hash, r.context)]
        total[0] += r.llm_calls
        total[1] += r.tokens_in
        total[2] += 1
    rows = []
    for c in cells:
        key = (c["method"], c["benchmark"], c["split"], c.get("method_config_hash"),
               c.get("context") or "")
        if key not in spent:
            continue
        calls, tokens, episodes = spent[key]
        rows.append([c["method"] + (f" + {key[4]}" if key[4] else ""), c["benchmark"], c["split"],
                     f"{c.get('episodes', '?')}", str(episodes), _span(c["calls"]), f"{calls:,}",
                     _where(calls, c["calls"]), _span(c["tokens_in"]), f"{tokens:,}",
                     _where(tokens, c["tokens_in"])])
    if not rows:
        return None
    return Table.of("The plan against what was spent",
                    ["method", "benchmark", "split", "planned episodes", "episodes recorded",
                     "planned calls", "calls", "", "planned prompt tokens", "prompt tokens", " "],
                    rows, notes=["planned: `--plan`'s range (low: reference-length episodes; "
                                 "high: full budgets); a run still under way shows less than "
                                 "its plan"])


def _span(pair: list[float]) -> str:
    return f"{pair[0]:,.0f}–{pair[1]:,.0f}"


def _where(value: float, pair: list[float]) -> str:
    return "below" if value < pair[0] else "above" if value > pair[1] else "within"
