"""`lifebench run`: config -> streams -> instance contexts (when asked) -> plan (resume) ->
executor -> results directory."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

from lifebench import registry
from lifebench.config.run import ExecutionConfig, RunConfig
from lifebench.llm.faults import faults_note
from lifebench.llm.window import CHARS_PER_TOKEN
from lifebench.runner.contexts import given_contexts, plan_contexts
from lifebench.runner.plan import attach_contexts, attach_prepared, plan_units, prepared_waves
from lifebench.runner.progress import Progress
from lifebench.runner.streams import Refusal, cell_protocols, expand, with_llm_settings
from lifebench.runner.writer import Executor, RunOutcome
from lifebench.store.manifest import environment_info, make_manifest
from lifebench.store.results import ANSWERS_FILE, ResultsStore


def results_dir(config: RunConfig, execution: ExecutionConfig) -> Path:
    return Path(execution.out) if execution.out else Path("results") / config.resolved_run_id


def make_executor(execution: ExecutionConfig) -> Executor:
    if execution.executor == "ray":
        from lifebench.runner.ray_executor import RayExecutor

        return RayExecutor(execution.workers, record_trajectories=execution.trajectories,
                           concurrency=execution.concurrency, address=execution.ray_address)
    from lifebench.runner.local import LocalExecutor

    return LocalExecutor(execution.workers, record_trajectories=execution.trajectories,
                         concurrency=execution.concurrency, scheduler=execution.scheduler)


def plugin_distributions(config: RunConfig) -> set[str]:
    """The pip packages of the run's plugins other than lifebench itself (their versions go
    in the manifest: a submission says which version of a plugin made its results)."""
    found = {registry.distribution("benchmark", b) for b in config.benchmarks}
    found |= {registry.distribution("method", m) for m in config.methods}
    return {d for d in found if d and d != "lifebench"}


def execute(config: RunConfig, execution: ExecutionConfig, grid: bool = False,
            tool_decision: Optional[dict[str, Any]] = None,
            only_streams: Optional[set[str]] = None) -> RunOutcome:
    """Run `config`; as a grid (`lifebench grid`), cells that cannot run (no LLM given, no
    oracle, the method's own reason) are refused and recorded instead of stopping the run.
    `tool_decision`: how the tool protocol was decided before the run (the CLI's probe),
    for the manifest. `only_streams`: play only these streams (by id; `lifebench verify
    --sample`), each from its start, with the contexts they are given."""
    refused: list[Refusal] = []
    streams = expand(config, refused, grid)
    out = results_dir(config, execution)
    with ResultsStore(out) as store:
        existing = store.open()
        builds = plan_contexts(streams, store.contexts, execution.context_cache,
                               streams[0].run_id)
        plan = plan_units(streams, existing.records, store, execution.workers,
                          execution.concurrency)
        if only_streams is not None:
            _keep_only(plan, builds, only_streams)
        for unit in [*plan.units, *builds]:  # every answer the run uses is kept in OUT
            unit.stream = with_llm_settings(unit.stream, answers_path=str(out / ANSWERS_FILE))
        packages = sorted({p for b in config.benchmarks for p in registry.get_benchmark(b).packages}
                          | plugin_distributions(config))
        info = environment_info(packages)
        endpoint = None
        if (plan.to_run or builds) and config.model and config.llm.base_url:
            endpoint = _check_endpoint(config, plan.units, builds) \
                if config.llm.cache != "replay" else _replayed_endpoint(config)
            if tool_decision is not None:
                endpoint["tool_calling"] = tool_decision
        earlier = store.last_manifest()
        if plan.already_done and earlier and earlier.git_revision != info["git_revision"]:
            print(f"note: {out} holds episodes recorded at revision {earlier.git_revision}; "
                  f"this run is at {info['git_revision']} (use a new --out to rerun everything)",
                  file=sys.stderr)
        store.add_manifest(make_manifest(
            run_id=streams[0].run_id, config=config.to_dict(), argv=sys.argv,
            executor=execution.executor, workers=execution.workers,
            concurrency=execution.concurrency, streams=[s.stream_id for s in streams],
            episodes_total=plan.to_run + plan.already_done,
            episodes_already_done=plan.already_done, llm_endpoint=endpoint,
            refused=[r.to_dict() for r in refused] or None, cells=cell_protocols(streams),
            info=info))
        contexts = RunOutcome()
        if builds:
            # Phase 1: the instance contexts, each built once, before any episode needs one.
            print(f"lifebench: building {len(builds)} instance context(s) first", file=sys.stderr)
            contexts = make_executor(execution).run(builds, store, lambda *_: None)
        if any(s.context_build for s in streams):
            attach_contexts(plan.units, given_contexts(streams, store.contexts))
        # Phase 2: the episodes; streams that share a preparation not stored yet wait for
        # the first of them to store it.
        first, later = prepared_waves(plan.units, store.prepared)
        progress = Progress(total=plan.to_run, skipped=plan.already_done, enabled=execution.progress)
        try:
            outcome = make_executor(execution).run(first, store, progress.update)
            if later:
                attach_prepared(later, store.prepared)
                outcome.absorb(make_executor(execution).run(later, store, progress.update))
        finally:
            progress.close()
        learned = _learned(endpoint, outcome, out / ANSWERS_FILE, config.llm.trim)
        if learned:  # a refused seed, say: the manifest says what was sent instead
            store.amend_last_manifest(llm_endpoint={**(endpoint or {}), **learned})
    outcome.already_done = plan.already_done
    outcome.contexts_built, outcome.contexts_failed = contexts.contexts_built, contexts.contexts_failed
    return outcome


def _keep_only(plan: Any, builds: list, streams: set[str]) -> None:
    """Leave in `plan` and `builds` only what the named streams play and are given (the
    contexts keep the charges the whole run gave them)."""
    plan.units[:] = [u for u in plan.units if u.stream.stream_id in streams]
    plan.to_run = sum(len(u.positions) for u in plan.units)
    needed = {u.stream.context_build.key(u.stream.benchmark, u.stream.benchmark_config_hash, i)
              for u in plan.units if u.stream.context_build is not None
              for i in u.stream.instance_ids}
    builds[:] = [b for b in builds if b.key in needed]


def _replayed_endpoint(config: RunConfig) -> dict[str, Any]:
    """The endpoint of a replay (`--cache replay`), which is never contacted: the window
    the config gives, nothing asked."""
    window = config.llm.context_window
    return {"model": config.model, "served": None, "context_window": window,
            "context_window_source": "--context-window" if window else None,
            "contacted": False}


def _learned(endpoint: Optional[dict], outcome: RunOutcome, answers: Path,
             trim: bool) -> dict[str, Any]:
    """What the run's clients found out about the endpoint, for its manifest: what they sent
    otherwise than asked, and how prompts' tokens were counted to fit the window."""
    from lifebench.llm import answers as answers_file

    learned: dict[str, Any] = {}
    if outcome.adapted:
        learned["adapted"] = sorted(outcome.adapted)
    if outcome.faults:  # what the endpoint did wrong, by kind (each retried or waited for)
        learned["faults"] = dict(sorted(outcome.faults.items()))
    answers_file.close(answers)
    if endpoint and endpoint.get("context_window") and trim and answers.exists():
        counted = answers_file.summary(answers).token_counts
        learned["token_counts"] = ({"source": endpoint.get("token_counter") or "/tokenize",
                                    "texts": counted} if counted else
                                   {"source": "estimate", "chars_per_token": CHARS_PER_TOKEN})
    return learned


def _check_endpoint(config: RunConfig, units: list, builds: list) -> Optional[dict]:
    """Whether the model is served, its context window (from /v1/models or /props: no
    completion is asked) and how the server counts a prompt's tokens, said in one line; a
    window and a template's framing found there are given to every unit to run (they are the
    endpoint's, not part of a record's identity)."""
    from lifebench.llm.models import check_model

    check = check_model(config.model, config.llm)
    if check.line:
        print(check.line, file=sys.stderr)
    settings: dict[str, Any] = {}
    if check.window and not config.llm.context_window:
        settings["context_window"] = check.window
    if check.framing is not None:
        settings["prompt_framing"] = check.framing.encoded()
    if settings:
        for unit in [*units, *builds]:
            unit.stream = with_llm_settings(unit.stream, **settings)
    return check.manifest(config.model)


def summary_line(outcome: RunOutcome, out: Path) -> str:
    if not outcome.committed:
        return f"nothing to do: {outcome.already_done} episodes already recorded in {out}"
    rate = f"{outcome.successes / outcome.results:.3f}" if outcome.results else "n/a"
    retried = outcome.failures - outcome.failed
    notes = [f"{retried} infrastructure failures retried"] if retried else []
    notes += [f"{outcome.already_done} recorded before"] if outcome.already_done else []
    notes += [f"{outcome.contexts_built} instance contexts built"] if outcome.contexts_built else []
    notes += [f"{outcome.skipped} trials not played (an earlier trial of their instance "
              f"succeeded)"] if outcome.skipped else []
    notes += [f"{outcome.prepared_reused} stream(s) reused a prepared artifact instead of "
              f"preparing"] if outcome.prepared_reused else []
    notes += [f"{outcome.overflowed} ended at the model's context window (context_overflow, "
              f"counted as failures)"] if outcome.overflowed else []
    notes += replies_notes(outcome.replies)
    faults = faults_note(outcome.faults)
    cut = outcome.cut_calls.note()
    return (f"{outcome.results} episodes recorded in {out} (success {rate})"
            + (f"; {', '.join(notes)}" if notes else "") + (f"\nnote: {cut}" if cut else "")
            + (f"\nnote: {faults}" if faults else ""))


REPLY_NOTES = (("malformed", "replies that could not be read twice (each the method's failed step)"),
               ("end_tokens_stripped", "end-of-turn tokens stripped from replies' ends"),
               ("refusals", "refusals by the model (each the method's failed step; texts in the records)"),
               ("several_choices", "replies with several choices (the first read)"),
               ("replaced_characters", "characters no prompt can encode, replaced by U+FFFD"))


def replies_notes(counts: dict[str, int]) -> list[str]:
    """What the replies held, counted over the run's records (`extra.llm_replies`)."""
    return [f"{counts[name]} {what}" for name, what in REPLY_NOTES if counts.get(name)]


def failure_hint(outcome: RunOutcome) -> Optional[str]:
    """The last line of a run that could not record every episode as a result (exit 1)."""
    if not outcome.failed and not outcome.stopped:
        return None
    parts = [f"{outcome.failed} episodes ended as infrastructure failures after their retries"
             f" (their records say why: status and error)"]
    parts += outcome.stopped
    return "; ".join(parts) + "; rerun the same command to retry them"
