"""Replaying a results directory from its answers (`lifebench verify`): each run its
manifest records is run again, as it was asked (spec, method configs, seeds), into a
scratch directory, with `--cache replay` against the answers the directory kept.

The requests are keyed as the submitter's were: the base URL stays theirs (it is part of
every key) and is never contacted (a replay sends nothing: no completion, no `/v1/models`,
no `/tokenize`, no tool probe). What the submitter's endpoint made the run send otherwise
than asked (a refused seed, `max_completion_tokens`) is sent from the first request, and
the context window the run found is given. A request not among the answers stops that run:
a divergence (`ReplayMiss`).
"""

from __future__ import annotations

import dataclasses
import random
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Optional

from lifebench.api.errors import ReplayMiss, UserError
from lifebench.api.records import EpisodeRecord, RecordKey
from lifebench.config.run import ExecutionConfig, RunConfig, run_config_of
from lifebench.llm import answers as answers_file
from lifebench.llm.client import adapted_settings
from lifebench.llm.server_tokens import Framing
from lifebench.runner.run import execute
from lifebench.runner.streams import expand
from lifebench.runner.unit import DIVERGED
from lifebench.store.records_file import deduplicate, read_directory
from lifebench.store.results import ANSWERS_FILE, TRAJECTORIES_DIR, read_manifest_runs


class Unverifiable(UserError):
    """What makes a results directory impossible to replay here, in one line."""

    def __init__(self, reason: str, replayable: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.replayable = replayable  # False: it keeps no answers at all


@dataclass(frozen=True)
class ReplayedRun:
    """One manifest run as a replay runs it."""

    run_id: str
    config: RunConfig
    grid: bool
    streams: dict[RecordKey, str]  # each episode's stream, by record key


@dataclass
class Replay:
    """What a replay ran and met."""

    runs: list[ReplayedRun] = field(default_factory=list)
    # (run id, stream or "", the replay miss): where a request was not among the answers
    diverged: list[tuple[str, str, str]] = field(default_factory=list)
    streams: Optional[set[str]] = None  # the streams replayed (None: all)
    notes: list[str] = field(default_factory=list)
    streams_total: int = 0


def check_replayable(directory: Path) -> list[dict[str, Any]]:
    """The directory's manifest runs, when it can be replayed here: its answers kept, every
    package it was made with installed at the same version (lifebench, the plugins, the
    benchmarks' libraries). Unverifiable otherwise."""
    if not (directory / ANSWERS_FILE).is_file():
        raise Unverifiable(f"{directory} keeps no answers (exported with --no-responses, or "
                           f"written before runs kept them)", replayable=False)
    try:
        runs = read_manifest_runs(directory)
    except ValueError as exc:
        raise Unverifiable(f"its manifest.json is unreadable ({exc})") from None
    if not runs:
        raise Unverifiable("it has no manifest.json: nothing says how its runs were asked")
    for run in runs:
        for name, version in sorted((run.get("packages") or {}).items()):
            here = _installed(name)
            if version is not None and here != version:
                who = "lifebench" if name == "lifebench" else f"the package {name}"
                raise Unverifiable(f"{who} {version} made it; this machine has "
                                   f"{here or 'none installed'}: install {name}=={version} to "
                                   f"verify it")
    return runs


def platform_notes(runs: list[dict[str, Any]]) -> list[str]:
    """What of the platform the runs recorded differs here, where float results may differ
    in their last bits (docs/verify.md): said, not refused (a replay may well be exact)."""
    from lifebench.store.manifest import numerics

    here = numerics()
    notes = []
    for run in runs:
        there = run.get("numerics") if isinstance(run.get("numerics"), dict) else {}
        for name in ("arch", "blas"):
            if there.get(name) and there.get(name) != here.get(name):
                notes.append(f"run {run.get('run_id')} was made with {name} {there[name]}, this "
                             f"machine has {here.get(name)}: methods that rank by sentence "
                             f"embeddings (lifebench.embeddings) may diverge where two scores tie "
                             f"within float32 rounding (docs/verify.md)")
    return list(dict.fromkeys(notes))


def _installed(name: str) -> Optional[str]:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def replayed_run(entry: dict[str, Any], cache_path: Path, answers: Path) -> ReplayedRun:
    """A manifest run as its replay runs it: its spec, the cache replaying, its `answers`
    given, the window its endpoint had, its adaptations from the first request, no prices
    (costs are not compared)."""
    try:
        config = run_config_of(entry.get("spec") or {})
    except UserError as exc:  # an unknown plugin, most often
        raise Unverifiable(f"run {entry.get('run_id')}: {exc}") from None
    endpoint = entry.get("llm_endpoint") if isinstance(entry.get("llm_endpoint"), dict) else {}
    llm = dataclasses.replace(config.llm, cache="replay", cache_path=str(cache_path), prices=None,
                              replay_answers=str(answers),
                              **adapted_settings([a for a in endpoint.get("adapted") or []
                                                  if isinstance(a, str)]))
    window = endpoint.get("context_window")
    if isinstance(window, int) and not llm.context_window:
        llm = dataclasses.replace(llm, context_window=window)
    framing = endpoint.get("prompt_framing")
    if isinstance(framing, dict):  # fitted as the run fitted them
        llm = dataclasses.replace(llm, prompt_framing=Framing.from_manifest(framing).encoded())
    config = dataclasses.replace(config, llm=llm)
    argv = entry.get("argv") or []
    grid = bool(entry.get("refused")) or (len(argv) > 1 and argv[1] == "grid")
    streams = {}
    for stream in expand(config, [], grid):
        for position in range(len(stream.instance_ids) * stream.trials):
            streams[stream.key_at(position)] = stream.stream_id
    return ReplayedRun(str(entry.get("run_id")), config, grid, streams)


def replay(directory: Path, scratch: Path, workers: int, sample: Optional[int] = None,
           seed: int = 0, llm_only: bool = False) -> Replay:
    """Replay `directory` into `scratch` (a new folder); `sample`: only that many of its
    streams, chosen with `seed` (each from its start, with the streams whose preparation it
    loaded); `llm_only`: only its runs of a model (the others hold no answers: replaying
    them is running them again)."""
    entries = check_replayable(directory)
    scratch.mkdir(parents=True, exist_ok=True)
    cache_path = scratch.parent / (scratch.name + "-cache.sqlite")  # stays empty: replay
    answers = scratch.parent / (scratch.name + "-answers.sqlite")  # whole: its WAL read in
    answers_file.copy(directory / ANSWERS_FILE, answers)
    done = Replay(runs=[replayed_run(entry, cache_path, answers) for entry in entries],
                  notes=platform_notes(entries))
    if sample is not None:
        done.streams, done.streams_total = sampled_streams(directory, done.runs, sample, seed)
    if llm_only:
        with_model = {s for run in done.runs if run.config.model for s in run.streams.values()}
        done.streams = with_model if done.streams is None else done.streams & with_model
    execution = ExecutionConfig(out=str(scratch), workers=workers, progress=False,
                                trajectories=(directory / TRAJECTORIES_DIR).is_dir(), probe=False)
    for run in done.runs:
        only = None if done.streams is None else done.streams & set(run.streams.values())
        if only is not None and not only:
            continue
        print(f"lifebench verify: replaying run {run.run_id}", file=sys.stderr)
        try:
            outcome = execute(run.config, execution, run.grid, only_streams=only)
        except ReplayMiss as miss:  # not a stream's own (a replay stops only its stream)
            done.diverged.append((run.run_id, "", str(miss)))
            continue
        done.diverged += [(run.run_id, *line[len(DIVERGED):].split(": ", 1))
                          for line in outcome.stopped if line.startswith(DIVERGED)]
    return done


def sampled_streams(directory: Path, runs: list[ReplayedRun], n: int,
                    seed: int) -> tuple[set[str], int]:
    """`n` of the directory's streams (those it holds records of), chosen with `seed`, and
    the streams that prepared what they loaded; and how many streams there were."""
    stream_of = {key: stream for run in runs for key, stream in run.streams.items()}
    records = deduplicate(read_directory(directory))
    recorded = sorted({stream_of[r.key] for r in records if r.key in stream_of})
    chosen = set(random.Random(seed).sample(recorded, min(n, len(recorded))))
    return chosen | _preparers(records, stream_of, chosen), len(recorded)


def _preparers(records: list[EpisodeRecord], stream_of: dict[RecordKey, str],
               chosen: set[str]) -> set[str]:
    """The streams that made the prepared artifacts the chosen streams loaded (a loaded
    preparation is charged to its maker's first record, so both are replayed)."""
    made: dict[str, str] = {}
    loaded: dict[str, set[str]] = {}
    for record in records:
        note = record.extra.get("prepared")
        stream = stream_of.get(record.key)
        if not isinstance(note, dict) or stream is None:
            continue
        if note.get("reused") is False:
            made.setdefault(str(note.get("key")), stream)
        else:
            loaded.setdefault(stream, set()).add(str(note.get("key")))
    return {made[key] for stream in chosen for key in loaded.get(stream, ()) if key in made}
