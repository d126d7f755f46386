"""The plan as text: a table of what the run still has to spend (each figure its central
estimate and, in brackets, its range or 90% interval), what the results directory already
holds, apart, the pilot's own cost, the notes, assumptions and refused cells."""

from __future__ import annotations

from typing import Any, Optional

from lifebench.leaderboard.render import render
from lifebench.planning.cells import CellPlan, Plan


def figure(central: Optional[float], pair: Optional[Any], digits: int = 0) -> str:
    """`central (low–high)`, or one number when the three agree at these digits."""
    if pair is None:
        return "—"
    low, high = pair
    central = (low + high) / 2 if central is None else central
    shown = [f"{v:,.{digits}f}" for v in (central, low, high)]
    return shown[0] if len(set(shown)) == 1 else f"{shown[0]} ({shown[1]}–{shown[2]})"


def plan_lines(plan: Plan) -> list[str]:
    """The plan as markdown tables, its notes, assumptions and refused cells."""
    what = "90% interval" if plan.interval == "90%" else "range"
    short = "90%" if plan.interval == "90%" else "range"
    headers = ["method", "benchmark", "split", "episodes to run",
               *(f"{name}: central ({short})" for name in
                 ("LLM calls", "prompt tokens", "completion tokens", "hours", "USD")), "MDE"]
    rows = [[_name(c), c.benchmark, c.split, f"{c.episodes_to_run:,}",
             *_figures(c.central, c), f"{c.mde:.3f}" if c.mde is not None else "—"]
            for c in plan.cells]
    t = plan.totals
    rows.append(["total", "", "", f"{t['episodes_to_run']:,}", *_figures(t["central"], t), ""])
    lines = [render(headers, rows, "markdown"),
             f"each figure: the central estimate and, in brackets, the {what} of what the run "
             f"still has to spend"]
    lines += _recorded(plan.cells)
    if plan.pilot is not None:
        p = plan.pilot
        builds = f" and {p['context_builds']:,} context builds" if p["context_builds"] else ""
        lines.append(f"pilot: {p['episodes']:,} episodes ({p['attempts']:,} attempts){builds} on "
                     f"{p['endpoint']}: {p['calls']:,} LLM calls, {p['tokens_in']:,} prompt and "
                     f"{p['tokens_out']:,} completion tokens, {p['elapsed_s']:,.1f} s elapsed with "
                     f"{p['in_flight']} episode(s) in flight")
    lines += [f"note: {_name(c)} on {c.benchmark}:{c.split}: {n}" for c in plan.cells for n in c.notes]
    lines += [f"assumption: {a}" for a in plan.assumptions]
    lines += [f"refused: {r['method']} on {r['benchmark']}:{r['split']}: {r['reason']}"
              for r in plan.refused]
    return lines


def _name(cell: CellPlan) -> str:
    return cell.method + (f" + {cell.context}" if cell.context else "")


def _figures(central: dict[str, float], source: Any) -> list[str]:
    def get(name: str) -> Any:
        return source.get(name) if isinstance(source, dict) else getattr(source, name)
    return [figure(central.get(name), get(name), digits)
            for name, digits in (("calls", 0), ("tokens_in", 0), ("tokens_out", 0),
                                 ("hours", 2), ("cost_usd", 2))]


def _recorded(cells: list[CellPlan]) -> list[str]:
    """What the results directory held, per cell: left out of the estimate above."""
    held = [c for c in cells if c.recorded.get("episodes") or c.recorded.get("preparations")
            or c.recorded.get("builds")]
    if not held:
        return []
    rows = [[_name(c), c.benchmark, c.split, f"{c.recorded.get('episodes', 0):,}",
             f"{c.recorded.get('calls', 0):,}", f"{c.recorded.get('tokens_in', 0):,}",
             f"{c.recorded.get('tokens_out', 0):,}",
             f"{c.recorded.get('preparations', c.recorded.get('builds', 0)):,}"] for c in held]
    return ["", "Already in the results directory (left out above):", "",
            render(["method", "benchmark", "split", "episodes recorded", "LLM calls",
                    "prompt tokens", "completion tokens", "preparations or builds stored"], rows,
                   "markdown")]
