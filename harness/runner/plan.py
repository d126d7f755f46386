"""Turning streams into work units, skipping what a results directory already holds.

Finished keys (result statuses) are skipped. A lifelong stream resumes right after its last
finished episode from the memory saved there; a stateless stream runs whatever is missing,
sharded so that all workers stay busy (whole, when LLM streams fill every slot).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

from lifebench import registry
from lifebench.api.errors import UserError
from lifebench.api.records import EpisodeRecord, RecordKey
from lifebench.runner.contexts import GivenContext, context_key
from lifebench.runner.streams import StreamSpec
from lifebench.runner.unit import WorkUnit
from lifebench.store.prepared import PreparedStore
from lifebench.store.results import ResultsStore


@dataclass
class Plan:
    units: list[WorkUnit]
    to_run: int
    already_done: int


def plan_units(streams: list[StreamSpec], records: list[EpisodeRecord], store: ResultsStore,
               workers: int, concurrency: int = 1) -> Plan:
    """`workers` x `concurrency` streams play at once."""
    finished = {r.key: r for r in records if r.is_result}
    slots = max(workers, 1) * max(concurrency, 1)
    stateless_streams = sum(1 for s in streams if registry.method_class(s.method).stateless)
    units: list[WorkUnit] = []
    done = 0
    for stream in streams:
        positions = range(len(stream.episodes))
        succeeded = _succeeded(stream, finished)
        # settled: recorded, or not to be played (an earlier trial of its instance succeeded)
        remaining = [p for p in positions
                     if stream.key_at(p) not in finished and not stream.skipped(p, succeeded)]
        done += sum(1 for p in positions if stream.key_at(p) in finished)
        stateless = registry.method_class(stream.method).stateless and not stream.stop_after_success
        if not stateless:
            _check_positions(stream, finished, store)
        if not remaining:
            continue
        if stateless:
            # Shards keep every slot busy (three per slot, for balance). Streams in flight
            # for an LLM (concurrency > 1) are seeds of one split, as long as each other:
            # with one for every slot, whole streams end together, and shards would only
            # add a tail (slots finishing at different times) and per-unit set-ups.
            whole = concurrency > 1 and stateless_streams >= slots
            shards = 1 if whole else max(1, min(len(remaining), slots * 3))
            size = math.ceil(len(remaining) / shards)
            for start in range(0, len(remaining), size):
                units.append(WorkUnit(len(units), stream, remaining[start:start + size],
                                      stateful=False, solved=_solved(stream, finished)))
            continue
        first = remaining[0]
        if remaining != list(range(first, len(stream.episodes))):
            raise UserError(f"{store.out} holds episodes of lifelong stream {stream.stream_id} "
                            f"past position {first} run in another order (different --instances "
                            f"or --limit?); use a new --out")
        saved = None
        if first > 0:
            last = first - 1
            saved = store.read_state(stream.stream_id, last)
            while saved is None and last > 0 and stream.skipped(last, succeeded):
                last -= 1  # a skip the run did not reach before it stopped: the state before
                saved = store.read_state(stream.stream_id, last)
            if saved is None:
                raise UserError(f"cannot resume lifelong stream {stream.stream_id}: the method "
                                f"state saved after episode {last} is missing from "
                                f"{store.out}/state; use a new --out")
            if saved.get("prefix") != stream.prefix_digest(last):
                raise UserError(f"cannot resume lifelong stream {stream.stream_id}: its saved "
                                f"state was made on a different instance order; use a new --out")
        store.prune_states(stream.stream_id, keep=last if first > 0 else -1)
        units.append(WorkUnit(len(units), stream, remaining, stateful=True, saved=saved,
                              solved=_solved(stream, finished)))
    # Longest first, so a long lifelong stream does not start last.
    units.sort(key=lambda u: -len(u.positions))
    return Plan(units=units, to_run=sum(len(u.positions) for u in units), already_done=done)


def prepared_waves(units: list[WorkUnit], prepared: PreparedStore
                   ) -> tuple[list[WorkUnit], list[WorkUnit]]:
    """Units in two waves, so that a preparation is made once: a unit whose preparation is
    stored gets it now; of the units that share a key not stored yet, the first plays in
    the first wave (and stores it), the others in the second (`attach_prepared` then gives
    them what the first stored)."""
    first: list[WorkUnit] = []
    later: list[WorkUnit] = []
    found: dict[str, Optional[dict[str, Any]]] = {}
    for unit in units:
        key = unit.stream.prepared_key() if unit.saved is None else None
        if key is None:
            first.append(unit)
            continue
        if key not in found:
            found[key] = prepared.read(key)
            unit.prepared = found[key]
            first.append(unit)
        elif found[key] is not None:
            unit.prepared = found[key]
            first.append(unit)
        else:
            later.append(unit)
    return first, later


def attach_prepared(units: list[WorkUnit], prepared: PreparedStore) -> None:
    """Give the second wave what the first stored (a unit whose maker failed prepares)."""
    found: dict[str, Optional[dict[str, Any]]] = {}
    for unit in units:
        key = unit.stream.prepared_key()
        if key is not None and key not in found:
            found[key] = prepared.read(key)
        unit.prepared = found.get(key) if key else None


def attach_contexts(units: list[WorkUnit], contexts: dict[str, GivenContext]) -> None:
    """Give each unit its stream's instance contexts (`contexts` by key), by instance id."""
    for unit in units:
        stream = unit.stream
        if stream.context_build is not None:
            keys = {i: context_key(stream, i) for i in stream.instance_ids}
            unit.contexts = {i: contexts[k] for i, k in keys.items() if k in contexts}


def _solved(stream: StreamSpec, finished: dict[RecordKey, EpisodeRecord]) -> frozenset[str]:
    """The instances of a stream that stops after a success whose success is recorded."""
    if not stream.stop_after_success:
        return frozenset()
    return frozenset(stream.episode_at(p)[0] for p in range(len(stream.episodes))
                     if (r := finished.get(stream.key_at(p))) is not None and r.success)


def _succeeded(stream: StreamSpec, finished: dict[RecordKey, EpisodeRecord]):
    """Whether the recorded episode at a position of `stream` succeeded."""
    def succeeded(position: int) -> bool:
        record = finished.get(stream.key_at(position))
        return record is not None and record.success
    return succeeded


def _check_positions(stream: StreamSpec, finished: dict[RecordKey, EpisodeRecord],
                     store: ResultsStore) -> None:
    """A lifelong stream's recorded episodes must have been played at the positions the
    stream has now: an episode's result depends on the memory of every episode before it.
    A stream asked with other instances or in another order is refused, never reused."""
    for position in range(len(stream.episodes)):
        record = finished.get(stream.key_at(position))
        if record is not None and record.episode_index != position:
            raise UserError(
                f"{store.out} holds {record.instance_id} (trial {record.trial}) of lifelong "
                f"stream {stream.stream_id} played at position {record.episode_index}, but this "
                f"run puts it at position {position} (other --instances, --limit or order?): "
                f"its memory would differ; use a new --out")
