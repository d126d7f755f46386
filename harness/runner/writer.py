"""The one writer of a run, shared by every executor: it commits the events that units
send, tracks each unit's episode in flight, decides when an episode hangs, and turns a
lost unit into its continuation.
"""

from __future__ import annotations

import collections
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Protocol, Union

from lifebench.api.records import EpisodeRecord, Status
from lifebench.api.errors import EndpointUnusable, ReplayMiss, UserError
from lifebench.runner.contexts import ContextUnit, context_failure
from lifebench.runner.events import (ContextCommitted, EpisodeCommitted, EpisodeSkipped,
                                     EpisodeStarted, Event, RunAborted, UnitFinished)
from lifebench.runner.unit import WorkUnit, failure_record
from lifebench.llm.truncation import CutCalls
from lifebench.store.results import ResultsStore


def hard_timeout_s(timeout_s: float) -> float:
    """When the writer gives up on an episode that does not return: the episode's own
    timeout (checked cooperatively between steps) plus a grace period."""
    return timeout_s + max(1.0, min(30.0, 0.5 * timeout_s))


@dataclass
class RunOutcome:
    committed: int = 0
    results: int = 0
    successes: int = 0
    failures: int = 0  # failure records, retried ones included
    failed: int = 0  # episodes that ended as a failure after their retries
    stopped: list[str] = field(default_factory=list)  # lifelong streams that could not go on
    already_done: int = 0  # results recorded before this run (resume)
    contexts_built: int = 0
    contexts_failed: int = 0  # instance contexts not built after their retries
    overflowed: int = 0  # results that ended at the model's context window
    adapted: set[str] = field(default_factory=set)  # the LLM clients' endpoint adaptations
    cut_calls: CutCalls = field(default_factory=CutCalls)  # of the results' LLM calls
    prepared_reused: int = 0  # streams that loaded a prepared artifact instead of preparing
    prepared_made: int = 0  # streams that prepared
    replies: collections.Counter = field(default_factory=collections.Counter)  # the records' `extra.llm_replies` counts
    faults: collections.Counter = field(default_factory=collections.Counter)  # their `extra.endpoint_faults`
    skipped: int = 0  # trials not played: an earlier trial of their instance succeeded

    def absorb(self, other: "RunOutcome") -> "RunOutcome":
        """This outcome with another phase's added (counts summed, lists and sets joined)."""
        for name, value in vars(other).items():
            mine = getattr(self, name)
            if isinstance(value, CutCalls):
                mine.calls, mine.cut = mine.calls + value.calls, mine.cut + value.cut
                mine.caps.update(value.caps)
            elif isinstance(value, (list, set)):
                mine.extend(value) if isinstance(mine, list) else mine.update(value)
            else:
                setattr(self, name, mine + value)
        return self


@dataclass(frozen=True)
class InFlight:
    """The episode a unit is playing."""

    position: int
    attempt: int
    started: float  # time.monotonic()


class Executor(Protocol):
    """Plays work units and hands every event to one `Writer` in this process."""

    def run(self, units: list[WorkUnit], store: ResultsStore,
            on_episode: Callable[[bool, bool], None]) -> RunOutcome: ...


class Writer:
    """Commits events to the store and tracks each unit's progress for recovery."""

    def __init__(self, store: ResultsStore, units: list[Union[WorkUnit, ContextUnit]],
                 on_episode: Callable[[bool, bool], None]) -> None:
        self.store = store
        self.units = {u.unit_id: u for u in units}
        self.on_episode = on_episode
        self.outcome = RunOutcome()
        # Per unit: positions settled (a result, or a failure past its retries), and the
        # episode in flight.
        self.settled: dict[int, set[int]] = collections.defaultdict(set)
        # Per unit: instances a trial of which succeeded (a continuation skips their trials).
        self.solved: dict[int, set[str]] = collections.defaultdict(set)
        self.in_flight: dict[int, InFlight] = {}

    def handle(self, event: Event) -> None:
        if isinstance(event, EpisodeStarted):
            self.in_flight[event.unit_id] = InFlight(event.position, event.attempt, time.monotonic())
        elif isinstance(event, EpisodeCommitted):
            if event.prepared is not None:
                self._store_prepared(event.prepared)
            self.store.commit(event.stream_id, event.record, event.trajectory, event.saved)
            self.in_flight.pop(event.unit_id, None)
            self._count(event.unit_id, event.record)
        elif isinstance(event, EpisodeSkipped):
            if event.saved is not None:
                self.store.write_state(event.stream_id, event.position, event.saved)
                self.store.prune_states(event.stream_id, keep=event.position)
            self.settled[event.unit_id].add(event.position)
            self.outcome.skipped += 1
        elif isinstance(event, ContextCommitted):
            self.store.contexts.commit(event.record, event.document, event.artefacts)
            self.in_flight.pop(event.unit_id, None)
            self._count_context(event.unit_id, event.record.status, event.record.attempt)
        elif isinstance(event, UnitFinished):
            self.in_flight.pop(event.unit_id, None)
            self.outcome.adapted.update(event.adapted)
            if event.stopped:
                self.outcome.stopped.append(event.stopped)
        elif isinstance(event, RunAborted):
            if event.replay_miss:
                raise ReplayMiss(event.message)
            raise (EndpointUnusable if event.exit_code == EndpointUnusable.exit_code
                   else UserError)(event.message)

    def _store_prepared(self, artifact: dict[str, Any]) -> None:
        try:
            self.store.prepared.write(artifact)
        except OSError as exc:  # it only saves work: the run goes on without it
            print(f"note: cannot store the prepared artifact {artifact['key']} "
                  f"({exc.strerror}); streams that share it prepare again", file=sys.stderr)

    def hung(self, unit_id: int) -> Optional[str]:
        """Why a unit must be stopped: its episode in flight is past its hard timeout."""
        flight = self.in_flight.get(unit_id)
        unit = self.units[unit_id]
        timeout_s = unit.stream.timeout_s
        if flight is not None and time.monotonic() - flight.started > hard_timeout_s(timeout_s):
            what = "context build" if isinstance(unit, ContextUnit) else "episode"
            return f"{what} exceeded --timeout {timeout_s:g}s and was killed"
        return None

    def _count_context(self, unit_id: int, status: Status, attempt: int) -> None:
        unit = self.units[unit_id]
        if status is Status.OK:
            self.outcome.contexts_built += 1
        elif not status.is_retried or attempt >= unit.stream.retries:
            self.outcome.contexts_failed += 1

    def _count(self, unit_id: int, record: EpisodeRecord) -> None:
        unit = self.units[unit_id]
        self.outcome.committed += 1
        for name, counts in (("llm_replies", self.outcome.replies), ("endpoint_faults", self.outcome.faults)):
            notes = record.extra.get(name)
            if isinstance(notes, dict):
                counts.update({k: v for k, v in notes.items() if isinstance(v, int)})
        final = record.is_result or not record.status.is_retried or \
            record.attempt >= unit.stream.retries
        if record.is_result and record.success:
            self.solved[unit_id].add(record.instance_id)
        if final:
            self.settled[unit_id].add(record.episode_index)
        if record.is_result:
            if unit.stateful:
                unit.saved = None  # superseded: recovery reads the committed state file
            self.outcome.results += 1
            self.outcome.successes += int(record.success)
            self.outcome.overflowed += record.status is Status.CONTEXT_OVERFLOW
            self.outcome.cut_calls.add(record.llm_call_tokens)
            prepared = record.extra.get("prepared")
            if isinstance(prepared, dict) and unit.positions and \
                    record.episode_index == unit.positions[0]:  # once per unit
                self.outcome.prepared_reused += prepared.get("reused") is True
                self.outcome.prepared_made += prepared.get("reused") is False
        else:
            self.outcome.failures += 1
            self.outcome.failed += int(final)
        if final:
            self.on_episode(record.is_result, record.success)

    def recover(self, unit_id: int, status: Status, error: str, charge: bool = True
                ) -> Optional[Union[WorkUnit, ContextUnit]]:
        """After a unit was lost mid-way (its worker died or was killed): record the episode
        in flight and return the unit's continuation, or None when it cannot continue. With
        `charge` False (the unit was a bystander of another unit's failure) nothing is
        recorded and the episode in flight is replayed at the same attempt."""
        unit = self.units[unit_id]
        if isinstance(unit, ContextUnit):
            return self._recover_context(unit, status, error, charge)
        flight = self.in_flight.pop(unit_id, None)
        done = self.settled[unit_id]
        remaining = [p for p in unit.positions if p not in done]
        if not remaining:
            return None
        first_attempt = unit.first_attempt if remaining[0] == unit.positions[0] else 0
        if not charge:
            attempt = flight.attempt if flight is not None and flight.position == remaining[0] \
                else first_attempt
            return self._continuation(unit, remaining, done, attempt)
        if flight is None:
            # Lost between episodes (e.g. while building the method): charge the next one,
            # so that repeated deaths still end after a bounded number of attempts.
            flight = InFlight(remaining[0], first_attempt, time.monotonic())
        record = failure_record(unit.stream, flight.position, status, error, flight.attempt,
                                time.monotonic() - flight.started)
        self.store.commit(unit.stream.stream_id, record, None, None)
        self._count(unit_id, record)
        retry = flight.attempt < unit.stream.retries
        if not retry:
            if unit.stateful:
                self.outcome.stopped.append(
                    f"stream {unit.stream.stream_id} stopped at episode {flight.position}: "
                    f"{status} after {flight.attempt + 1} attempt(s): {error}")
                return None
            remaining = [p for p in remaining if p != flight.position]
        if not remaining:
            return None
        return self._continuation(unit, remaining, done, flight.attempt + 1 if retry else 0)

    def _recover_context(self, unit: ContextUnit, status: Status, error: str,
                         charge: bool) -> Optional[ContextUnit]:
        flight = self.in_flight.pop(unit.unit_id, None)
        attempt = flight.attempt if flight is not None else unit.first_attempt
        if not charge:
            return self._again(unit, attempt)
        started = flight.started if flight is not None else time.monotonic()
        record = context_failure(unit, status, error, attempt, time.monotonic() - started)
        self.store.contexts.commit(record, None, None)
        self._count_context(unit.unit_id, status, attempt)
        return self._again(unit, attempt + 1) if attempt < unit.stream.retries else None

    def _again(self, unit: ContextUnit, attempt: int) -> ContextUnit:
        again = ContextUnit(max(self.units) + 1, unit.key, unit.stream, unit.instance_id,
                            first_attempt=attempt)
        self.units[again.unit_id] = again
        return again

    def _continuation(self, unit: WorkUnit, remaining: list[int], done: set[int],
                      first_attempt: int) -> WorkUnit:
        saved = unit.saved
        if unit.stateful and remaining[0] > 0 and (done or saved is None):
            saved = self.store.read_state(unit.stream.stream_id, remaining[0] - 1)
        key = unit.stream.prepared_key()
        prepared = (self.store.prepared.read(key) if key else None) or unit.prepared
        new_unit = WorkUnit(unit_id=max(self.units) + 1, stream=unit.stream, positions=remaining,
                            stateful=unit.stateful, saved=saved, first_attempt=first_attempt,
                            contexts=unit.contexts, prepared=prepared,
                            solved=unit.solved | frozenset(self.solved[unit.unit_id]))
        self.units[new_unit.unit_id] = new_unit
        return new_unit
