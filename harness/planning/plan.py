"""A run's plan: per cell and in total, the episodes still to play, LLM calls and tokens
(a central estimate with a range or an interval), cost, hours, and the smallest success
difference it can detect. What the results directory already holds (episodes recorded,
preparations stored) is left out and shown apart.

Two bases:
- *A pilot* (`--pilot N`, `pilot_cells.py`): the first N instances of every cell played on
  the endpoint planned for, as real results of the run; the rest extrapolated with a 90%
  interval (`bootstrap.py`).
- *The scripted model* (the default; nothing is sent to the endpoint): every cell of the run
  played on its first instance (every trial, the first seed and budget), preparation at the
  method's smoke scale, against the built-in scripted model
  (`lifebench.testing.fakeserver --policy scripted`), each episode capped at
  `probe_timeout_s`. It measures calls per step, prompt and completion tokens per call (4
  characters a token), the completion cap of each call and the preparation's calls.
  - *Steps*: low, each instance's reference solution length where the benchmark knows it
    (else the probe's steps); high, its full budget; central, half the episodes at the low
    length and half at the budget (an assumed success rate of one half).
  - *Tokens*: prompts grow with the history by what the probe measured per step, each call
    capped at the context window when one is known (--context-window, the doctor's profile,
    or the /v1/models answer an earlier run into this --out recorded); completions: the
    probe's (terse scripted replies) to the calls' own caps (`max_tokens`).
- *Preparation*, on either basis: once per preparation key not stored yet, from its measured
  calls carried to the run's scale (`preparation.py`).
- *Hours*: tokens over `tokens_per_s`, or prompt tokens over the profile's prefill rate plus
  completion tokens over its decode rate (one request at a time); with a pilot and neither,
  the pilot's own episode wall times.
- *Minimum detectable difference* (success rate, paired against the baseline method):
  (z(1-α/2) + z(power)) × sqrt(2 p (1-p) (1-ρ) / n), α 0.05, power 0.8, p 0.5 (the
  widest), ρ the assumed correlation between two methods' outcomes on one instance, n the
  cell's instances.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import tempfile
from collections import defaultdict
from pathlib import Path
from statistics import fmean
from typing import Any, Optional

from lifebench import registry
from lifebench.api.errors import UserError
from lifebench.api.records import EpisodeRecord
from lifebench.api.untrusted import parse_json
from lifebench.config.run import ExecutionConfig, RunConfig
from lifebench.llm.prices import load_prices
from lifebench.planning.bootstrap import Estimate
from lifebench.planning.cells import CellPlan, Plan, Throughput, mde, price, scale_tokens, totals
from lifebench.planning.pilot import PilotOptions, run_pilot
from lifebench.planning.pilot_cells import pilot_cells, smoke_hash
from lifebench.planning.preparation import measured, preparation_cost, prompt_tokens
from lifebench.planning.recorded import CellKey, Holdings, cell_of, holdings
from lifebench.runner.contexts import context_key
from lifebench.runner.run import execute, results_dir
from lifebench.runner.streams import Refusal, StreamSpec, expand
from lifebench.store.contexts import ContextStore
from lifebench.store.records_file import load_records
from lifebench.store.results import read_manifest_runs
from lifebench.testing import ServerConfig, serve

CHARS_PER_TOKEN = 4
PROFILE_FORMAT = "lifebench-endpoint-profile"
ASSUMED_SUCCESS = 0.5  # the scripted central estimate's share of episodes ending early


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
             tokenizer: Optional[str] = None, pilot: Optional[PilotOptions] = None) -> Plan:
    """The plan of `config`: the cells `expand` makes, measured by a pilot on the endpoint
    (`pilot`) or by the scripted model, and extrapolated."""
    refused: list[Refusal] = []
    with contextlib.redirect_stderr(io.StringIO()):
        streams = expand(config, refused, grid)
    cells = _cells(streams)
    out = results_dir(config, execution)
    prices = load_prices(config.llm.prices) if config.llm.prices else {}
    if pilot is not None:
        ran = run_pilot(config, execution, grid, pilot)
        window, window_source = _window(config, profile, out)  # the pilot read /v1/models
        planned, overall, assumptions = pilot_cells(config, cells, holdings(out, streams), ran,
                                                    out, throughput, prices, correlation, window)
        assumptions.append(_window_line(window, window_source, "a long instance's prompts"))
        if tokenizer:
            assumptions.append(f"tokens as the endpoint counted them (--tokenizer {tokenizer} "
                               f"is for the scripted estimate)")
        assumptions += _common_assumptions(prices, correlation, config)
        return Plan(planned, [r.to_dict() for r in refused], assumptions,
                    totals(planned, overall), interval="90%", pilot=ran.cost())
    held = holdings(out, streams)
    probes, prompts = _probe(config, execution, grid, probe_timeout_s)
    ratio, counted = tokenizer_ratio(tokenizer, prompts) if tokenizer else \
        (1.0, f"tokens counted as {CHARS_PER_TOKEN} characters each (give the model's "
              f"tokenizer.json with --tokenizer to count its own)")
    window, window_source = _window(config, profile, out)
    planned = []
    made: set[str] = set()  # preparation keys priced (a key shared by cells is made once)
    for key, members in cells.items():
        cell = _plan_cell(config, members, probes, window, correlation, held, made)
        scale_tokens(cell, ratio)
        price(cell, throughput, prices.get(config.model or ""))
        planned.append(cell)
    for cell in _context_builds(streams, probes, out):
        scale_tokens(cell, ratio)
        price(cell, throughput, prices.get(config.context_model or config.model or ""))
        planned.append(cell)
    assumptions = [counted] + _assumptions(throughput, probe_timeout_s, window, window_source) \
        + _common_assumptions(prices, correlation, config)
    if profile and profile.get("tools") is False and any(
            registry.method_class(c.method).needs.tools for c in planned
            if not c.method.startswith("(")):
        assumptions.append("the profile says the endpoint does not call tools: run the methods "
                           "that offer tools (How²) with --llm-tool-protocol text")
    return Plan(planned, [r.to_dict() for r in refused], assumptions, totals(planned))


def _cells(streams: list[StreamSpec]) -> dict[CellKey, list[StreamSpec]]:
    cells: dict[CellKey, list[StreamSpec]] = defaultdict(list)
    for s in streams:
        cells[cell_of(s)].append(s)
    return cells


def _window(config: RunConfig, profile: Optional[dict[str, Any]], out: Path
            ) -> tuple[Optional[int], str]:
    """The model's context window and where it is from, without asking the endpoint:
    --context-window, the doctor's profile, or what an earlier run into `out` read from
    /v1/models (its manifest)."""
    if config.llm.context_window:
        return config.llm.context_window, "--context-window"
    if profile and isinstance(profile.get("context_window"), int):
        return profile["context_window"], "the doctor's profile"
    try:
        runs = read_manifest_runs(out)
    except ValueError:
        runs = []
    for run in reversed(runs):
        endpoint = run.get("llm_endpoint") if isinstance(run.get("llm_endpoint"), dict) else {}
        window = endpoint.get("context_window")
        if endpoint.get("model") == config.model and isinstance(window, int) and window > 0:
            return window, f"/v1/models, as an earlier run into {out} recorded it"
    return None, ""


def _window_line(window: Optional[int], source: str, what: str) -> str:
    if window:
        return f"every prompt capped at the context window, {window:,} tokens ({source})"
    return (f"no context window known (--context-window N, the doctor's profile, or an earlier "
            f"run into this --out that read /v1/models): {what} grow without a cap")


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


def _plan_cell(config: RunConfig, members: list[StreamSpec], probes: list[EpisodeRecord],
               window: Optional[int], correlation: float, held: Holdings,
               made: set[str]) -> CellPlan:
    first = members[0]
    bench = registry.get_benchmark(first.benchmark, first.benchmark_config)
    instances = len(first.instance_ids)
    cell = CellPlan(first.method, first.benchmark, first.split, first.context,
                    first.method_config_hash, episodes=sum(len(s.episodes) for s in members),
                    units=instances * len(config.seeds), instances=instances,
                    mde=mde(instances, correlation),
                    episodes_to_run=sum(len(held.remaining(s)) for s in members),
                    recorded=held.spent[cell_of(first)].to_dict())
    if first.llm is None:  # no model: nothing to spend
        for name in ("calls", "tokens_in", "tokens_out", "preparation_calls"):
            cell.put(name, Estimate.exact(0.0))
        return cell
    probe_hash = smoke_hash(config, first)
    mine = [r for r in probes if (r.method, r.benchmark, r.split, r.method_config_hash,
                                  r.context) == (first.method, first.benchmark, first.split,
                                                 probe_hash, first.context)]
    results = [r for r in mine if r.is_result]
    if not results:
        why = mine[0].error if mine else "no record"
        cell.notes.append(f"the probe did not finish an episode ({why}); no estimate")
        return cell
    scale = 1.0 if config.smoke else config.protocol(first.method, first.benchmark).smoke_scale
    preps = [p for p in (measured(r, scale) for r in results) if p is not None]
    prep_calls = sum(p.calls for p in preps)
    steps = sum(r.steps for r in results) or 1
    calls = sum(r.llm_calls for r in results) - prep_calls
    per_step = calls / steps
    per_call_in = (sum(r.tokens_in for r in results) - sum(p.tokens_in for p in preps)) / calls \
        if calls else 0.0
    per_call_out = (sum(r.tokens_out for r in results) - sum(p.tokens_out for p in preps)) / calls \
        if calls else 0.0
    caps = [c.max_tokens for r in results for c in r.llm_call_tokens if c.max_tokens]
    cap = fmean(caps) if caps else per_call_out
    probe_steps = steps / len(results)
    budgets, golds = [], []
    for s in members:
        for position in held.remaining(s):
            budget = s.budget_at(position)
            budgets.append(budget)
            if s.stop_after_success and s.episode_at(position)[1] > 0 \
                    and s.key_at(position - 1) not in held.finished:
                continue  # the low end: every instance solved at its next trial, none after
            gold = bench.gold_length(bench.instance(s.split, s.episode_at(position)[0]))
            golds.append(min(gold, budget) if gold else min(probe_steps, budget))
    if first.stop_after_success:
        cell.notes.append("no trial after an instance's success: the low end plays one trial "
                          "of each instance, the high end every trial to its budget")
    growth = _prompt_growth(results, prep_calls, steps)
    fixed = max(per_call_in - growth * (probe_steps - 1) / 2, 0.0)

    def prompts(lengths: list[float]) -> float:
        """Every call's prompt over episodes of these lengths: the fixed part plus the
        history, which grows by `growth` tokens a step, each call capped at the window."""
        return sum(per_step * prompt_tokens(fixed, growth, n, window) for n in lengths)

    low_steps, high_steps = sum(golds), sum(budgets)
    mid_steps = ASSUMED_SUCCESS * low_steps + (1 - ASSUMED_SUCCESS) * high_steps
    prep = {"calls": Estimate.exact(0.0), "tokens_in": Estimate.exact(0.0),
            "tokens_out": Estimate.exact(0.0)}
    keys = {s.prepared_key() for s in members} - {None} - held.stored - made
    made.update(k for k in keys if k is not None)
    if preps and keys:
        cost = preparation_cost(preps[0], probe_steps * per_step,
                                per_step * fmean(budgets) if budgets else 0.0, window)
        prep = {name: e.scaled(len(keys)) for name, e in cost.items()}
        if scale != 1.0:
            cell.notes.append(f"preparation measured at smoke scale ({prep_calls} calls in "
                              f"{len(preps[0].episodes)} episodes), times {scale:g} episodes (the "
                              f"method's smoke_scale), each as long as the probe's test episodes "
                              f"(central) or the budget (high); {len(keys)} to make")
    cell.put("preparation_calls", prep["calls"])
    cell.put("calls", Estimate(per_step * mid_steps, per_step * low_steps,
                               per_step * high_steps).plus(prep["calls"]))
    cell.put("tokens_in", Estimate(
        ASSUMED_SUCCESS * prompts(golds) + (1 - ASSUMED_SUCCESS) * prompts(budgets),
        prompts(golds), prompts(budgets)).plus(prep["tokens_in"]))
    cell.put("tokens_out", Estimate(per_step * mid_steps * per_call_out,
                                    per_step * low_steps * per_call_out,
                                    per_step * high_steps * max(cap, per_call_out)
                                    ).plus(prep["tokens_out"]))
    cell.probe = {"episodes": len(results), "steps": steps, "calls": calls,
                  "preparation_calls": prep_calls, "calls_per_step": round(per_step, 3),
                  "tokens_in_per_call": round(per_call_in, 1),
                  "tokens_out_per_call": round(per_call_out, 1), "max_tokens_mean": round(cap, 1),
                  "prompt_growth_per_step": round(growth, 1)}
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


def _context_builds(streams: list[StreamSpec], probes: list[EpisodeRecord],
                    out: Path) -> list[CellPlan]:
    """Instance contexts are built once per instance, seed and provider config, and shared
    by every method given them: one line each, priced from the probe's builds (those the
    results directory holds left out)."""
    stored = {k for k, r in ContextStore(out).records().items() if r.built}
    builds: dict[tuple, set[str]] = defaultdict(set)
    for s in streams:
        if s.context_build is not None:
            builds[(s.benchmark, s.split, s.context, s.context_build.build_hash)].update(
                context_key(s, i) for i in s.instance_ids)
    cells = []
    for (benchmark, split, provider, build_hash), keys in builds.items():
        spent = [r.extra["context"] for r in probes if (r.benchmark, r.split, r.context) ==
                 (benchmark, split, provider) and isinstance(r.extra.get("context"), dict)]
        todo = len(keys - stored)
        cell = CellPlan(f"(context builds: {provider})", benchmark, split, "", build_hash,
                        episodes=0, units=len(keys), episodes_to_run=todo,
                        recorded={"builds": len(keys & stored)})
        if not spent:
            cell.notes.append("the probe built no context; no estimate")
        else:
            one = spent[0]
            for name, field in (("calls", "llm_calls"), ("tokens_in", "tokens_in"),
                                ("tokens_out", "tokens_out")):
                cell.put(name, Estimate.exact(one.get(field, 0) * todo))
            cell.notes.append(f"{todo} builds, each shared by every method's +{provider} row; "
                              f"{one.get('llm_calls', 0)} calls and {one.get('explore_steps', 0)} "
                              f"steps per build at the probe (cut at its time cap, if it was)")
        cells.append(cell)
    return cells


def _assumptions(throughput: Throughput, timeout_s: float, window: Optional[int],
                 window_source: str) -> list[str]:
    out = [
        "basis: calls and tokens measured on each cell's first instance (every trial, first "
        f"seed and budget) against the built-in scripted model, each episode capped at "
        f"{timeout_s:g} s, preparation at smoke scale; nothing was sent to the endpoint",
        "steps per episode: low, the instance's reference solution (else the probe's); high, "
        "its full budget; central, half the episodes at the low length and half at the budget "
        f"(an assumed success rate of {ASSUMED_SUCCESS:g}: a pilot measures it, --pilot N)",
        "prompt tokens per call grow with the history up to the full budget; completion "
        "tokens: the scripted replies' (low, central) to the calls' max_tokens caps (high): a "
        "reasoning model sits near the high end",
        _window_line(window, window_source, "the high end's prompts"),
    ]
    out.append(f"hours at {throughput.source}" if throughput.source else
               "no throughput given (--tokens-per-s or --server-profile): no hours")
    return out


def _common_assumptions(prices: dict, correlation: float, config: RunConfig) -> list[str]:
    out = [f"minimum detectable difference in success rate against the baseline: paired over "
           f"instances (the unit of every comparison; more seeds narrow it only where they are "
           f"independent draws, which at temperature 0 they are not), alpha 0.05 two-sided, "
           f"power 0.8, p 0.5, correlation between methods {correlation:g}",
           "what the results directory already holds (episodes recorded, preparations stored) "
           "is left out of the estimate and shown apart"]
    if not prices and config.llm.prices is None:
        out.append("no price table (--prices): no cost")
    if not config.model:
        out.append("no --model: the LLM methods' cells are refused, as the run would refuse them")
    return out
