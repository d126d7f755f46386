"""Playing a stream's episodes through a method's lifecycle (the worker's side).

A `WorkUnit` is a stream, or a shard of a stateless stream, from a given position with
a given method state. `run_unit` plays it and reports every episode through `emit`; it
never writes files: the one writer is the executor's main process.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

import lifebench
from lifebench import registry
from lifebench.api.errors import ReplayMiss, UserError
from lifebench.api.protocols import Method, StreamContext
from lifebench.api.records import (CallTokens, EpisodeOutcome, EpisodeRecord, EpisodeTrajectory,
                                   RoleUsage, Status, TaskInfo)
from lifebench.config.plugins import benchmark_config_changes
from lifebench.runner.clients import make_llm_client
from lifebench.runner.contexts import ContextUnit, GivenContext, build_context
from lifebench.runner.episode import play_episode
from lifebench.runner.jobs import Transport, stream_jobs
from lifebench.runner.events import (EpisodeCommitted, EpisodeSkipped, EpisodeStarted, Event,
                                     RunAborted, UnitFinished)
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
    # The stream's instance contexts by instance id (when it is given one): what the
    # context stage built, so workers never read the results directory.
    contexts: dict[str, GivenContext] = dataclasses.field(default_factory=dict)
    # The prepared artifact of its stream's preparation key, when one was stored before:
    # the method loads it instead of preparing (`lifebench.store.prepared`).
    prepared: Optional[dict[str, Any]] = None
    # Instances a trial of which succeeded before this unit (a stream that stops an
    # instance after a success plays none of their later trials).
    solved: frozenset[str] = frozenset()


@dataclass(frozen=True)
class LLMSpend:
    """What an episode spent on the LLM (what a method spent in `prepare` counts in its
    first episode)."""

    usage: dict[str, RoleUsage] = dataclasses.field(default_factory=dict)
    calls: tuple[CallTokens, ...] = ()
    cost_usd: Optional[float] = None
    # what the replies held that the record says (`extra.llm_replies`): refusals, several
    # choices, malformed replies, characters replaced to be encodable, end tokens stripped
    notes: dict[str, Any] = dataclasses.field(default_factory=dict)
    # what the endpoint did wrong, by kind, each retried or waited for (`extra.endpoint_faults`)
    faults: dict[str, int] = dataclasses.field(default_factory=dict)


def make_record(stream: StreamSpec, position: int, outcome: EpisodeOutcome, attempt: int,
                spend: LLMSpend = LLMSpend(), given: Optional[GivenContext] = None) -> EpisodeRecord:
    key = stream.key_at(position)
    extra, explore_steps = dict(outcome.extra), outcome.explore_steps
    if given is not None:
        # The exploration is charged once per results directory: to the first episode of
        # the instance in the first stream that asked for the context.
        charged = given.record.charge_to == stream.stream_id and key.trial == 0
        steps = given.record.explore_steps if charged else 0
        explore_steps = (explore_steps or 0) + steps
        extra["context"] = _context_extra(stream, given, charged)
    if spend.notes:
        extra["llm_replies"] = dict(spend.notes)
    if spend.faults:
        extra["endpoint_faults"] = dict(sorted(spend.faults.items()))
    return EpisodeRecord(
        run_id=stream.run_id, **dataclasses.asdict(key), episode_index=position,
        steps=outcome.steps, success=outcome.success, score=outcome.score,
        status=outcome.status, llm_calls=sum(u.calls for u in spend.usage.values()),
        tokens_in=sum(u.tokens_in for u in spend.usage.values()),
        tokens_out=sum(u.tokens_out for u in spend.usage.values()),
        wall_s=round(outcome.wall_s, 4), harness_version=lifebench.__version__,
        extra=extra, budget=stream.budget.steps, attempt=attempt,
        error=outcome.error, task_family=_task_family(stream, key.instance_id),
        success_step=outcome.success_step, llm_usage=dict(sorted(spend.usage.items())),
        llm_call_tokens=list(spend.calls), cost_usd=spend.cost_usd,
        llm_calls_cut=sum(call.finish == "length" for call in spend.calls),
        llm_calls_trimmed=sum(call.trimmed > 0 for call in spend.calls),
        explore_steps=explore_steps,
        benchmark_config=benchmark_config_changes(stream.benchmark, stream.benchmark_config)
        if stream.benchmark_config_hash else None,
    )


def _context_extra(stream: StreamSpec, given: GivenContext, charged: bool) -> dict[str, Any]:
    """`extra.context`: the context an episode was given and what building it cost (the
    cost is the build's, whether this episode was charged with it or not)."""
    r = given.record
    default = dataclasses.asdict(type(stream.context_config)())
    changed = {k: v for k, v in dataclasses.asdict(stream.context_config).items()
               if default.get(k) != v}
    return {"name": stream.context, "key": r.key, "config": changed, "model": r.model,
            "explore_steps": r.explore_steps, "llm_calls": r.llm_calls,
            "tokens_in": r.tokens_in, "tokens_out": r.tokens_out, "coverage": dict(r.coverage),
            "coverage_curve": [list(point) for point in r.coverage_curve],
            "charged": charged, "reused_from": r.reused_from}


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


def task_info(stream: StreamSpec, position: int, instructions: Optional[str] = None,
              given: Optional[GivenContext] = None) -> TaskInfo:
    """What the method is told of the episode at `position` (`instructions`: the
    benchmark's manual, when the caller has it already; `given`: its instance context)."""
    benchmark = registry.get_benchmark(stream.benchmark, stream.benchmark_config)
    instance_id, trial = stream.episode_at(position)
    return TaskInfo(benchmark=stream.benchmark, split=stream.split,
                    instance=benchmark.instance(stream.split, instance_id), seed=stream.seed,
                    trial=trial, episode_index=position, budget_steps=stream.budget_at(position),
                    instructions=benchmark.instructions if instructions is None else instructions,
                    noop_action=benchmark.noop_action,
                    context=given.for_stream(stream) if given and given.document is not None
                    else None)


class _MethodHolder:
    """Builds the stream's method and rebuilds it from saved memory after a failure; a
    method that prepares loads its prepared artifact when there is one, and otherwise makes
    it (once: a rebuild loads what the first build made)."""

    def __init__(self, stream: StreamSpec, prepared: Optional[dict[str, Any]] = None,
                 jobs: Optional[Transport] = None) -> None:
        self.stream = stream
        self.prepared = prepared
        self.made: Optional[dict[str, Any]] = None  # an artifact made here, not yet sent
        self.note: Optional[dict[str, Any]] = None  # extra.prepared of the next record
        self.cls = registry.method_class(stream.method)
        self.benchmark = registry.get_benchmark(stream.benchmark, stream.benchmark_config)
        self.llm = make_llm_client(stream.model, stream.llm, stream.seed, method=stream.method,
                                   benchmark=stream.benchmark, split=stream.split) \
            if stream.llm is not None else None
        self.teacher = None
        if self.cls.needs.teacher:
            from lifebench.runner.teacher import TeacherService

            self.teacher = TeacherService(self.benchmark, self.llm)
        self.jobs = stream_jobs(jobs, stream, self.llm)

    def build(self, saved: Optional[dict[str, Any]]) -> Method:
        method = self._fresh()
        if saved is not None:
            method.load_state(saved["state"])
        elif self.cls.needs.support:
            method = self._prepare(method)
        return method

    def _fresh(self) -> Method:
        method: Method = self.cls(self.stream.method_config)
        method.setup(StreamContext(benchmark=self.benchmark, split=self.stream.split,
                                   seed=self.stream.seed, budget=self.stream.budget,
                                   model=self.stream.model, llm=self.llm,
                                   teacher=self.teacher, benchmark_named=registry.get_benchmark,
                                   allow_unconfined_code=self.stream.allow_unconfined_code,
                                   jobs=self.jobs))
        return method

    def _prepare(self, method: Method) -> Method:
        """`method` prepared, or loaded from the prepared artifact (a fresh one when the
        artifact does not load)."""
        key = self.stream.prepared_key()
        if self.prepared is not None:
            try:
                method.load_state(self.prepared["state"])
                self.note = {"key": key,
                             "reused": self.prepared.get("made_by") != self.stream.stream_id}
                return method
            except Exception as exc:  # an artifact only saves work: prepare instead
                print(f"note: the prepared artifact {key} does not load ({type(exc).__name__}: "
                      f"{str(exc)[:200]}); {self.stream.stream_id} prepares again", file=sys.stderr)
                self.prepared = None
                method = self._fresh()
        # A benchmark without a support split gives an empty one (RAP then starts with an
        # empty memory that its own successes fill).
        support = self.benchmark.support_split
        before = self._usage_so_far()
        method.prepare(self.benchmark.instances(support) if support else [])
        if self.llm is not None:
            self.llm.flush_answers()  # kept even if the first episode fails: none asks again
        spent = self._usage_so_far()  # the next episode's record still counts it
        self.note = {"key": key, "reused": False,
                     **{k: spent[k] - before[k] for k in ("llm_calls", "tokens_in", "tokens_out")}}
        state = method.state()
        try:
            json.dumps(state)
        except (TypeError, ValueError):
            return method  # not storable: every build prepares (its episodes say why, if ever)
        if state is not None:
            self.prepared = self.made = {"key": key, "state": state,
                                         "made_by": self.stream.stream_id,
                                         "harness_version": lifebench.__version__}
        return method

    def _usage_so_far(self) -> dict[str, int]:
        """The LLM usage not yet taken for a record."""
        usage = self.llm.pending_usage().values() if self.llm is not None else ()
        return {"llm_calls": sum(u.calls for u in usage), "tokens_in": sum(u.tokens_in for u in usage),
                "tokens_out": sum(u.tokens_out for u in usage)}

    def scope(self, position: int) -> None:
        """Keep the coming calls' answers under the episode at `position`."""
        if self.llm is not None:
            self.llm.scope(f"{self.stream.stream_id}/{position}")

    def take_prepared(self) -> tuple[Optional[dict[str, Any]], Optional[dict[str, Any]]]:
        """(the artifact made since the last call, to store; extra.prepared for the next
        record), each once."""
        made, note = self.made, self.note
        self.made = self.note = None
        return made, note

    def spend(self) -> LLMSpend:
        """The LLM usage since the last episode."""
        if self.llm is None:
            return LLMSpend()
        usage = self.llm.take_usage()
        return LLMSpend(usage=usage, calls=tuple(self.llm.take_calls()),
                        cost_usd=self.llm.cost(usage) if usage else None,
                        notes=self.llm.take_notes(), faults=self.llm.take_faults())


def _saved_memory(method: Method, stream: StreamSpec, position: int) -> dict[str, Any]:
    payload = {"position": position, "prefix": stream.prefix_digest(position),
               "state": method.state()}
    json.dumps(payload)  # fail here, in the worker, if the method's state is not JSON
    return payload


class _UnitPlayer:
    """Plays one unit's positions in order, retrying failed episodes from the memory saved
    before them."""

    def __init__(self, unit: WorkUnit, emit: Callable[[Event], None], record_trajectories: bool,
                 jobs: Optional[Transport] = None) -> None:
        self.unit = unit
        self.stream = unit.stream
        self.emit = emit
        self.record_trajectories = record_trajectories
        self.holder = _MethodHolder(unit.stream, unit.prepared, jobs)
        self.instructions = self.holder.benchmark.instructions
        self.saved = unit.saved
        self.method: Optional[Method] = None
        self.setup_error: Optional[str] = None
        self.retriable = True  # whether the last failed attempt is worth another
        if unit.positions:  # a preparation's calls are the first episode's
            self.holder.scope(unit.positions[0])
        self._rebuild()

    def _rebuild(self) -> None:
        """A method with the memory of the last committed episode (a method that cannot
        start fails the next episode)."""
        try:
            self.method, self.setup_error = self.holder.build(self.saved), None
        except UserError:
            raise  # the run cannot go on as asked (a refusal in setup): one line, exit 2
        except Exception as exc:
            self.method, self.setup_error = None, f"{type(exc).__name__} in method setup: {exc}"

    def play(self) -> None:
        solved = set(self.unit.solved)
        for index, position in enumerate(self.unit.positions):
            instance_id, _ = self.stream.episode_at(position)
            if self.stream.stop_after_success and instance_id in solved:
                # the memory is the last played episode's, saved as this position's
                saved = None if self.saved is None or not self.unit.stateful else {
                    **self.saved, "position": position, "prefix": self.stream.prefix_digest(position)}
                self.emit(EpisodeSkipped(self.unit.unit_id, self.stream.stream_id, position, saved))
                continue
            attempt = self.unit.first_attempt if index == 0 else 0
            while True:
                record = self._attempt(position, attempt)
                if record.is_result:
                    solved.update([instance_id] if record.success else [])
                    break
                # A failure: the memory goes back to what it was before this episode, so a
                # retry starts from exactly the same state.
                self._rebuild()
                if record.status.is_retried and attempt < self.stream.retries and self.retriable:
                    attempt += 1
                    continue
                if self.unit.stateful:
                    instance_id, trial = self.stream.episode_at(position)
                    self.emit(UnitFinished(self.unit.unit_id, stopped=(
                        f"stream {self.stream.stream_id} stopped at episode {position} "
                        f"({instance_id}, trial {trial}): {record.status} after {attempt + 1} "
                        f"attempt(s): {record.error}"), adapted=self._adapted()))
                    return
                break
        self.emit(UnitFinished(self.unit.unit_id, adapted=self._adapted()))

    def _adapted(self) -> tuple[str, ...]:
        llm = self.holder.llm
        return tuple(llm.adaptations()) if llm is not None else ()

    def _given(self, position: int) -> Optional[GivenContext]:
        if not self.stream.context:
            return None
        return self.unit.contexts.get(self.stream.episode_at(position)[0])

    def _attempt(self, position: int, attempt: int) -> EpisodeRecord:
        self.emit(EpisodeStarted(self.unit.unit_id, position, attempt))
        self.holder.scope(position)
        given = self._given(position)
        task = task_info(self.stream, position, self.instructions, given)
        self.retriable = True
        if self.stream.context and task.context is None:
            # Its context stage failed after its retries: the episode cannot be played as
            # asked, and fails the same way (a rerun builds the context again).
            self.retriable = False
            status = given.record.status if given is not None else Status.ENV_ERROR
            why = given.record.error if given is not None else "no build was recorded"
            outcome = EpisodeOutcome(task=task, status=status,
                                     error=f"instance context not built: {why}")
        elif self.method is None:
            outcome = EpisodeOutcome(task=task, status=Status.AGENT_ERROR, error=self.setup_error)
        else:
            llm = self.holder.llm
            if llm is not None:
                llm.tag(instance=task.instance.instance_id, split=self.stream.split, step=None)
            outcome = play_episode(self.holder.benchmark, task.instance, self.method, task,
                                   self.stream.timeout_s, teacher=self.holder.teacher,
                                   before_act=None if llm is None else lambda steps: llm.tag(
                                       step=None if steps is None else str(steps)),
                                   take_reasoning=None if llm is None else llm.take_reasoning)
        spend = self.holder.spend()
        after = None
        if outcome.status.is_result and self.unit.stateful and self.method is not None:
            try:
                after = _saved_memory(self.method, self.stream, position)
            except (TypeError, ValueError) as exc:
                outcome = dataclasses.replace(
                    outcome, status=Status.AGENT_ERROR, success=False, score=0.0,
                    success_step=None, error=f"state() is not JSON-serialisable: {exc}")
        made, note = self.holder.take_prepared()
        if note is not None:
            outcome = dataclasses.replace(outcome, extra={**outcome.extra, "prepared": note})
        record = make_record(self.stream, position, outcome, attempt, spend, given)
        if self.holder.llm is not None:  # kept before the record that names them; a failed
            # attempt's are forgotten (its retry asks again, and its answers take their places)
            self.holder.llm.flush_answers() if record.is_result else self.holder.llm.drop_answers()
        trajectory = None
        if self.record_trajectories:
            trajectory = EpisodeTrajectory(position, record.instance_id, record.trial, attempt,
                                           outcome.status, outcome.trajectory)
        self.emit(EpisodeCommitted(self.unit.unit_id, self.stream.stream_id, record, trajectory,
                                   after, prepared=made))
        if record.is_result and self.unit.stateful:
            self.saved = after
        return record


DIVERGED = "diverged in "  # a replayed stream's stop at a request not among the answers


def run_unit(unit: Union[WorkUnit, ContextUnit], emit: Callable[[Event], None],
             record_trajectories: bool = True, jobs: Optional[Transport] = None) -> None:
    """Play `unit`; `jobs`: the executor's transport for a preparation's jobs (None: they
    run inline, in this thread)."""
    try:
        if isinstance(unit, ContextUnit):
            build_context(unit, emit)
        else:
            _UnitPlayer(unit, emit, record_trajectories, jobs).play()
    except ReplayMiss as exc:
        llm = unit.stream.llm or (unit.stream.context_build.llm if unit.stream.context_build else None)
        if llm is not None and llm.replay_answers:  # `lifebench verify`: only this stream stops
            emit(UnitFinished(unit.unit_id, stopped=f"{DIVERGED}{unit.stream.stream_id}: {exc}"))
        else:
            emit(RunAborted(unit.unit_id, str(exc), exc.exit_code, replay_miss=True))
    except UserError as exc:
        emit(RunAborted(unit.unit_id, str(exc), exc.exit_code))
