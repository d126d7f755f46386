"""The results directory, written by exactly one process.

Layout of OUT:
    episodes.jsonl            one EpisodeRecord per line, appended at once (a killed run
                              loses none), fsync'd at most every SYNC_EVERY_S and at close
    manifest.json             one entry per invocation: spec, versions, git revision, platform
    trajectories/<stream>.jsonl   actions and observations of every episode of a stream
    state/<stream>/<pos>.json     a lifelong method's memory after the episode at <pos>
    contexts.jsonl, contexts/ instance contexts (see lifebench.store.contexts)
    answers.sqlite            every answer the run's LLM calls used, by request key, and the
                              server's token counts (see lifebench.llm.answers): what
                              `lifebench verify` replays the run from
    .lock                     held (flock) by the process writing OUT

Commit order for an episode: trajectory, then state, then the record. The record is the
commit point: on resume, a state or trajectory newer than the last record is ignored.

A write that fails (a full disk, a file-size limit, a read-only directory) is a
`ResultsWriteError` naming the file and the cause: the run stops there, nothing is recorded
as a method's or an environment's failure, and a resume after the cause is fixed repairs
torn lines (records and trajectories) and completes the run.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Optional

from lifebench.api.errors import UserError
from lifebench.api.records import EpisodeRecord, EpisodeTrajectory, RunManifest
from lifebench.api.untrusted import Unreadable, parse_json
from lifebench.store.contexts import ContextStore
from lifebench.store.files import ResultsWriteError, atomic_write
from lifebench.store.prepared import PreparedStore
from lifebench.store.aside import keep_readable
from lifebench.store.records_file import EPISODES_FILE, RecordsFile, read_records_file

PARTIAL_SUFFIX = ".torn"
MANIFEST_FILE = "manifest.json"
TRAJECTORIES_DIR = "trajectories"
ANSWERS_FILE = "answers.sqlite"
SYNC_EVERY_S = 0.05
# Files this package wrote, read back: bounded for memory's sake, far above what any run
# writes (a manifest entry is a few kB; InstructRAG's state ~100 MB on ScienceWorld).
MAX_MANIFEST_CHARS = 64 * 2**20
MAX_STATE_CHARS = 2 * 2**30


def read_manifest_runs(directory: Path) -> list[dict[str, Any]]:
    """The entries of `directory/manifest.json` ([] when there is none). A file that is not
    a manifest (corrupt, hand-edited, hostile) is Unreadable, a ValueError naming why."""
    path = directory / MANIFEST_FILE
    if not path.exists():
        return []
    runs = parse_json(path.read_bytes(), MAX_MANIFEST_CHARS)
    runs = runs.get("runs", []) if isinstance(runs, dict) else None
    if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
        raise Unreadable("its `runs` is not a list of entries")
    return runs


class ResultsStore:
    def __init__(self, out: str | Path) -> None:
        self.out = Path(out)
        self.episodes_path = self.out / EPISODES_FILE
        self._lock_fd: Optional[int] = None
        self._episodes_fd: Optional[int] = None
        self._synced = 0.0  # time.monotonic() of the last fsync of episodes.jsonl
        self._unsynced = False
        self._trajectory_files: dict[str, Any] = {}
        self.contexts = ContextStore(self.out)
        self.prepared = PreparedStore(self.out)

    # ------------------------------------------------------------ lifecycle
    def open(self) -> RecordsFile:
        """Take the lock, set aside torn final lines, and return what is recorded."""
        try:
            self.out.mkdir(parents=True, exist_ok=True)
            self._acquire_lock()
            existing = read_records_file(self.episodes_path)
            if existing.torn_tail or existing.unterminated:
                self._repair_tail(existing)
            self._repair_trajectories()
            self._episodes_fd = os.open(self.episodes_path,
                                        os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            self.close()
            raise UserError(f"cannot use {exc.filename or self.out} as the results directory: "
                            f"{exc.strerror or type(exc).__name__}; choose another --out or "
                            f"fix its permissions") from None
        return existing

    def close(self) -> None:
        for f in self._trajectory_files.values():
            try:
                f.close()
            except OSError:  # its last write failed (and was reported): a torn line at most
                pass
        self._trajectory_files.clear()
        if self._episodes_fd is not None:
            try:
                if self._unsynced:
                    os.fsync(self._episodes_fd)
            finally:
                os.close(self._episodes_fd)
                self._episodes_fd = None
                self._unsynced = False
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = None

    def __enter__(self) -> "ResultsStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _acquire_lock(self) -> None:
        path = self.out / ".lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise UserError(f"{self.out} is being written by another lifebench process "
                                f"(pid {holder}); wait for it to finish or use another --out") from None
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._lock_fd = fd

    def _repair_tail(self, existing: RecordsFile) -> None:
        """A crash mid-write can leave a final line without its newline. A complete record
        gets its newline; a torn fragment moves to episodes.jsonl.torn (nothing is lost)."""
        with open(self.episodes_path, "rb+") as f:
            data = f.read()
            cut = data.rfind(b"\n") + 1
            if existing.unterminated:
                f.seek(0, os.SEEK_END)
                f.write(b"\n")
            else:
                with open(str(self.episodes_path) + PARTIAL_SUFFIX, "ab") as torn:
                    torn.write(data[cut:] + b"\n")
                    torn.flush()
                    os.fsync(torn.fileno())
                f.truncate(cut)
            f.flush()
            os.fsync(f.fileno())

    def _repair_trajectories(self) -> None:
        """A trajectory line cut short (a write that failed, a kill) is dropped: its
        episode's record was never written (records come last), so it will be played again."""
        directory = self.out / TRAJECTORIES_DIR
        for path in sorted(directory.glob("*.jsonl")) if directory.is_dir() else []:
            size = path.stat().st_size
            if not size:
                continue
            with open(path, "rb+") as f:
                f.seek(size - 1)
                if f.read(1) == b"\n":
                    continue
                f.seek(0)
                f.truncate(f.read().rfind(b"\n") + 1)
                f.flush()
                os.fsync(f.fileno())

    # ------------------------------------------------------------ writes
    def append_record(self, record: EpisodeRecord, line: Optional[str] = None) -> None:
        """Append `record` (as `line`, its JSON, when already made)."""
        assert self._episodes_fd is not None, "open() the store first"
        line = ((line or record.to_json()) + "\n").encode()
        written = os.write(self._episodes_fd, line)
        while written < len(line):  # os.write may be partial on signals
            written += os.write(self._episodes_fd, line[written:])
        # Written is kept, whatever happens to this process; the fsync (against a power
        # cut) is grouped: one per episode took the disk's time at hundreds of streams.
        now = time.monotonic()
        if now - self._synced >= SYNC_EVERY_S:
            os.fsync(self._episodes_fd)
            self._synced, self._unsynced = now, False
        else:
            self._unsynced = True

    def append_trajectory(self, stream_id: str, trajectory: EpisodeTrajectory) -> None:
        f = self._trajectory_files.get(stream_id)
        if f is None:
            directory = self.out / TRAJECTORIES_DIR
            directory.mkdir(exist_ok=True)
            f = self._trajectory_files[stream_id] = open(directory / f"{stream_id}.jsonl", "a")
        f.write(json.dumps(trajectory.to_dict(), separators=(",", ":")) + "\n")
        f.flush()

    def state_path(self, stream_id: str, position: int) -> Path:
        return self.out / "state" / stream_id / f"{position}.json"

    def write_state(self, stream_id: str, position: int, payload: dict[str, Any]) -> None:
        path = self.state_path(stream_id, position)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(payload, sort_keys=True))

    def read_state(self, stream_id: str, position: int) -> Optional[dict[str, Any]]:
        path = self.state_path(stream_id, position)
        if not path.exists():
            return None
        try:
            return parse_json(path.read_bytes(), MAX_STATE_CHARS)
        except ValueError:
            raise UserError(f"saved method state {path} is corrupt; delete "
                            f"{path.parent} and the stream's records to rerun it") from None

    def prune_states(self, stream_id: str, keep: int) -> None:
        """Drop saved states other than the one at position `keep`."""
        directory = self.out / "state" / stream_id
        if not directory.is_dir():
            return
        for path in directory.glob("*.json"):
            if path.stem != str(keep):
                path.unlink(missing_ok=True)

    def commit(self, stream_id: str, record: EpisodeRecord,
               trajectory: Optional[EpisodeTrajectory], state: Optional[dict]) -> None:
        """Persist one finished (or failed) episode, record last. Raises
        ResultsWriteError when a file cannot be written."""
        path = self.out / TRAJECTORIES_DIR / f"{stream_id}.jsonl"
        try:
            if trajectory is not None:
                self.append_trajectory(stream_id, trajectory)
            path = self.state_path(stream_id, record.episode_index)
            if state is not None:
                self.write_state(stream_id, record.episode_index, state)
            path = self.episodes_path
            record, line = keep_readable(record, self.out, stream_id)
            self.append_record(record, line)
            if state is not None:
                path = self.state_path(stream_id, record.episode_index).parent
                self.prune_states(stream_id, keep=record.episode_index)
        except OSError as exc:
            raise ResultsWriteError(path, exc) from None

    # ------------------------------------------------------------ manifest
    def _manifest_runs(self) -> list[dict[str, Any]]:
        try:
            return read_manifest_runs(self.out)
        except ValueError as exc:
            # keep the unreadable file for inspection; start a new list beside it
            path = self.out / MANIFEST_FILE
            os.replace(path, path.with_name(MANIFEST_FILE + ".corrupt"))
            print(f"note: {path} is unreadable ({exc}): kept as {MANIFEST_FILE}.corrupt, "
                  f"and a new manifest starts beside it", file=sys.stderr)
            return []

    def last_manifest(self) -> Optional[RunManifest]:
        runs = self._manifest_runs()
        return RunManifest.from_dict(runs[-1]) if runs else None

    def amend_last_manifest(self, **fields: Any) -> None:
        """Set `fields` in the last manifest entry (what a run learned as it went)."""
        runs = self._manifest_runs()
        if not runs:
            return
        runs[-1].update(fields)
        self._write_manifest(runs)

    def add_manifest(self, manifest: RunManifest) -> None:
        runs = self._manifest_runs()
        runs.append(manifest.to_dict())
        self._write_manifest(runs)

    def _write_manifest(self, runs: list[dict[str, Any]]) -> None:
        try:
            atomic_write(self.out / MANIFEST_FILE,
                         json.dumps({"runs": runs}, indent=2, sort_keys=True, default=str))
        except OSError as exc:
            raise ResultsWriteError(self.out / MANIFEST_FILE, exc) from None
