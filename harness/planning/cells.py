"""The plan's records: a cell's estimate, the plan, the throughput hours come from, and the
arithmetic every basis shares (hours, USD, totals, the minimum detectable difference).

`plan.json` is versioned. Version 2 (this one) changed the meaning of the pairs `calls`,
`tokens_in`, `tokens_out`, `preparation_calls`, `hours` and `cost_usd`: they are what the
run still has to spend (what the results directory holds is left out, and given apart in
`recorded`), as a 90% interval when a pilot measured them (`interval: "90%"`) or the
scripted model's low-high range (`interval: "range"`); `central` holds the central
estimate of each, and `episodes_to_run` the episodes still to play. Version 1 had only the
range, over the whole cell."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import Any, Optional

from lifebench.planning.bootstrap import Estimate

PLAN_VERSION = 2
Z_ALPHA, Z_POWER = 1.959963984540054, 0.8416212335729143  # alpha 0.05 two-sided, power 0.8
PRICED = ("calls", "tokens_in", "tokens_out", "preparation_calls", "hours", "cost_usd")


@dataclass
class CellPlan:
    method: str
    benchmark: str
    split: str
    context: str
    method_config_hash: str
    episodes: int  # the whole cell's
    units: int  # instances x seeds: the episodes' (instance, seed) pairs
    instances: int = 0  # the unit of every comparison: the MDE's n
    calls: tuple[float, float] = (0.0, 0.0)
    tokens_in: tuple[float, float] = (0.0, 0.0)
    tokens_out: tuple[float, float] = (0.0, 0.0)
    preparation_calls: tuple[float, float] = (0.0, 0.0)
    hours: Optional[tuple[float, float]] = None
    cost_usd: Optional[tuple[float, float]] = None
    mde: Optional[float] = None
    probe: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # -- version 2
    central: dict[str, float] = field(default_factory=dict)
    episodes_to_run: int = 0
    recorded: dict[str, float] = field(default_factory=dict)  # what the directory held
    pilot: dict[str, Any] = field(default_factory=dict)  # what the pilot measured

    def put(self, name: str, estimate: Estimate) -> None:
        """Set one of PRICED from an estimate."""
        setattr(self, name, (estimate.low, estimate.high))
        self.central[name] = estimate.central

    def get(self, name: str) -> Optional[Estimate]:
        pair = getattr(self, name)
        if pair is None:
            return None
        return Estimate(self.central.get(name, (pair[0] + pair[1]) / 2), pair[0], pair[1])


@dataclass
class Plan:
    cells: list[CellPlan]
    refused: list[dict[str, str]]
    assumptions: list[str]
    totals: dict[str, Any]
    interval: str = "range"  # "range": the scripted model's; "90%": a pilot's interval
    pilot: Optional[dict[str, Any]] = None  # what the pilot itself cost

    def to_json(self) -> str:
        return json.dumps({"format": "lifebench-plan", "version": PLAN_VERSION,
                           "interval": self.interval,
                           "cells": [dataclasses.asdict(c) for c in self.cells],
                           "refused": self.refused, "assumptions": self.assumptions,
                           "totals": self.totals, "pilot": self.pilot}, indent=1)


@dataclass(frozen=True)
class Throughput:
    """Tokens per second: one rate, or the profile's prefill and decode rates."""

    tokens_per_s: Optional[float] = None
    prefill: Optional[float] = None
    decode: Optional[float] = None
    source: str = ""

    def hours(self, tokens_in: float, tokens_out: float) -> Optional[float]:
        if self.tokens_per_s:
            return (tokens_in + tokens_out) / self.tokens_per_s / 3600
        if self.prefill and self.decode:
            return (tokens_in / self.prefill + tokens_out / self.decode) / 3600
        return None

    @property
    def known(self) -> bool:
        return self.hours(1.0, 1.0) is not None


def price(cell: CellPlan, throughput: Throughput, rates: Optional[tuple[float, float]],
          hours: Optional[Estimate] = None) -> None:
    """The cell's hours (at `throughput`, else the `hours` given) and USD (at `rates`, USD
    per million prompt and completion tokens), at each end and centrally."""
    tokens_in, tokens_out = cell.get("tokens_in"), cell.get("tokens_out")
    assert tokens_in is not None and tokens_out is not None
    ends = [(tokens_in.central, tokens_out.central), (tokens_in.low, tokens_out.low),
            (tokens_in.high, tokens_out.high)]
    if throughput.known:
        central, low, high = (throughput.hours(*pair) or 0.0 for pair in ends)
        hours = Estimate(central, low, high)
    if hours is not None:
        cell.put("hours", hours)
    if rates is not None:
        central, low, high = ((t_in * rates[0] + t_out * rates[1]) / 1e6 for t_in, t_out in ends)
        cell.put("cost_usd", Estimate(central, low, high))


def scale_tokens(cell: CellPlan, ratio: float) -> None:
    """Token counts times the model's tokens per counted token (`--tokenizer`)."""
    for name in ("tokens_in", "tokens_out"):
        estimate = cell.get(name)
        assert estimate is not None
        cell.put(name, estimate.scaled(ratio))


def mde(n: int, correlation: float) -> Optional[float]:
    """The minimum detectable difference of success over n instances, the unit of every
    comparison: seeds are assumed to add nothing (a model at temperature 0 replays them)."""
    if n < 1:
        return None
    return min(1.0, (Z_ALPHA + Z_POWER) * math.sqrt(2 * 0.25 * (1 - correlation) / n))


def totals(cells: list[CellPlan], overall: Optional[dict[str, Estimate]] = None) -> dict[str, Any]:
    """The plan's totals: each priced quantity summed over the cells (its ends added), or
    the interval `overall` gives for it (a pilot's bootstrap of the total); the central
    estimates and what the directory held, summed."""
    out: dict[str, Any] = {"episodes": sum(c.episodes for c in cells),
                           "episodes_to_run": sum(c.episodes_to_run for c in cells), "central": {}}
    for name in PRICED:
        found = [c.get(name) for c in cells if getattr(c, name) is not None]
        if not found:
            out[name] = None
            continue
        given = (overall or {}).get(name)
        summed = given if given is not None else Estimate(
            sum(e.central for e in found), sum(e.low for e in found), sum(e.high for e in found))
        out[name] = [summed.low, summed.high]
        out["central"][name] = summed.central
    recorded: dict[str, float] = {}
    for cell in cells:
        for key, value in cell.recorded.items():
            recorded[key] = recorded.get(key, 0) + value
    out["recorded"] = recorded
    return out
