"""The context stage of a run: before any episode, every instance context the streams need
and the results directory lacks is built, once per key, by the same executor (local
workers or Ray) with the same timeouts and retries as episodes.

Planning (`plan_contexts`) and handing contexts to episodes (`given_contexts`) run in the
writer's process; `build_context` runs in a worker and reports through `emit`, like
`run_unit`.
"""

from __future__ import annotations

import dataclasses
import random
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

import lifebench
from lifebench import registry
from lifebench.api.context import ContextTools, ExplorationBudgetExhausted, InstanceContext, \
    coverage
from lifebench.api.errors import UserError
from lifebench.api.records import Status
from lifebench.runner.clients import make_llm_client
from lifebench.runner.episode import Failure, classify_failure
from lifebench.runner.events import ContextCommitted, EpisodeStarted, Event, UnitFinished
from lifebench.runner.exploration import CountedExplorationEnv, ExplorationTimeout
from lifebench.runner.streams import StreamSpec
from lifebench.store.contexts import ContextRecord, ContextStore


@dataclass
class ContextUnit:
    """Build one instance's context. `stream` is the first stream (in the run's order) that
    uses it: it gives the benchmark, the build, the timeout and the retries."""

    unit_id: int
    key: str
    stream: StreamSpec
    instance_id: str
    first_attempt: int = 0


@dataclass(frozen=True)
class GivenContext:
    """A context as the streams of a run get it: its record, and its document when built."""

    record: ContextRecord
    document: Optional[str]

    def for_stream(self, stream: StreamSpec) -> InstanceContext:
        """What the stream's method is shown (the provider cuts the document by the
        stream's use-time options)."""
        provider = registry.context_class(stream.context)(stream.context_config)
        r = self.record
        return InstanceContext(provider=stream.context, key=r.key,
                               text=provider.prompt_text(self.document or ""),
                               explore_steps=r.explore_steps, llm_calls=r.llm_calls,
                               tokens_in=r.tokens_in, tokens_out=r.tokens_out,
                               coverage=dict(r.coverage))


def context_key(stream: StreamSpec, instance_id: str) -> str:
    assert stream.context_build is not None
    return stream.context_build.key(stream.benchmark, stream.benchmark_config_hash, instance_id)


def plan_contexts(streams: list[StreamSpec], store: ContextStore, cache: Optional[str],
                  run_id: str) -> list[ContextUnit]:
    """The builds this run needs: one per key its streams use that neither the results
    directory nor the `--context-cache` directory holds (a cached one is copied in)."""
    have = store.records()
    other = ContextStore(cache) if cache else None
    if other is not None and not other.path.exists():
        raise UserError(f"--context-cache {cache}: no {other.path.name} there; give a results "
                        f"directory of a run that built instance contexts")
    theirs = other.records() if other is not None else {}
    units: list[ContextUnit] = []
    seen: set[str] = set()
    for stream in streams:
        if stream.context_build is None:
            continue
        for instance_id in stream.instance_ids:
            key = context_key(stream, instance_id)
            if key in seen:
                continue
            seen.add(key)
            if key in have and have[key].built and store.payload(key) is not None:
                continue
            payload = other.payload(key) if other is not None and key in theirs \
                and theirs[key].built else None
            if payload is not None:
                copied = dataclasses.replace(theirs[key], charge_to=None, reused_from=str(cache),
                                             run_id=run_id)
                store.commit(copied, payload["document"], payload.get("artefacts"))
                continue
            units.append(ContextUnit(len(units), key, stream, instance_id))
    return units


def given_contexts(streams: list[StreamSpec], store: ContextStore) -> dict[str, GivenContext]:
    """Every context the streams use, by key, as recorded (built or failed)."""
    records = store.records()
    out: dict[str, GivenContext] = {}
    for stream in streams:
        if stream.context_build is None:
            continue
        for instance_id in stream.instance_ids:
            key = context_key(stream, instance_id)
            if key in out or key not in records:
                continue
            record = records[key]
            payload = store.payload(key) if record.built else None
            out[key] = GivenContext(record, payload["document"] if payload else None)
    return out


def build_context(unit: ContextUnit, emit: Callable[[Event], None]) -> None:
    """Build the unit's context, retrying infrastructure failures; every attempt is
    reported (a failure's record says why)."""
    attempt = unit.first_attempt
    while True:
        emit(EpisodeStarted(unit.unit_id, -1, attempt))
        record, document, artefacts = _build_once(unit, attempt)
        emit(ContextCommitted(unit.unit_id, record, document, artefacts))
        if record.built or not record.status.is_retried or attempt >= unit.stream.retries:
            break
        attempt += 1
    emit(UnitFinished(unit.unit_id))


def context_failure(unit: ContextUnit, status: Status, error: str, attempt: int,
                    wall_s: float) -> ContextRecord:
    """The record of an attempt whose worker died or was killed before it could report."""
    return _record(unit, attempt, status=status, error=error, wall_s=wall_s)


def _record(unit: ContextUnit, attempt: int, **values: Any) -> ContextRecord:
    stream, build = unit.stream, unit.stream.context_build
    assert build is not None
    cls = registry.context_class(build.provider)
    return ContextRecord(
        key=unit.key, benchmark=stream.benchmark,
        benchmark_config_hash=stream.benchmark_config_hash, instance_id=unit.instance_id,
        provider=build.provider, build_hash=build.build_hash,
        config=dataclasses.asdict(build.config), model=build.model, seed=build.seed,
        run_id=stream.run_id, harness_version=lifebench.__version__, attempt=attempt,
        explore_budget=cls.explore_budget(build.config), charge_to=stream.stream_id, **values)


class _Reports:
    """The documents a provider reports as it goes, and their coverage."""

    def __init__(self, benchmark: Any, raw: Any, env: CountedExplorationEnv) -> None:
        self.benchmark = benchmark
        self.raw = raw  # the instance's env itself: its ground truth, never the provider's
        self.env = env
        self.facts: Any = None
        self.asked = False
        self.last: Optional[str] = None
        self.curve: list[tuple[int, float]] = []

    def report(self, document: str) -> None:
        if not isinstance(document, str):
            raise TypeError(f"report() takes the document as text, not {type(document).__name__}")
        self.last = document
        if not self.asked:  # the ground truth is read once the env has been reset
            self.facts, self.asked = self.benchmark.instance_facts(self.raw), True
        if self.facts is not None:
            point = (self.env.steps, coverage(document, self.facts).get("all", 0.0))
            if not self.curve or self.curve[-1] != point:
                self.curve.append(point)


def _build_once(unit: ContextUnit, attempt: int) -> tuple[ContextRecord, Optional[str], Optional[dict]]:
    stream, build = unit.stream, unit.stream.context_build
    assert build is not None
    started = time.monotonic()
    cls = registry.context_class(build.provider)
    benchmark = registry.get_benchmark(stream.benchmark, stream.benchmark_config)
    instance = benchmark.instance(stream.split, unit.instance_id)
    llm = make_llm_client(build.model, build.llm, build.seed, method=build.provider,
                          benchmark=stream.benchmark, split=stream.split,
                          instance=unit.instance_id) if build.llm is not None else None
    if llm is not None:
        llm.scope(f"context/{unit.key}")
    env: Optional[CountedExplorationEnv] = None
    status, error, document, values = Status.OK, None, None, {}
    side = "env"
    try:
        try:
            raw = benchmark.make_env(instance, build.seed)
            env = CountedExplorationEnv(raw, cls.explore_budget(build.config),
                                        deadline=started + stream.timeout_s, blind=benchmark)
            reports = _Reports(benchmark, raw, env)
            tools = ContextTools(
                schema=benchmark.context_schema(), instructions=benchmark.instructions, llm=llm,
                budget_steps=env.budget, rng=random.Random(f"context/{unit.key}"),
                sample_action=env.sample_action, report=reports.report)
            side = "method"
            try:
                document = cls(build.config).build(env, tools)
            except ExplorationBudgetExhausted:
                document = reports.last  # the provider let the budget end it
            if document is None:
                raise TypeError("the provider reported no document before its budget ended")
            if not isinstance(document, str):
                raise TypeError(f"build() returned {type(document).__name__}, not the document text")
            reports.report(document)
            values = {"coverage": coverage(document, reports.facts) if reports.facts else {},
                      "coverage_curve": reports.curve}
            artefacts = dict(tools.artefacts)
        except ExplorationTimeout as exc:
            raise Failure(Status.TIMEOUT, f"context build exceeded --timeout "
                          f"{stream.timeout_s:g}s: {exc}") from exc
        except (Failure, UserError):
            raise
        except Exception as exc:
            raise classify_failure(exc, side) from exc
    except Failure as failure:
        status, error, document, artefacts = failure.status, failure.error, None, None
    finally:
        if env is not None:
            try:
                env.close()
            except Exception:
                pass
    if llm is not None:
        usage = llm.take_usage()
        calls = llm.take_calls()
        llm.take_notes()
        llm.take_faults()
        # kept before the line that names them; a failed attempt's are forgotten
        llm.flush_answers() if status is Status.OK else llm.drop_answers()
        values.update(llm_call_keys=[call.key for call in calls],
                      llm_usage=dict(sorted(usage.items())),
                      llm_calls=sum(u.calls for u in usage.values()),
                      tokens_in=sum(u.tokens_in for u in usage.values()),
                      tokens_out=sum(u.tokens_out for u in usage.values()),
                      cost_usd=llm.cost(usage) if usage else None)
    record = _record(unit, attempt, status=status, error=error,
                     explore_steps=env.steps if env is not None else 0,
                     wall_s=round(time.monotonic() - started, 4), **values)
    return record, document, artefacts

