"""What units report to the run's one writer, in order: an episode (or a context build)
started, its result committed, the unit finished, or the run must stop."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Union

from lifebench.api.records import EpisodeRecord, EpisodeTrajectory
from lifebench.store.contexts import ContextRecord


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
    # A prepared artifact the unit made before this episode (`lifebench.store.prepared`).
    prepared: Optional[dict[str, Any]] = None


@dataclass
class EpisodeSkipped:
    """An episode not played: its stream stops an instance after a success, and an earlier
    trial of this instance succeeded. Nothing is recorded; the memory saved after the last
    episode played is saved at this position too, where a resume or a recovery reads it."""

    unit_id: int
    stream_id: str
    position: int
    saved: Optional[dict[str, Any]]


@dataclass
class UnitFinished:
    unit_id: int
    # Why the unit stopped before its last position (a lifelong stream cannot skip an
    # episode); None when it ran to the end.
    stopped: Optional[str] = None
    # what its LLM client learned to leave out for the endpoint ("seed not sent", ...)
    adapted: tuple[str, ...] = ()


@dataclass
class RunAborted:
    """Something no retry can mend (a key the endpoint refuses, a replay-cache miss): the
    run stops with this one line, and the episode in flight is not recorded."""

    unit_id: int
    message: str
    exit_code: int = 2  # the UserError's: 1 for an endpoint no reply of which can be read
    replay_miss: bool = False  # a request a replay has no answer for (`ReplayMiss`)


@dataclass
class ContextCommitted:
    """One attempt at building an instance context: its record, and its document and
    artefacts when it succeeded."""

    unit_id: int
    record: ContextRecord
    document: Optional[str] = None
    artefacts: Optional[dict[str, Any]] = None


Event = Union[EpisodeStarted, EpisodeCommitted, EpisodeSkipped, UnitFinished, RunAborted,
              ContextCommitted]
