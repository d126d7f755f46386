"""Running a stream's episodes through a method's lifecycle (the worker's side).

A `WorkUnit` is a stream, or a shard of a stateless stream, from a given position with
a given method state. `run_unit` plays it and reports every episode through `emit`; it
never writes files: the one writer is the executor's main process.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Callable, Optional

import harness
from harness import registry
from harness.episode import EpisodeResult, play_episode
from harness.protocols import Method, StreamContext
from harness.records import RESULT_STATUSES, RETRIED_STATUSES, EpisodeRecord, TaskInfo
from harness.spec import StreamSpec

@dataclass
class WorkUnit:
    unit_id: int
    stream: StreamSpec
    positions: list[int]  # episode positions (indices into stream.episodes) to play, in order
    stateful: bool
    # Saved memory to load before the first position: {"state": ...}; None starts fresh.
    saved: Optional[dict[str, Any]] = None
    first_attempt: int = 0


@dataclass
class EpisodeStarted:
    unit_id: int
    position: int
    attempt: int


@dataclass
class EpisodeCommitted:
    unit_id: int
    stream_id: str
    record: EpisodeRecord
    trajectory: Optional[dict[str, Any]]
    # The memory after this episode, for stateful units and result statuses only.
    saved: Optional[dict[str, Any]]


@dataclass
class UnitFinished:
    unit_id: int
    # Why the unit stopped before its last position (a lifelong stream cannot skip an
    # episode); None when it ran to the end.
    stopped: Optional[str] = None


Event = EpisodeStarted | EpisodeCommitted | UnitFinished


def make_record(stream: StreamSpec, position: int, instance_id: str, trial: int,
                result: EpisodeResult, attempt: int, usage: dict[str, int]) -> EpisodeRecord:
    extra = dict(result.extra)
    if stream.benchmark_config_hash:
        extra["benchmark_config"] = dataclasses.asdict(stream.benchmark_config)
    if stream.budget_steps is None:
        extra["budget"] = "default"  # the benchmark's per-instance budget (see leaderboard)
    if attempt:
        extra["attempt"] = attempt
    if result.error:
        extra["error"] = result.error
    return EpisodeRecord(
        run_id=stream.run_id, benchmark=stream.benchmark,
        benchmark_config_hash=stream.benchmark_config_hash, split=stream.split,
        instance_id=instance_id, method=stream.method,
        method_config_hash=stream.method_config_hash, model=stream.model, seed=stream.seed,
        trial=trial, episode_index=position, budget_steps=stream.budget_at(position),
        steps=result.steps, success=result.success, score=result.score, status=result.status,
        llm_calls=usage.get("llm_calls", 0), tokens_in=usage.get("tokens_in", 0),
        tokens_out=usage.get("tokens_out", 0), wall_s=round(result.wall_s, 4),
        harness_version=harness.__version__, extra=extra,
    )


def failure_record(stream: StreamSpec, position: int, status: str, error: str, attempt: int,
                   wall_s: float) -> EpisodeRecord:
    """A record for an episode whose worker died or was killed before it could report."""
    instance_id, trial = stream.episodes[position]
    result = EpisodeResult(status=status, wall_s=wall_s, error=error)
    return make_record(stream, position, instance_id, trial, result, attempt, {})


class _MethodHolder:
    """Builds the stream's method and rebuilds it from saved memory after a failure."""

    def __init__(self, stream: StreamSpec) -> None:
        self.stream = stream
        self.cls = registry.method_class(stream.method)
        self.benchmark = registry.get_benchmark(stream.benchmark, stream.benchmark_config)
        self.llm = _llm_client(stream) if stream.llm is not None else None
        self.teacher = None
        if self.cls.needs.teacher:
            from harness.teacher import TeacherService

            self.teacher = TeacherService(self.benchmark, self.llm)

    def build(self, saved: Optional[dict[str, Any]]) -> Method:
        method: Method = self.cls(self.stream.method_config)
        method.setup(StreamContext(benchmark=self.benchmark, split=self.stream.split,
                                   seed=self.stream.seed, budget_steps=self.stream.budget_steps,
                                   model=self.stream.model, llm=self.llm,
                                   teacher=self.teacher))
        if saved is not None:
            method.load_state(saved["state"])
        elif self.cls.needs.support:
            support = self.benchmark.support_split
            if support is None:
                raise ValueError(f"{self.stream.benchmark} has no support split")
            method.prepare(self.benchmark.instances(support))
        return method


def _llm_client(stream: StreamSpec) -> Any:
    from harness.llm.cache import ResponseCache
    from harness.llm.client import LLMClient, LLMSettings

    llm = stream.llm
    assert llm is not None and stream.model and llm.base_url
    cache = ResponseCache(llm.cache_path, llm.cache)
    from harness.spec import load_prices

    prices = load_prices(llm.prices) if llm.prices else {}
    return LLMClient(LLMSettings(model=stream.model, base_url=llm.base_url,
                                 api_key_env=llm.api_key_env, timeout_s=llm.timeout_s,
                                 max_retries=llm.max_retries, concurrency=llm.concurrency,
                                 prices=prices), cache)


def _llm_usage(client: Any) -> tuple[dict[str, int], dict[str, Any]]:
    """The client's usage since the last episode: record totals, `extra.llm_usage` by
    role and `extra.llm_call_tokens` per call (what a method spent in `prepare` counts in
    its first episode)."""
    by_role = client.take_usage()
    calls = client.take_calls()
    totals = {"llm_calls": sum(u.calls for u in by_role.values()),
              "tokens_in": sum(u.tokens_in for u in by_role.values()),
              "tokens_out": sum(u.tokens_out for u in by_role.values())}
    extra: dict[str, Any] = {}
    if by_role:
        extra["llm_usage"] = {role: dataclasses.asdict(u) for role, u in sorted(by_role.items())}
        extra["llm_call_tokens"] = calls
        cost = client.cost(by_role)
        if cost is not None:
            extra["cost_usd"] = round(cost, 6)
    return totals, extra


def _saved_memory(method: Method, stream: StreamSpec, position: int) -> dict[str, Any]:
    state = method.state()
    payload = {"position": position, "prefix": stream_prefix_digest(stream, position),
               "state": state}
    json.dumps(payload)  # fail here, in the worker, if the method's state is not JSON
    return payload


def stream_prefix_digest(stream: StreamSpec, position: int) -> str:
    """Identifies the episodes a saved memory has seen, so resume can refuse a stream whose
    order changed (e.g. a different --instances) instead of carrying the wrong memory."""
    text = "\n".join(f"{i}#{t}" for i, t in stream.episodes[: position + 1])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def run_unit(unit: WorkUnit, emit: Callable[[Event], None],
             record_trajectories: bool = True) -> None:
    stream = unit.stream
    holder = _MethodHolder(stream)
    benchmark = holder.benchmark
    instances = {inst.instance_id: inst for inst in benchmark.instances(stream.split)}
    instructions = benchmark.instructions
    saved = unit.saved
    method: Optional[Method] = None
    setup_error: Optional[str] = None
    try:
        method = holder.build(saved)
    except Exception as exc:  # a method that cannot start fails its first episode
        setup_error = f"{type(exc).__name__} in method setup: {exc}"

    for index, position in enumerate(unit.positions):
        instance_id, trial = stream.episodes[position]
        attempt = unit.first_attempt if index == 0 else 0
        while True:
            emit(EpisodeStarted(unit.unit_id, position, attempt))
            task = TaskInfo(benchmark=stream.benchmark, split=stream.split,
                            instance=instances[instance_id], seed=stream.seed, trial=trial,
                            episode_index=position, budget_steps=stream.budget_at(position),
                            instructions=instructions)
            if method is None:
                result = EpisodeResult(status="agent_error", error=setup_error)
                usage: dict[str, int] = {}
            else:
                result = play_episode(benchmark, task.instance, method, task, stream.timeout_s,
                                      record_trajectory=record_trajectories,
                                      teacher=holder.teacher)
                usage = method.episode_usage() if result.status != "agent_error" else {}
                if holder.llm is not None:
                    usage, llm_extra = _llm_usage(holder.llm)
                    result.extra.update(llm_extra)
            family = benchmark.task_family(task.instance)
            if family is not None:
                result.extra["task_family"] = family
            after = None
            if result.status in RESULT_STATUSES and unit.stateful and method is not None:
                try:
                    after = _saved_memory(method, stream, position)
                except (TypeError, ValueError) as exc:
                    result = EpisodeResult(status="agent_error", steps=result.steps,
                                           error=f"state() is not JSON-serialisable: {exc}")
            record = make_record(stream, position, instance_id, trial, result, attempt, usage)
            trajectory = None
            if record_trajectories:
                trajectory = {"episode_index": position, "instance_id": instance_id,
                              "trial": trial, "attempt": attempt, "status": result.status,
                              "steps": result.trajectory}
            emit(EpisodeCommitted(unit.unit_id, stream.stream_id, record, trajectory, after))
            if record.is_result:
                saved = after if unit.stateful else saved
                break
            # An infrastructure or agent failure: the memory goes back to what it was
            # before this episode, so a retry starts from exactly the same state.
            try:
                method = holder.build(saved)
            except Exception as exc:
                method, setup_error = None, f"{type(exc).__name__} in method setup: {exc}"
            if result.status in RETRIED_STATUSES and attempt < stream.retries:
                attempt += 1
                continue
            if unit.stateful:
                emit(UnitFinished(unit.unit_id, stopped=(
                    f"stream {stream.stream_id} stopped at episode {position} "
                    f"({instance_id}, trial {trial}): {result.status} after {attempt + 1} "
                    f"attempt(s): {result.error}")))
                return
            break
    emit(UnitFinished(unit.unit_id))
