"""A SQLite cache of LLM responses, keyed on everything that shapes an answer.

The key is the sha256 of the request as sent (model, base URL, messages, tools, sampling
parameters, seed) plus the stream's seed and the sample index: the streams of two seeds,
and repeated samples of one prompt, are independent answers, while re-running the same
seed replays.
The API key is never part of it, nor stored. Modes: `rw` (read, and write what is new),
`replay` (a miss is an error: exact reproduction, CI), `off`. Safe under concurrent
workers: WAL journal, a busy timeout, insert-or-ignore; one connection per file and
process (its streams share it), answers written behind in batches without an fsync each.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import json.encoder
import os
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Generic, Optional, TypeVar

from lifebench.api.errors import UserError
from lifebench.api.untrusted import parse_json
from lifebench.llm.completion import completion_problem

MODES = ("rw", "replay", "off")
DEFAULT_PATH = Path("results") / "llm-cache.sqlite"
LOCK_TIMEOUT_S = 60
FLUSH_ROWS = 256
FLUSH_S = 1.0


def request_key(request: dict[str, Any], sample: int, stream_seed: Optional[int] = None) -> str:
    blob = json.dumps({"request": request, "sample": sample, "stream_seed": stream_seed},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def body_and_key(request: dict[str, Any], base_url: str, sample: int,
                 stream_seed: Optional[int] = None) -> tuple[bytes, str]:
    """The request's JSON body (keys sorted: servers do not mind) and its cache key, the
    same as `request_key` of the request with its base URL, from one serialisation."""
    body = _sorted_json(request).encode()
    if not request or min(request) <= "base_url":  # it would not sort first: the long way
        return body, request_key({**request, "base_url": base_url}, sample, stream_seed)
    # the key's blob is the body with the base URL first, inside the sample and the seed
    digest = hashlib.sha256(f'{{"request":{{"base_url":{_encode(base_url)},'.encode())
    digest.update(body[1:])
    digest.update(f',"sample":{_encode(sample)},"stream_seed":{_encode(stream_seed)}}}'.encode())
    return body, digest.hexdigest()


_encode = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode
_quote = json.encoder.encode_basestring  # a str as a JSON string, non-ASCII kept
# The JSON of recent plain messages: a stream sends its system prompt, examples and history
# again with every call, and their encoding was most of a request's cost.
_ENCODED: dict[tuple[str, str], str] = {}
_ENCODED_MAX = 16384


def _sorted_json(request: dict[str, Any]) -> str:
    """`_encode(request)`, each plain {role, content} message encoded once per process."""
    parts = []
    for name in sorted(request):
        value = request[name]
        if name == "messages" and type(value) is list:
            encoded = "[" + ",".join(map(_message_json, value)) + "]"
        else:
            encoded = _encode(value)
        parts.append(f"{_quote(name)}:{encoded}")
    return "{" + ",".join(parts) + "}"


def _message_json(message: Any) -> str:
    if type(message) is not dict or len(message) != 2:
        return _encode(message)
    role, content = message.get("role"), message.get("content")
    if type(role) is not str or type(content) is not str:
        return _encode(message)
    text = _ENCODED.get((role, content))
    if text is None:
        if len(_ENCODED) >= _ENCODED_MAX:
            _ENCODED.clear()
        text = _ENCODED[(role, content)] = f'{{"content":{_quote(content)},"role":{_quote(role)}}}'
    return text


class _CacheFile:
    """A cache file's one SQLite connection in this process, shared by every
    `ResponseCache` on it and their threads under a lock (a lookup is ~20 microseconds, far
    cheaper than a connection and its page cache per stream thread), and the answers
    written behind: one transaction per `FLUSH_ROWS` answers or `FLUSH_S` seconds (a commit
    costs ~130 microseconds; one per answer was a fifth of the harness's CPU per call at 256
    streams). This process reads pending answers from memory; others see them once flushed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.conn = open_shared(path, (_RESPONSES_TABLE,), "LLM cache {path} is unusable ({exc}); "
                                "delete it or clear it with `lifebench cache clear`")
        self.identity = _file_id(path)
        self.pending: dict[str, tuple[str, str, float, str]] = {}
        self.flushed = time.monotonic()
        self.known: Optional[_KeyFilter] = None  # read at the first lookup
        self.known_upto = 0  # the last row (rowid) the filter has read
        self.warned = False  # an unreadable row has been said on stderr

    def warn_unreadable(self, problem: str) -> None:
        with self.lock:
            if self.warned:
                return
            self.warned = True
        print(f"lifebench: warning: {self.path}: a cached response is unreadable ({problem}); "
              f"it is asked again (`lifebench cache stats` counts such rows, `lifebench cache "
              f"clear` empties the file)", file=sys.stderr)

    def get(self, key: str) -> Optional[str]:
        with self.lock:
            pending = self.pending.get(key)
            if pending is not None:
                return pending[3]
            if self.known is None:
                self.known, self.known_upto = _KeyFilter.of(self.conn)
            if not self.known.may_hold(key):
                return None
            row = self.conn.execute("SELECT response FROM responses WHERE key = ?",
                                    (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, model: str, text: str) -> None:
        with self.lock:
            if self.known is not None:
                self.known.add(key)
            self.pending.setdefault(key, (key, model, time.time(), text))
            if len(self.pending) >= FLUSH_ROWS or time.monotonic() - self.flushed >= FLUSH_S:
                self._flush_locked()

    def flush(self) -> None:
        with self.lock:
            self._flush_locked()

    def refresh(self) -> None:
        """Add the keys other processes wrote since the filter last read the file (a
        preparation's jobs: each finds what the jobs before it cached, wherever they ran)."""
        with self.lock:
            if self.known is None:
                return
            for rowid, key in self.conn.execute("SELECT rowid, key FROM responses WHERE rowid > ?",
                                                (self.known_upto,)):
                self.known_upto = max(self.known_upto, rowid)
                if isinstance(key, str):
                    self.known.add(key)

    def _flush_locked(self) -> None:
        self.flushed = time.monotonic()
        if not self.pending:
            return
        rows, self.pending = list(self.pending.values()), {}
        self.conn.executemany("INSERT OR IGNORE INTO responses (key, model, created, response) "
                              "VALUES (?, ?, ?, ?)", rows)
        self.conn.commit()


class _KeyFilter:
    """A Bloom filter of the keys in the file when this process first looked one up, and of
    those it added since: a new request (every call of a fresh run) is known to be a miss
    without a query. Keys another process adds later are not in it: such a request is asked
    again, and its answer kept once (insert-or-ignore). About 2 bytes a key, 1% false
    positives (they are queried)."""

    def __init__(self, capacity: int) -> None:
        bits = 1 << max(23, (16 * capacity).bit_length())
        self.mask = bits - 1
        self.array = bytearray(bits >> 3)

    @classmethod
    def of(cls, conn: sqlite3.Connection) -> tuple["_KeyFilter", int]:
        """The filter of the file's keys, and the last row it read."""
        found, upto = cls(conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]), 0
        for rowid, key in conn.execute("SELECT rowid, key FROM responses"):
            upto = max(upto, rowid)
            if isinstance(key, str):  # a NULL or binary key (a damaged file) matches no request
                found.add(key)
        return found, upto

    def _positions(self, key: str) -> Optional[tuple[int, ...]]:
        try:  # keys are sha256 in hex: three disjoint 64-bit slices are three hashes
            return tuple(int(key[i:i + 16], 16) & self.mask for i in (0, 16, 32))
        except ValueError:
            return None

    def add(self, key: str) -> None:
        for position in self._positions(key) or ():
            self.array[position >> 3] |= 1 << (position & 7)

    def may_hold(self, key: str) -> bool:
        positions = self._positions(key)
        if positions is None:  # not a key of ours (too short, not hex): ask the file
            return True
        return all(self.array[p >> 3] >> (p & 7) & 1 for p in positions)


FileT = TypeVar("FileT")


class PerProcess(Generic[FileT]):
    """This process's one object per file (its connection and what waits to be written),
    made by `make(path)`; a new one when the file was deleted or replaced since (`lifebench
    cache clear` in another process, a test's new directory). Objects have an `identity`."""

    def __init__(self, make: Callable[[Path], FileT]) -> None:
        self.make = make
        self.lock = threading.Lock()
        self.files: dict[str, FileT] = {}

    def get(self, path: Path) -> FileT:
        name = os.path.abspath(path)
        with self.lock:
            found = self.files.get(name)
            if found is None or _file_id(path) != found.identity:  # type: ignore[attr-defined]
                found = self.files[name] = self.make(Path(name))
            return found

    def pop(self, path: Path) -> Optional[FileT]:
        with self.lock:
            return self.files.pop(os.path.abspath(path), None)

    def all(self) -> list[FileT]:
        with self.lock:
            return list(self.files.values())


_files: PerProcess[_CacheFile] = PerProcess(_CacheFile)


def _cache_file(path: Path) -> _CacheFile:
    return _files.get(path)


def flush_all() -> None:
    """Write every answer this process holds pending (the runner calls it at the end of a
    run, of a worker and of a Ray task)."""
    for cache_file in _files.all():
        cache_file.flush()


def refresh_all() -> None:
    """See the answers other processes have written since (`_CacheFile.refresh`)."""
    for cache_file in _files.all():
        cache_file.refresh()


@atexit.register
def _flush_at_exit() -> None:
    try:
        flush_all()
    except (sqlite3.Error, OSError):  # a cache directory removed before exit: nothing to keep
        pass


def _file_id(path: Path) -> Optional[tuple[int, int]]:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


_RESPONSES_TABLE = ("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, "
                    "model TEXT, created REAL, response TEXT NOT NULL)")


def open_shared(path: Path, tables: tuple[str, ...], unusable: str) -> sqlite3.Connection:
    """A connection to a file several worker processes write (the response cache, a run's
    answers), with `tables`; `unusable` ({path}, {exc}): the UserError when it cannot be."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(path, timeout=LOCK_TIMEOUT_S, check_same_thread=False)
        _set_up(conn, tables)
        # WAL without an fsync per commit: a power cut may lose the last answers (they are
        # asked again), never corrupt the file
        conn.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.DatabaseError as exc:
        raise UserError(unusable.format(path=path, exc=exc)) from None
    return conn


def _set_up(conn: sqlite3.Connection, tables: tuple[str, ...] = (_RESPONSES_TABLE,)) -> None:
    """WAL and `tables` (CREATE TABLE IF NOT EXISTS statements) in a file several worker
    processes may open at once (the response cache, a run's answers file)."""
    # Switching a new file to WAL does not wait on SQLite's busy handler: workers that open
    # one fresh cache together get "database is locked" at once, so retry here.
    deadline = time.monotonic() + LOCK_TIMEOUT_S
    delay = 0.01
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            for table in tables:
                conn.execute(table)
            conn.commit()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if time.monotonic() > deadline:
                raise
            conn.rollback()
            time.sleep(delay)
            delay = min(delay * 2, 0.5)


def _read_row(text: Any) -> tuple[Optional[dict[str, Any]], Optional[str]]:
    """A cached row's completion, or what makes it unreadable."""
    if not isinstance(text, (str, bytes)):
        return None, "its response is not text"
    try:
        response = parse_json(text, max_chars=len(text))
    except ValueError:
        return None, "its response is not JSON"
    problem = completion_problem(response)
    return (None, problem) if problem else (response, None)


class ResponseCache:
    """The LLM cache in one mode; every object on one file shares its `_CacheFile`."""

    def __init__(self, path: Path | str, mode: str = "rw") -> None:
        if mode not in MODES:
            raise UserError(f"unknown cache mode {mode!r}; choose from: {', '.join(MODES)}")
        self.path = Path(path)
        self.mode = mode
        self.hits = 0
        self.misses = 0
        # made now (when not off): an unusable file is an error before any call
        self._file = _cache_file(self.path) if mode != "off" else None

    def get(self, key: str) -> Optional[dict[str, Any]]:
        """The cached completion of `key`; None (a miss) when there is none, or when its row
        cannot be read as one (said once per file on stderr, and counted by `stats`)."""
        if self._file is None:
            return None
        text = self._file.get(key)
        response, problem = (None, None) if text is None else _read_row(text)
        if problem:
            self._file.warn_unreadable(problem)
        if response is None:
            self.misses += 1
            return None
        self.hits += 1
        return response

    def put(self, key: str, model: str, response: dict[str, Any],
            text: Optional[str] = None) -> None:
        """Keep `response`; `text`, when given, is its JSON as received (not encoded again)."""
        if self.mode == "rw" and self._file is not None:
            self._file.put(key, model, json.dumps(response) if text is None else text)

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def _current(self) -> _CacheFile:
        cache_file = _cache_file(self.path)
        cache_file.flush()
        return cache_file

    def stats(self) -> dict[str, Any]:
        cache_file = self._current()
        with cache_file.lock:
            entries, models = cache_file.conn.execute(
                "SELECT COUNT(*), COUNT(DISTINCT model) FROM responses").fetchone()
            unreadable = sum(1 for key, text in cache_file.conn.execute(
                "SELECT key, response FROM responses") if not isinstance(key, str) or _read_row(text)[1])
        return {"path": str(self.path), "entries": entries, "models": models,
                "unreadable": unreadable,
                "bytes": self.path.stat().st_size if self.path.exists() else 0}

    def clear(self) -> int:
        cache_file = self._current()
        with cache_file.lock:
            removed = cache_file.conn.execute("DELETE FROM responses").rowcount
            cache_file.conn.commit()
            cache_file.conn.execute("VACUUM")
        return removed
