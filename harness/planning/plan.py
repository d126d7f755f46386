"""A run's plan: per cell and in total, its episodes, LLM calls and tokens (low-high), cost,
hours at the server's throughput, and the smallest success difference it can detect. Nothing
is sent to the endpoint the run is planned for.

How the numbers are made (each assumption is printed with them):
- *Probe*: every cell of the run is played on its first instance (every trial of it, the
  first seed and budget), preparation at the method's smoke scale, against the built-in
  scripted model (`lifebench.testing.fakeserver --policy scripted`), each episode capped at
  `probe_timeout_s`. It measures calls per step, prompt and completion tokens per call (the
  scripted server counts 4 characters per token), the completion cap of each call, and the
  preparation's calls.
- *Steps*: low, each instance's reference solution length where the benchmark knows it
  (else the probe's steps); high, each instance's full budget.
- *Tokens*: prompts grow with the history, so the high end scales the probe's prompt tokens
  per call by the mean history length at the full budget over the probe's (capped by the
  context window when known); completions: the probe's (terse scripted replies) to the calls'
  own caps (`max_tokens`).
- *Preparation*: once per preparation key (a method config and seed), the probe's
  smoke-scale calls times the method's declared `smoke_scale` for a full-scale run.
- *Hours*: tokens over `tokens_per_s`, or prompt tokens over the profile's prefill rate plus
  completion tokens over its decode rate (one request at a time; a server batching N
  requests is up to N times faster).
- *Minimum detectable difference* (success rate, paired against the baseline method):
  (z(1-α/2) + z(power)) × sqrt(2 p (1-p) (1-ρ) / n), α 0.05, power 0.8, p 0.5 (the
  widest), ρ the assumed correlation between two methods' outcomes on one instance, n the
  cell's instances × seeds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import math
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Any, Optional

from lifebench import registry
from lifebench.api.errors import UserError
from lifebench.api.records import EpisodeRecord
from lifebench.api.untrusted import parse_json
from lifebench.config.plugins import method_config_hash
from lifebench.config.run import ExecutionConfig, RunConfig
from lifebench.leaderboard.render import render
from lifebench.llm.prices import load_prices
from lifebench.runner.run import execute
from lifebench.runner.streams import Refusal, StreamSpec, expand
from lifebench.store.records_file import load_records
from lifebench.testing import ServerConfig, serve

Z_ALPHA, Z_POWER = 1.959963984540054, 0.8416212335729143  # alpha 0.05 two-sided, power 0.8
CHARS_PER_TOKEN = 4
PROFILE_FORMAT = "lifebench-endpoint-profile"


@dataclass
class CellPlan:
    method: str
    benchmark: str
    split: str
    context: str
    method_config_hash: str
    episodes: int
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


@dataclass
class Plan:
    cells: list[CellPlan]
    refused: list[dict[str, str]]
    assumptions: list[str]
    totals: dict[str, Any]

    def to_json(self) -> str:
        return json.dumps({"format": "lifebench-plan", "version": 1,
                           "cells": [dataclasses.asdict(c) for c in self.cells],
                           "refused": self.refused, "assumptions": self.assumptions,
                           "totals": self.totals}, indent=1)


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


def read_profile(path: str) -> tuple[Throughput, dict[str, Any]]:
    """The throughput `lifebench doctor` measured, and the profile itself."""
    try:
        profile = parse_json(Path(path).read_bytes())
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else exc
        raise UserError(f"--server-profile {path}: unreadable ({reason}); write one with "
                        f"`lifebench doctor --model NAME --base-url URL --profile {path}`") from None
    if not isinstance(profile, dict) or profile.get("format") != PROFILE_FORMAT:
        raise UserError(f"--server-profile {path}: not a profile `lifebench doctor` wrote")
    rates = [profile.get(k) for k in ("prefill_tokens_per_s", "decode_tokens_per_s")]
    if not all(isinstance(r, (int, float)) and not isinstance(r, bool) and r > 0 for r in rates):
        raise UserError(f"--server-profile {path}: it holds no measured throughput (the "
                        f"endpoint did not answer?); give --tokens-per-s N")
    return Throughput(prefill=float(rates[0]), decode=float(rates[1]),
                      source=f"the profile {path} (prefill {rates[0]:.0f}, decode "
                             f"{rates[1]:.0f} tokens/s, one request at a time)"), profile


def plan_run(config: RunConfig, execution: ExecutionConfig, grid: bool,
             throughput: Throughput = Throughput(), profile: Optional[dict[str, Any]] = None,
             correlation: float = 0.5, probe_timeout_s: float = 120.0,
             tokenizer: Optional[str] = None) -> Plan:
    """The plan of `config`: the cells `expand` makes, each probed and extrapolated."""
    refused: list[Refusal] = []
    with contextlib.redirect_stderr(io.StringIO()):
        streams = expand(config, refused, grid)
    cells = _cells(streams)
    probes, prompts = _probe(config, execution, grid, probe_timeout_s)
    ratio, counted = tokenizer_ratio(tokenizer, prompts) if tokenizer else \
        (1.0, f"tokens counted as {CHARS_PER_TOKEN} characters each (give the model's "
              f"tokenizer.json with --tokenizer to count its own)")
    prices = load_prices(config.llm.prices) if config.llm.prices else {}
    window = (profile or {}).get("context_window") or config.llm.context_window
    planned = []
    for key, members in cells.items():
        cell = _plan_cell(config, key, members, probes, window, correlation)
        _scale_tokens(cell, ratio)
        _price(cell, throughput, prices.get(config.model or ""))
        planned.append(cell)
    for cell in _context_builds(streams, probes):
        _scale_tokens(cell, ratio)
        _price(cell, throughput, prices.get(config.context_model or config.model or ""))
        planned.append(cell)
    assumptions = [counted] + _assumptions(throughput, prices, correlation, probe_timeout_s, config)
    if profile and profile.get("tools") is False and any(
            registry.method_class(c.method).needs.tools for c in planned):
        assumptions.append("the profile says the endpoint does not call tools: run the methods "
                           "that offer tools (How²) with --llm-tool-protocol text")
    return Plan(planned, [r.to_dict() for r in refused], assumptions, _totals(planned))


def _cells(streams: list[StreamSpec]) -> dict[tuple, list[StreamSpec]]:
    cells: dict[tuple, list[StreamSpec]] = defaultdict(list)
    for s in streams:
        cells[(s.method, s.benchmark, s.benchmark_config_hash, s.split, s.method_config_hash,
               s.context, s.context_config_hash)].append(s)
    return cells


def _probe(config: RunConfig, execution: ExecutionConfig, grid: bool,
           timeout_s: float) -> tuple[list[EpisodeRecord], list[str]]:
    """Every cell's first instance played against the scripted model, in a scratch
    directory: its records, and the text of the last (up to 1000) prompts it sent."""
    model = config.model or "planned-model"
    server = serve(ServerConfig(policy="scripted", models=(model,)))
    try:
        probe = dataclasses.replace(
            config, smoke=True, limit=1, instances=None, seeds=config.seeds[:1],
            budgets=config.budgets[:1], timeout_s=timeout_s, retries=0, run_id="plan-probe",
            model=config.model,
            llm=dataclasses.replace(config.llm, base_url=server.url if config.model else None,
                                    cache="off", prices=None))
        with tempfile.TemporaryDirectory(prefix="lifebench-plan-") as scratch, \
                contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            execute(probe, dataclasses.replace(execution, out=scratch, progress=False,
                                               trajectories=False, context_cache=None), grid)
            records = load_records([scratch])
        prompts = ["\n".join(str(m.get("content") or "") for m in r.get("messages", []))
                   for r in server.requests()]
        return records, prompts
    finally:
        server.close()


def tokenizer_ratio(path: str, prompts: list[str]) -> tuple[float, str]:
    """The model's tokens per token the scripted server counted (4 characters each), over
    the probe's prompts, with the tokenizer file (`tokenizer.json`) of the model; and the
    line that says so."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise UserError("--tokenizer needs the `tokenizers` package (pip install tokenizers)") from None
    try:
        tokenizer = Tokenizer.from_file(path)
    except Exception as exc:  # the library's own errors: a missing or foreign file
        raise UserError(f"--tokenizer {path}: not a tokenizer file ({str(exc)[:120]}); give "
                        f"the model's tokenizer.json") from None
    tokenizer.no_truncation()  # a file may carry its encoder's input limit
    tokenizer.no_padding()
    texts = [t for t in prompts if t]
    if not texts:
        return 1.0, f"tokens counted as {CHARS_PER_TOKEN} characters each (no prompt to measure {path} on)"
    counted = sum(-(-len(t) // CHARS_PER_TOKEN) for t in texts)
    model = sum(len(e.ids) for e in tokenizer.encode_batch(texts, add_special_tokens=False))
    ratio = model / counted if counted else 1.0
    return ratio, (f"tokens counted with {path}: {ratio:.3f} of the {CHARS_PER_TOKEN}-characters "
                   f"estimate, measured on {len(texts)} of the probe's prompts (completions scaled alike)")


def _probe_hash(config: RunConfig, stream: StreamSpec) -> str:
    """The config hash the probe gave this stream's method config (its smoke variant)."""
    smoke = dataclasses.replace(config, smoke=True)
    real, small = config.method_configs(stream.method, stream.benchmark), \
        smoke.method_configs(stream.method, stream.benchmark)
    settings = config.llm.answer_settings(registry.method_class(stream.method).needs.tools) \
        if stream.llm is not None else None
    for mine, theirs in zip(real, small):
        if method_config_hash(stream.method, mine, settings) == stream.method_config_hash:
            return method_config_hash(stream.method, theirs, settings)
    return stream.method_config_hash


def _plan_cell(config: RunConfig, key: tuple, members: list[StreamSpec],
               probes: list[EpisodeRecord], window: Optional[int], correlation: float) -> CellPlan:
    first = members[0]
    bench = registry.get_benchmark(first.benchmark, first.benchmark_config)
    instances = len(first.instance_ids)
    cell = CellPlan(first.method, first.benchmark, first.split, first.context,
                    first.method_config_hash, episodes=sum(len(s.episodes) for s in members),
                    units=instances * len(config.seeds), instances=instances,
                    mde=_mde(instances, correlation))
    if first.llm is None:
        return cell  # no model: nothing to spend
    probe_hash = _probe_hash(config, first)
    mine = [r for r in probes if (r.method, r.benchmark, r.split, r.method_config_hash,
                                  r.context) == (first.method, first.benchmark, first.split,
                                                 probe_hash, first.context)]
    results = [r for r in mine if r.is_result]
    if not results:
        why = mine[0].error if mine else "no record"
        cell.notes.append(f"the probe did not finish an episode ({why}); no estimate")
        return cell
    prepared = [r.extra.get("prepared") for r in results if isinstance(r.extra.get("prepared"), dict)]
    prep_calls = sum(p.get("llm_calls", 0) for p in prepared if p.get("reused") is False)
    prep_in = sum(p.get("tokens_in", 0) for p in prepared if p.get("reused") is False)
    prep_out = sum(p.get("tokens_out", 0) for p in prepared if p.get("reused") is False)
    steps = sum(r.steps for r in results) or 1
    calls = sum(r.llm_calls for r in results) - prep_calls
    per_step = calls / steps
    per_call_in = (sum(r.tokens_in for r in results) - prep_in) / calls if calls else 0.0
    per_call_out = (sum(r.tokens_out for r in results) - prep_out) / calls if calls else 0.0
    caps = [c.max_tokens for r in results for c in r.llm_call_tokens if c.max_tokens]
    cap = fmean(caps) if caps else per_call_out
    probe_steps = steps / len(results)
    budgets, golds = [], []
    for s in members:
        for iid, budget in zip(s.instance_ids, s.instance_budgets):
            gold = bench.gold_length(bench.instance(s.split, iid))
            budgets += [budget] * s.trials
            golds += [min(gold, budget) if gold else min(probe_steps, budget)] * s.trials
    low_steps, high_steps = sum(golds), sum(budgets)
    growth = _prompt_growth(results, prep_calls, steps)
    fixed = max(per_call_in - growth * (probe_steps - 1) / 2, 0.0)

    def prompt_tokens(lengths: list[float]) -> float:
        """Every call's prompt over episodes of these lengths: the fixed part plus the
        history, which grows by `growth` tokens a step, capped at the window."""
        cap = window or math.inf
        return sum(per_step * n * min(fixed + growth * (n - 1) / 2, cap) for n in lengths)

    protocol = config.protocol(first.method, first.benchmark)
    scale = 1.0 if config.smoke else protocol.smoke_scale
    keys = len({s.prepared_key() for s in members}) if prepared else 0
    prep = (prep_calls * keys, prep_calls * keys * scale)
    cell.preparation_calls = prep
    cell.calls = (per_step * low_steps + prep[0], per_step * high_steps + prep[1])
    cell.tokens_in = (prompt_tokens(golds) + prep_in * keys,
                      prompt_tokens(budgets) + prep_in * keys * scale)
    cell.tokens_out = (per_step * low_steps * per_call_out + prep_out * keys,
                       per_step * high_steps * max(cap, per_call_out) + prep_out * keys * scale)
    cell.probe = {"episodes": len(results), "steps": steps, "calls": calls,
                  "preparation_calls": prep_calls, "calls_per_step": round(per_step, 3),
                  "tokens_in_per_call": round(per_call_in, 1),
                  "tokens_out_per_call": round(per_call_out, 1), "max_tokens_mean": round(cap, 1),
                  "prompt_growth_per_step": round(growth, 1)}
    if prep_calls and scale != 1.0:
        cell.notes.append(f"preparation measured at smoke scale ({prep_calls} calls), times "
                          f"{scale:g} for the full protocol (the method's estimate)")
    return cell


def _prompt_growth(results: list[EpisodeRecord], prep_calls: int, steps: int) -> float:
    """Prompt tokens added per step, from the probe's calls: each episode's last call's
    prompt over its first's, per step between them (the preparation's calls left out)."""
    grown, spans = 0.0, 0
    for index, record in enumerate(results):
        calls = record.llm_call_tokens[prep_calls if index == 0 else 0:]
        if len(calls) >= 2 and record.steps >= 2:
            grown += max(calls[-1].tokens_in - calls[0].tokens_in, 0)
            spans += record.steps - 1
    return grown / spans if spans else 0.0


def _context_builds(streams: list[StreamSpec], probes: list[EpisodeRecord]) -> list[CellPlan]:
    """Instance contexts are built once per instance, seed and provider config, and shared
    by every method given them: one line each, priced from the probe's builds."""
    builds: dict[tuple, set[tuple[str, int]]] = defaultdict(set)
    for s in streams:
        if s.context_build is not None:
            builds[(s.benchmark, s.split, s.context, s.context_build.build_hash)].update(
                (i, s.seed) for i in s.instance_ids)
    out = []
    for (benchmark, split, provider, build_hash), todo in builds.items():
        spent = [r.extra["context"] for r in probes if (r.benchmark, r.split, r.context) ==
                 (benchmark, split, provider) and isinstance(r.extra.get("context"), dict)]
        cell = CellPlan(f"(context builds: {provider})", benchmark, split, "", build_hash,
                        episodes=0, units=len(todo))
        if not spent:
            cell.notes.append("the probe built no context; no estimate")
        else:
            n, one = len(todo), spent[0]
            cell.calls = (one.get("llm_calls", 0) * n,) * 2
            cell.tokens_in = (one.get("tokens_in", 0) * n,) * 2
            cell.tokens_out = (one.get("tokens_out", 0) * n,) * 2
            cell.notes.append(f"{n} builds, each shared by every method's +{provider} row; "
                              f"{one.get('llm_calls', 0)} calls and {one.get('explore_steps', 0)} "
                              f"steps per build at the probe (cut at its time cap, if it was)")
        out.append(cell)
    return out


def _scale_tokens(cell: CellPlan, ratio: float) -> None:
    cell.tokens_in = (cell.tokens_in[0] * ratio, cell.tokens_in[1] * ratio)
    cell.tokens_out = (cell.tokens_out[0] * ratio, cell.tokens_out[1] * ratio)


def _mde(n: int, correlation: float) -> Optional[float]:
    """The minimum detectable difference of success over n instances, the unit of every
    comparison: seeds are assumed to add nothing (a model at temperature 0 replays them)."""
    if n < 1:
        return None
    return min(1.0, (Z_ALPHA + Z_POWER) * math.sqrt(2 * 0.25 * (1 - correlation) / n))


def _price(cell: CellPlan, throughput: Throughput, price: Optional[tuple[float, float]]) -> None:
    lows, highs = (cell.tokens_in[0], cell.tokens_out[0]), (cell.tokens_in[1], cell.tokens_out[1])
    low, high = throughput.hours(*lows), throughput.hours(*highs)
    if low is not None and high is not None:
        cell.hours = (low, high)
    if price is not None:
        cell.cost_usd = tuple((t_in * price[0] + t_out * price[1]) / 1e6
                              for t_in, t_out in (lows, highs))


def _totals(cells: list[CellPlan]) -> dict[str, Any]:
    def total(name: str) -> Optional[list[float]]:
        values = [getattr(c, name) for c in cells if getattr(c, name) is not None]
        return [sum(v[0] for v in values), sum(v[1] for v in values)] if values else None
    return {"episodes": sum(c.episodes for c in cells), "calls": total("calls"),
            "tokens_in": total("tokens_in"), "tokens_out": total("tokens_out"),
            "hours": total("hours"), "cost_usd": total("cost_usd")}


def _assumptions(throughput: Throughput, prices: dict, correlation: float, timeout_s: float,
                 config: RunConfig) -> list[str]:
    out = [
        "calls and tokens measured on each cell's first instance (every trial, first seed "
        f"and budget) against the built-in scripted model, each episode capped at "
        f"{timeout_s:g} s, preparation at smoke scale",
        "steps per episode: low, the instance's reference solution (else the probe's); high, "
        "its full budget",
        "prompt tokens per call grow with the history up to the full budget (capped at the "
        "context window when known); completion tokens: the scripted replies' (low) to the "
        "calls' max_tokens caps (high): a reasoning model sits near the high end",
        f"minimum detectable difference in success rate against the baseline: paired over "
        f"instances (the unit of every comparison; more seeds narrow it only where they are "
        f"independent draws, which at temperature 0 they are not), alpha 0.05 two-sided, "
        f"power 0.8, p 0.5, correlation between methods {correlation:g}",
    ]
    out.append(f"hours at {throughput.source}" if throughput.source else
               "no throughput given (--tokens-per-s or --server-profile): no hours")
    if not prices and config.llm.prices is None:
        out.append("no price table (--prices): no cost")
    if not config.model:
        out.append("no --model: the LLM methods' cells are refused, as the run would refuse them")
    return out


def plan_lines(plan: Plan) -> list[str]:
    """The plan as a markdown table, its assumptions and its refused cells."""
    def span(pair: Optional[tuple[float, float]], digits: int = 0) -> str:
        if pair is None:
            return "—"
        low, high = pair
        return f"{low:,.{digits}f}–{high:,.{digits}f}" if round(low, digits) != round(high, digits) \
            else f"{low:,.{digits}f}"

    headers = ["method", "benchmark", "split", "episodes", "LLM calls", "prompt tokens",
               "completion tokens", "hours", "USD", "MDE"]
    rows = [[c.method + (f" + {c.context}" if c.context else ""), c.benchmark, c.split,
             f"{c.episodes:,}", span(c.calls), span(c.tokens_in), span(c.tokens_out),
             span(c.hours, 2), span(c.cost_usd, 2), f"{c.mde:.3f}" if c.mde is not None else "—"]
            for c in plan.cells]
    t = plan.totals
    rows.append(["total", "", "", f"{t['episodes']:,}", span(t["calls"]), span(t["tokens_in"]),
                 span(t["tokens_out"]), span(t["hours"], 2), span(t["cost_usd"], 2), ""])
    lines = [render(headers, rows, "markdown")]
    lines += [f"note: {c.method} on {c.benchmark}:{c.split}: {n}" for c in plan.cells for n in c.notes]
    lines += [f"assumption: {a}" for a in plan.assumptions]
    lines += [f"refused: {r['method']} on {r['benchmark']}:{r['split']}: {r['reason']}"
              for r in plan.refused]
    return lines
