"""Playing a stream's episodes through a method's lifecycle (the worker's side).

A `WorkUnit` is a stream, or a shard of a stateless stream, from a given position with
a given method state. `run_unit` plays it and reports every episode through `emit`; it
never writes files: the one writer is the executor's main process.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

import lifebench
from lifebench import registry
from lifebench.api.errors import UserError
from lifebench.api.protocols import Method, StreamContext
from lifebench.api.records import (CallTokens, EpisodeOutcome, EpisodeRecord, EpisodeTrajectory,
                                   RoleUsage, Status, TaskInfo)
from lifebench.runner.episode import play_episode
from lifebench.runner.streams import StreamSpec


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
    trajectory: Optional[EpisodeTrajectory]
    # The memory after this episode, for stateful units and result statuses only.
    saved: Optional[dict[str, Any]]


@dataclass
class UnitFinished:
    unit_id: int
    # Why the unit stopped before its last position (a lifelong stream cannot skip an
    # episode); None when it ran to the end.
    stopped: Optional[str] = None


@dataclass
class RunAborted:
    """Something no retry can mend (a key the endpoint refuses, a replay-cache miss): the
    run stops with this one line, and the episode in flight is not recorded."""

    unit_id: int
    message: str


Event = Union[EpisodeStarted, EpisodeCommitted, UnitFinished, RunAborted]


@dataclass(frozen=True)
class LLMSpend:
    """What an episode spent on the LLM (what a method spent in `prepare` counts in its
    first episode)."""

    usage: dict[str, RoleUsage] = dataclasses.field(default_factory=dict)
    calls: tuple[CallTokens, ...] = ()
    cost_usd: Optional[float] = None


def make_record(stream: StreamSpec, position: int, outcome: EpisodeOutcome, attempt: int,
                spend: LLMSpend = LLMSpend()) -> EpisodeRecord:
    key = stream.key_at(position)
    return EpisodeRecord(
        run_id=stream.run_id, **dataclasses.asdict(key), episode_index=position,
        steps=outcome.steps, success=outcome.success, score=outcome.score,
        status=outcome.status, llm_calls=sum(u.calls for u in spend.usage.values()),
        tokens_in=sum(u.tokens_in for u in spend.usage.values()),
        tokens_out=sum(u.tokens_out for u in spend.usage.values()),
        wall_s=round(outcome.wall_s, 4), harness_version=lifebench.__version__,
        extra=dict(outcome.extra), budget=stream.budget.steps, attempt=attempt,
        error=outcome.error, task_family=_task_family(stream, key.instance_id),
        success_step=outcome.success_step, llm_usage=dict(sorted(spend.usage.items())),
        llm_call_tokens=list(spend.calls), cost_usd=spend.cost_usd,
        explore_steps=outcome.explore_steps,
        benchmark_config=dataclasses.asdict(stream.benchmark_config)
        if stream.benchmark_config_hash else None,
    )


def _task_family(stream: StreamSpec, instance_id: str) -> Optional[str]:
    benchmark = registry.get_benchmark(stream.benchmark, stream.benchmark_config)
    instance = benchmark.instance(stream.split, instance_id)
    return benchmark.task_family(instance)


def failure_record(stream: StreamSpec, position: int, status: Status, error: str, attempt: int,
                   wall_s: float) -> EpisodeRecord:
    """A record for an episode whose worker died or was killed before it could report."""
    outcome = EpisodeOutcome(task=task_info(stream, position), status=status, error=error,
                             wall_s=wall_s)
    return make_record(stream, position, outcome, attempt)


def task_info(stream: StreamSpec, position: int, instructions: Optional[str] = None) -> TaskInfo:
    """What the method is told of the episode at `position` (`instructions`: the
    benchmark's manual, when the caller has it already)."""
    benchmark = registry.get_benchmark(stream.benchmark, stream.benchmark_config)
    instance_id, trial = stream.episodes[position]
    return TaskInfo(benchmark=stream.benchmark, split=stream.split,
                    instance=benchmark.instance(stream.split, instance_id), seed=stream.seed,
                    trial=trial, episode_index=position, budget_steps=stream.budget_at(position),
                    instructions=benchmark.instructions if instructions is None else instructions,
                    noop_action=benchmark.noop_action)


class _MethodHolder:
    """Builds the stream's method and rebuilds it from saved memory after a failure."""

    def __init__(self, stream: StreamSpec) -> None:
        self.stream = stream
        self.cls = registry.method_class(stream.method)
        self.benchmark = registry.get_benchmark(stream.benchmark, stream.benchmark_config)
        self.llm = _llm_client(stream) if stream.llm is not None else None
        self.teacher = None
        if self.cls.needs.teacher:
            from lifebench.runner.teacher import TeacherService

            self.teacher = TeacherService(self.benchmark, self.llm)

    def build(self, saved: Optional[dict[str, Any]]) -> Method:
        method: Method = self.cls(self.stream.method_config)
        method.setup(StreamContext(benchmark=self.benchmark, split=self.stream.split,
                                   seed=self.stream.seed, budget=self.stream.budget,
                                   model=self.stream.model, llm=self.llm,
                                   teacher=self.teacher, benchmark_named=registry.get_benchmark))
        if saved is not None:
            method.load_state(saved["state"])
        elif self.cls.needs.support:
            # A benchmark without a support split gives an empty one (RAP then starts with
            # an empty memory that its own successes fill).
            support = self.benchmark.support_split
            method.prepare(self.benchmark.instances(support) if support else [])
        return method

    def spend(self) -> LLMSpend:
        """The LLM usage since the last episode."""
        if self.llm is None:
            return LLMSpend()
        usage = self.llm.take_usage()
        return LLMSpend(usage=usage, calls=tuple(self.llm.take_calls()),
                        cost_usd=self.llm.cost(usage) if usage else None)


def _llm_client(stream: StreamSpec) -> Any:
    from lifebench.llm.cache import ResponseCache
    from lifebench.llm.client import LLMClient
    from lifebench.llm.prices import load_prices

    llm = stream.llm
    assert llm is not None and stream.model and llm.base_url
    prices = load_prices(llm.prices) if llm.prices else {}
    return LLMClient(stream.model, llm, ResponseCache(llm.cache_path, llm.cache), prices,
                     seed=stream.seed)


def _saved_memory(method: Method, stream: StreamSpec, position: int) -> dict[str, Any]:
    payload = {"position": position, "prefix": stream.prefix_digest(position),
               "state": method.state()}
    json.dumps(payload)  # fail here, in the worker, if the method's state is not JSON
    return payload


class _UnitPlayer:
    """Plays one unit's positions in order, retrying failed episodes from the memory saved
    before them."""

    def __init__(self, unit: WorkUnit, emit: Callable[[Event], None], record_trajectories: bool) -> None:
        self.unit = unit
        self.stream = unit.stream
        self.emit = emit
        self.record_trajectories = record_trajectories
        self.holder = _MethodHolder(unit.stream)
        self.instructions = self.holder.benchmark.instructions
        self.saved = unit.saved
        self.method: Optional[Method] = None
        self.setup_error: Optional[str] = None
        self._rebuild()

    def _rebuild(self) -> None:
        """A method with the memory of the last committed episode (a method that cannot
        start fails the next episode)."""
        try:
            self.method, self.setup_error = self.holder.build(self.saved), None
        except Exception as exc:
            self.method, self.setup_error = None, f"{type(exc).__name__} in method setup: {exc}"

    def play(self) -> None:
        for index, position in enumerate(self.unit.positions):
            attempt = self.unit.first_attempt if index == 0 else 0
            while True:
                record = self._attempt(position, attempt)
                if record.is_result:
                    break
                # A failure: the memory goes back to what it was before this episode, so a
                # retry starts from exactly the same state.
                self._rebuild()
                if record.status.is_retried and attempt < self.stream.retries:
                    attempt += 1
                    continue
                if self.unit.stateful:
                    instance_id, trial = self.stream.episodes[position]
                    self.emit(UnitFinished(self.unit.unit_id, stopped=(
                        f"stream {self.stream.stream_id} stopped at episode {position} "
                        f"({instance_id}, trial {trial}): {record.status} after {attempt + 1} "
                        f"attempt(s): {record.error}")))
                    return
                break
        self.emit(UnitFinished(self.unit.unit_id))

    def _attempt(self, position: int, attempt: int) -> EpisodeRecord:
        self.emit(EpisodeStarted(self.unit.unit_id, position, attempt))
        task = task_info(self.stream, position, self.instructions)
        if self.method is None:
            outcome = EpisodeOutcome(task=task, status=Status.AGENT_ERROR, error=self.setup_error)
        else:
            outcome = play_episode(self.holder.benchmark, task.instance, self.method, task,
                                   self.stream.timeout_s, teacher=self.holder.teacher)
        spend = self.holder.spend()
        after = None
        if outcome.status.is_result and self.unit.stateful and self.method is not None:
            try:
                after = _saved_memory(self.method, self.stream, position)
            except (TypeError, ValueError) as exc:
                outcome = dataclasses.replace(
                    outcome, status=Status.AGENT_ERROR, success=False, score=0.0,
                    success_step=None, error=f"state() is not JSON-serialisable: {exc}")
        record = make_record(self.stream, position, outcome, attempt, spend)
        trajectory = None
        if self.record_trajectories:
            trajectory = EpisodeTrajectory(position, record.instance_id, record.trial, attempt,
                                           outcome.status, outcome.trajectory)
        self.emit(EpisodeCommitted(self.unit.unit_id, self.stream.stream_id, record, trajectory, after))
        if record.is_result and self.unit.stateful:
            self.saved = after
        return record


def run_unit(unit: WorkUnit, emit: Callable[[Event], None], record_trajectories: bool = True) -> None:
    try:
        _UnitPlayer(unit, emit, record_trajectories).play()
    except UserError as exc:
        emit(RunAborted(unit.unit_id, str(exc)))
