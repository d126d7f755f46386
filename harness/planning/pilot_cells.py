"""A plan from a pilot's episodes: each cell's remaining instances extrapolated from the
instances it has recorded (the pilot's, and any an earlier run recorded), by the seeded
bootstrap of `bootstrap.py`; preparations from their own measured cost at the run's scale
(`preparation.py`); instance-context builds from the builds stored."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any, Optional

from lifebench import registry
from lifebench.api.records import EpisodeRecord
from lifebench.config.plugins import method_config_hash
from lifebench.config.run import RunConfig
from lifebench.planning.bootstrap import REPLICATES, Estimate, PilotSample, extrapolate
from lifebench.planning.cells import CellPlan, Throughput, mde, price
from lifebench.planning.pilot import PilotRun
from lifebench.planning.preparation import (MeasuredPreparation, measured, preparation_cost,
                                            prompt_tokens)
from lifebench.planning.recorded import CellKey, Holdings, cell_of, record_cell
from lifebench.runner.contexts import context_key
from lifebench.runner.streams import StreamSpec
from lifebench.store.contexts import ContextStore

METRICS = ("calls", "tokens_in", "tokens_out", "wall_s")


@dataclass
class _Cell:
    """What the pilot knows of one cell: its recorded instances' costs (preparation left
    out) and episodes, the preparation it measured."""

    units: dict[tuple, dict[str, float]]
    long: dict[tuple, bool]  # per unit: an episode of it ran to its budget
    records: list[EpisodeRecord]
    preparation: Optional[MeasuredPreparation]
    remaining: float  # instances (x seeds x budgets) still to play
    budget_steps: float  # the mean budget of the episodes still to play
    trials: int

    def long_cost(self, window: Optional[int]) -> dict[str, float]:
        """An instance whose every trial runs to the budget, at the rates its recorded
        episodes show: calls and seconds per step, completion tokens per call, and prompts
        from their first call's size, grown by what they grew per step."""
        calls, steps, firsts, grown, spans, wall, out = 0, 0, [], 0.0, 0, 0.0, 0
        for r in self.records:
            prep = measured(r, 1.0)
            own = r.llm_call_tokens[prep.calls if prep is not None else 0:]
            calls, steps, wall = calls + len(own), steps + r.steps, wall + r.wall_s
            out += sum(c.tokens_out for c in own)
            if own:
                firsts.append(own[0].tokens_in)
            if len(own) >= 2 and r.steps >= 2:
                grown, spans = grown + max(own[-1].tokens_in - own[0].tokens_in, 0), spans + r.steps - 1
        if not steps or not calls:
            return {}
        per_step, budget = calls / steps, self.budget_steps
        prompts = per_step * prompt_tokens(fmean(firsts), grown / spans if spans else 0.0,
                                           budget, window)
        return {"calls": self.trials * per_step * budget, "tokens_in": self.trials * prompts,
                "tokens_out": self.trials * per_step * budget * out / calls,
                "wall_s": self.trials * wall / steps * budget}


def smoke_hash(config: RunConfig, stream: StreamSpec) -> str:
    """The config hash the smoke variant of this stream's method config has."""
    smoke = dataclasses.replace(config, smoke=True)
    real, small = config.method_configs(stream.method, stream.benchmark), \
        smoke.method_configs(stream.method, stream.benchmark)
    settings = config.llm.answer_settings(registry.method_class(stream.method).needs.tools) \
        if stream.llm is not None else None
    for mine, theirs in zip(real, small):
        if method_config_hash(stream.method, mine, settings) == stream.method_config_hash:
            return method_config_hash(stream.method, theirs, settings)
    return stream.method_config_hash


def pilot_cells(config: RunConfig, cells: dict[CellKey, list[StreamSpec]], held: Holdings,
                pilot: PilotRun, out: Path, throughput: Throughput,
                prices: dict[str, tuple[float, float]], correlation: float,
                window: Optional[int]) -> tuple[list[CellPlan], dict[str, Estimate], list[str]]:
    """The cells' plans, the totals' estimates and the assumptions they rest on (`window`:
    the model's context window, which caps a long instance's prompts)."""
    apart = pilot.smoke_records()
    known = {key: _known(config, key, members, held, pilot.smoke_methods, apart)
             for key, members in cells.items()}
    samples = {key: PilotSample((key[1], key[2], key[3]), tuple(k.units.values()), k.remaining,
                                tuple(k.long.values()), k.long_cost(window),
                                cells[key][0].stop_after_success)
               for key, k in known.items() if k.units and cells[key][0].llm is not None}
    builds = _context_samples(cells, out)
    samples.update({key: sample for key, (sample, _) in builds.items() if sample is not None})
    found = extrapolate(samples, METRICS)
    planned = []
    added = {name: Estimate.exact(0.0) for name in ADDED}  # preparations, over the cells
    made: set[str] = set()  # preparation keys priced (a key shared by cells is made once)
    rates = prices.get(config.model or "")
    for key, members in cells.items():
        cell = _new_cell(config, members, held, correlation)
        planned.append(cell)
        if members[0].llm is None:  # no model: nothing to spend
            for name in ("calls", "tokens_in", "tokens_out", "preparation_calls"):
                cell.put(name, Estimate.exact(0.0))
        elif key not in samples:
            cell.notes.append("no instance of it is recorded (its pilot episodes failed?); no estimate")
        else:
            prep = _preparations(members, known[key], held, made, window)
            mine = _fill(cell, found.cells[key], prep, known[key], throughput, rates)
            added = {name: added[name].plus(mine[name]) for name in ADDED}
            cell.pilot = _described(known[key], found.residuals)
    for key, (sample, cell) in builds.items():
        planned.append(cell)
        if sample is not None:
            for name in ("calls", "tokens_in", "tokens_out"):
                cell.put(name, found.cells[key][name])
            price(cell, throughput, prices.get(config.context_model or config.model or ""),
                  found.cells[key]["wall_s"].scaled(1 / 3600))
    return planned, _overall(found.total, added, throughput, rates), \
        _assumptions(pilot, found.residuals, throughput)


ADDED = ("calls", "tokens_in", "tokens_out", "preparation_calls", "wall_s")


def _fill(cell: CellPlan, found: dict[str, Estimate], prep: dict[str, Any], k: _Cell,
          throughput: Throughput, rates: Optional[tuple[float, float]]) -> dict[str, Estimate]:
    """Set the cell's figures: its remaining instances' estimate plus its preparations
    (whose hours are their calls at the seconds a call took in its episodes); what the
    preparations added, for the totals."""
    per_call = sum(u["wall_s"] for u in k.units.values()) / max(
        sum(u["calls"] for u in k.units.values()), 1)
    mine = {name: prep[name] for name in ("calls", "tokens_in", "tokens_out")}
    mine.update(preparation_calls=prep["calls"], wall_s=prep["calls"].scaled(per_call))
    for name in ("calls", "tokens_in", "tokens_out"):
        cell.put(name, found[name].plus(mine[name]))
    cell.put("preparation_calls", prep["calls"])
    price(cell, throughput, rates, found["wall_s"].plus(mine["wall_s"]).scaled(1 / 3600))
    if prep.get("note"):
        cell.notes.append(prep["note"])
    return mine


def _overall(total: dict[str, Estimate], added: dict[str, Estimate], throughput: Throughput,
             rates: Optional[tuple[float, float]]) -> dict[str, Estimate]:
    """The run's totals: the bootstrap's interval of the instances' total plus the
    preparations' ranges; hours and USD from the total tokens (hours from the wall times
    when no throughput is known)."""
    overall = {name: total[name].plus(added[name]) for name in ("calls", "tokens_in", "tokens_out")}
    overall["preparation_calls"] = added["preparation_calls"]
    ends = [(overall["tokens_in"].central, overall["tokens_out"].central),
            (overall["tokens_in"].low, overall["tokens_out"].low),
            (overall["tokens_in"].high, overall["tokens_out"].high)]
    if throughput.known:
        central, low, high = (throughput.hours(*pair) or 0.0 for pair in ends)
        overall["hours"] = Estimate(central, low, high)
    else:
        overall["hours"] = total["wall_s"].plus(added["wall_s"]).scaled(1 / 3600)
    if rates is not None:
        central, low, high = ((a * rates[0] + b * rates[1]) / 1e6 for a, b in ends)
        overall["cost_usd"] = Estimate(central, low, high)
    return overall


def _new_cell(config: RunConfig, members: list[StreamSpec], held: Holdings,
              correlation: float) -> CellPlan:
    first = members[0]
    instances = len(first.instance_ids)
    return CellPlan(first.method, first.benchmark, first.split, first.context,
                    first.method_config_hash, episodes=sum(len(s.episodes) for s in members),
                    units=instances * len(config.seeds), instances=instances,
                    mde=mde(instances, correlation),
                    episodes_to_run=sum(len(held.remaining(s)) for s in members),
                    recorded=held.spent[cell_of(first)].to_dict())


def _known(config: RunConfig, key: CellKey, members: list[StreamSpec], held: Holdings,
           smoke_methods: tuple[str, ...], apart: list[EpisodeRecord]) -> _Cell:
    """The cell's recorded instances, whole (every trial a result): in the results
    directory, or, for a method prepared at smoke scale, in the pilot's directory apart."""
    first = members[0]
    if first.method in smoke_methods:
        smoke = key[:4] + (smoke_hash(config, first),) + key[5:]
        records = [r for r in apart if record_cell(r) == smoke]
    else:
        records = [r for r in held.records if record_cell(r) == key]
    trials = first.trials
    by_unit: dict[tuple, list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        by_unit[(r.seed, r.budget_steps, r.instance_id)].append(r)
    units, long, kept, preparation = {}, {}, [], None
    for unit, attempts in by_unit.items():
        played = sorted(r.trial for r in attempts if r.is_result)
        stopped = first.stop_after_success and any(r.success for r in attempts if r.is_result) \
            and played == list(range(len(played)))  # its trials after a success are not played
        if len(set(played)) < trials and not stopped:
            continue  # an instance not yet whole (a run stopped mid-way) says too little
        long[unit] = any(r.is_result and r.steps >= r.budget_steps for r in attempts)
        costs = {"calls": 0.0, "tokens_in": 0.0, "tokens_out": 0.0, "wall_s": 0.0}
        for r in attempts:
            prep = measured(r, _scale(config, r, first))
            if prep is not None:
                preparation = preparation or prep
                costs["calls"] -= prep.calls
                costs["tokens_in"] -= prep.tokens_in
                costs["tokens_out"] -= prep.tokens_out
            costs["calls"] += r.llm_calls
            costs["tokens_in"] += r.tokens_in
            costs["tokens_out"] += r.tokens_out
            costs["wall_s"] += r.wall_s
        units[unit] = costs
        kept += attempts
    remaining = [(s, p) for s in members for p in held.remaining(s)]
    budget = fmean(s.budget_at(p) for s, p in remaining) if remaining else 0.0
    return _Cell(units, long, kept, preparation, len(remaining) / trials, budget, trials)


def _scale(config: RunConfig, record: EpisodeRecord, stream: StreamSpec) -> float:
    """Full-scale preparation episodes per episode of this record's preparation."""
    if record.method_config_hash == stream.method_config_hash:
        return 1.0  # prepared as the run prepares
    return config.protocol(stream.method, stream.benchmark).smoke_scale


def _preparations(members: list[StreamSpec], k: _Cell, held: Holdings, made: set[str],
                  window: Optional[int]) -> dict[str, Any]:
    """The cell's preparations still to make (keys neither stored nor priced in an earlier
    cell), each at its measured cost carried to the run's scale."""
    keys = {s.prepared_key() for s in members} - {None} - held.stored - made
    made.update(k for k in keys if k is not None)
    zero = {"calls": Estimate.exact(0.0), "tokens_in": Estimate.exact(0.0),
            "tokens_out": Estimate.exact(0.0)}
    if not keys:
        return zero
    if k.preparation is None:
        return {**zero, "note": f"{len(keys)} preparation(s) to make, none measured (the "
                                f"pilot reused a stored one?): not priced"}
    steps = sum(r.steps for r in k.records) or 1
    calls = sum(u["calls"] for u in k.units.values())
    episodes = len(k.records) or 1
    cost = preparation_cost(k.preparation, calls / episodes, calls / steps * k.budget_steps,
                            window)
    out: dict[str, Any] = {name: e.scaled(len(keys)) for name, e in cost.items()}
    prep = k.preparation
    out["note"] = (f"preparation: {len(keys)} to make, measured at {prep.calls} calls in "
                   f"{len(prep.episodes)} episode(s)" + (
                       f" at smoke scale, times {prep.scale:g} episodes (the method's "
                       f"smoke_scale), each as long as its test episodes (central) or its "
                       f"budget (high)" if prep.scale != 1.0 else " at the run's scale"))
    return out


def _context_samples(cells: dict[CellKey, list[StreamSpec]], out: Path
                     ) -> dict[tuple, tuple[Optional[PilotSample], CellPlan]]:
    """Instance-context builds, one sample per provider config on a benchmark split: the
    builds stored (the pilot's, an earlier run's) and the builds still to make."""
    stored = ContextStore(out).records()
    wanted: dict[tuple, set[str]] = defaultdict(set)
    for members in cells.values():
        for s in members:
            if s.context_build is not None:
                wanted[(s.benchmark, s.split, s.context, s.context_build.build_hash)].update(
                    context_key(s, i) for i in s.instance_ids)
    found = {}
    for (benchmark, split, provider, build_hash), keys in wanted.items():
        built = [stored[k] for k in sorted(keys) if k in stored and stored[k].built]
        units = tuple({"calls": float(r.llm_calls), "tokens_in": float(r.tokens_in),
                       "tokens_out": float(r.tokens_out), "wall_s": r.wall_s} for r in built)
        cell = CellPlan(f"(context builds: {provider})", benchmark, split, "", build_hash,
                        episodes=0, units=len(keys), episodes_to_run=len(keys) - len(built),
                        recorded={"builds": len(built), "calls": sum(r.llm_calls for r in built),
                                  "tokens_in": sum(r.tokens_in for r in built),
                                  "tokens_out": sum(r.tokens_out for r in built)})
        cell.notes.append(f"{len(keys) - len(built)} builds to make, from the {len(built)} stored"
                          if units else "no build is stored (its pilot builds failed?); no estimate")
        sample = PilotSample((benchmark, split, "context"), units, len(keys) - len(built)) \
            if units else None
        found[("context", benchmark, split, provider, build_hash)] = (sample, cell)
    return found


def _described(k: _Cell, residuals: dict[str, int]) -> dict[str, Any]:
    n = len(k.units)
    return {"instances": n, "remaining_instances": round(k.remaining, 3),
            "per_instance": {m: round(fmean(u[m] for u in k.units.values()), 3) for m in METRICS},
            "residuals": residuals.get("calls", 0)}


def _assumptions(pilot: PilotRun, residuals: dict[str, int], throughput: Throughput) -> list[str]:
    out = [
        f"basis: the pilot on {pilot.endpoint}, the first instances of every cell (every seed, "
        f"budget and trial); each cell's remaining instances extrapolated from its recorded "
        f"ones by {REPLICATES} seeded bootstrap replicates (the 90% interval: their 5th to 95th "
        f"percentile)",
        "an instance either runs an episode to its budget (long) or ends before: of a cell's n "
        "recorded instances k ran long, and the share of long ones among the rest is drawn "
        "from Jeffreys' Beta(k + 1/2, n - k + 1/2); the central estimate weights a long "
        "instance's cost (the recorded long ones', else every trial at the budget) by its "
        "mean, (k + 1/2) / (n + 1), and the others' by the rest",
        f"an instance that ends early costs its cell's level times a factor of its own, whose "
        f"spread (log scale) is pooled over the cells' {residuals.get('calls', 0)} early-ending "
        f"recorded instances; the cells of one benchmark split draw alike (an instance costs "
        f"alike for every method)",
        "the first instances are taken to stand for the rest: a split in a sorted order (by task "
        "type, by difficulty) biases the estimate, and a lifelong method whose memory grows "
        "with the stream spends more per episode later than its first episodes show",
        "preparation and instance-context builds are added to the interval as ranges (low: as "
        "measured; high: episodes at their budget), not as part of it",
    ]
    if not residuals.get("calls"):
        out.append("no cell has 2 early-ending recorded instances: their spread is unknown, and "
                   "only the share of long ones widens the interval (give --pilot 2 or more)")
    if throughput.known:
        out.append(f"hours at {throughput.source}")
    else:
        out.append(f"hours: the episodes' wall time as the pilot measured it, with "
                   f"{pilot.in_flight} episode(s) in flight at once (--workers x --concurrency); "
                   f"a run keeping as many in flight takes about the total over "
                   f"{pilot.in_flight} of elapsed time, if the endpoint serves it as fast")
    if pilot.smoke_methods:
        out.append(f"{', '.join(pilot.smoke_methods)} prepared at smoke scale in the pilot: "
                   f"their pilot episodes are in {pilot.smoke_directory} (another stream), and "
                   f"the full run plays those instances again after its full preparation "
                   f"(--pilot-full-preparation prepares at full scale and keeps them)")
    return out
