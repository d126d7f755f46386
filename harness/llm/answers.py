"""The answers a run's LLM calls used, kept in its results directory (`answers.sqlite`)
whatever `--cache` says, so that `lifebench verify` can replay the run offline.

An answer is kept where it was used: under its episode's scope (`<stream>/<position>`, or
`context/<key>` for an instance context's build), its request's cache key (`body_and_key`:
the body as sent, the base URL, the stream's seed and the sample index) and its occurrence
(the n-th time that scope sent that key). Nothing is reused from here while a run runs:
`--cache off` still asks the endpoint every time, and two streams (or two steps) that send
one body get what each got, even from a server whose answers differ by what they are for.
A replay (`LLMConfig.replay_answers`) gives the n-th request of a key in a scope the n-th
answer kept there. Each distinct answer is stored once (zlib-compressed, by its SHA-256):
a completion's JSON as received, or what a call ended with when it had none that a replay
must meet again: a reply that could not be read (`malformed`: its problem), a prompt the
endpoint refused as over the context window (`refused`: its status and line). Beside them,
the server's token counts of texts (`/tokenize`), by a digest of base URL, model and text.

A client keeps an episode's answers in memory until the episode is done: they are written
before its record goes to the writer, or dropped with a failed attempt (its retry asks
again, and its answers take the same places). One connection per file and process.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import sqlite3
import threading
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from lifebench.api.errors import UserError
from lifebench.llm.cache import LOCK_TIMEOUT_S, PerProcess, _file_id, open_shared

COMPLETION, MALFORMED, REFUSED = "completion", "malformed", "refused"
KINDS = (COMPLETION, MALFORMED, REFUSED)
_TABLES = (
    "CREATE TABLE IF NOT EXISTS scopes (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL)",
    "CREATE TABLE IF NOT EXISTS contents (id INTEGER PRIMARY KEY, digest BLOB UNIQUE NOT NULL, "
    "model TEXT, kind TEXT NOT NULL, status INTEGER, answer BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS answers (scope INTEGER NOT NULL, key BLOB NOT NULL, "
    "n INTEGER NOT NULL, content INTEGER NOT NULL, PRIMARY KEY (scope, key, n)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS token_counts (key TEXT PRIMARY KEY, tokens INTEGER NOT NULL)",
)


@dataclass(frozen=True)
class Answer:
    """What one request got: a completion's JSON as received, or why there was none."""

    kind: str  # COMPLETION, MALFORMED or REFUSED
    text: str  # the completion's JSON; MALFORMED: the problem; REFUSED: the refusal's line
    status: int = 0  # REFUSED: the HTTP status


@dataclass(frozen=True)
class Used:
    """One answer a call used, not yet written."""

    scope: str
    key: str
    model: str
    answer: Answer


def count_key(base_url: str, model: str, text: str) -> str:
    """The key of a server's token count of `text` (a lone surrogate is escaped by json)."""
    return hashlib.sha256(json.dumps([base_url, model, text]).encode()).hexdigest()


def _key_bytes(key: str) -> bytes:
    try:
        return bytes.fromhex(key)
    except ValueError:  # not a key of ours: kept as text
        return key.encode()


class _AnswersFile:
    """One answers file's connection in this process, under a lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.conn = open_shared(path, _TABLES, "the answers file {path} is unusable ({exc}); it "
                                "belongs to its results directory: restore it, or use a new --out")
        self.identity = _file_id(path)

    def find(self, scope: str, key: str, n: int) -> Optional[Answer]:
        with self.lock:
            row = self.conn.execute(
                "SELECT c.kind, c.status, c.answer FROM answers a JOIN scopes s ON a.scope = s.id "
                "JOIN contents c ON a.content = c.id WHERE s.name = ? AND a.key = ? AND a.n = ?",
                (scope, _key_bytes(key), n)).fetchone()
        return _decoded(*row) if row else None

    def count(self, key: str) -> Optional[int]:
        with self.lock:
            found = self.conn.execute("SELECT tokens FROM token_counts WHERE key = ?",
                                      (key,)).fetchone()
        return found[0] if found and isinstance(found[0], int) else None

    def put_count(self, key: str, tokens: int) -> None:
        with self.lock:
            self.conn.execute("INSERT OR IGNORE INTO token_counts (key, tokens) VALUES (?, ?)",
                              (key, tokens))
            self.conn.commit()

    def write(self, used: list[Used]) -> None:
        """Keep `used`, in order (each takes the next occurrence of its scope and key), in
        one transaction."""
        with self.lock:
            conn = self.conn
            for item in used:
                scope = self._id("scopes", "name", item.scope)
                text = item.answer.text.encode("utf-8", "surrogatepass")
                digest = hashlib.sha256(f"{item.answer.kind}\n{item.answer.status}\n".encode()
                                        + text).digest()
                content = conn.execute("SELECT id FROM contents WHERE digest = ?", (digest,)).fetchone()
                content = content[0] if content else conn.execute(
                    "INSERT INTO contents (digest, model, kind, status, answer) VALUES (?, ?, ?, ?, ?)",
                    (digest, item.model, item.answer.kind, item.answer.status,
                     zlib.compress(text, 9))).lastrowid
                key = _key_bytes(item.key)
                n = conn.execute("SELECT COALESCE(MAX(n) + 1, 0) FROM answers WHERE scope = ? "
                                 "AND key = ?", (scope, key)).fetchone()[0]
                conn.execute("INSERT INTO answers (scope, key, n, content) VALUES (?, ?, ?, ?)",
                             (scope, key, n, content))
            conn.commit()

    def _id(self, table: str, column: str, value: str) -> int:
        found = self.conn.execute(f"SELECT id FROM {table} WHERE {column} = ?", (value,)).fetchone()
        return found[0] if found else self.conn.execute(
            f"INSERT INTO {table} ({column}) VALUES (?)", (value,)).lastrowid


def _decoded(kind: str, status: Optional[int], blob: bytes) -> Answer:
    try:
        text = zlib.decompress(blob).decode("utf-8", "surrogatepass")
    except (zlib.error, TypeError, UnicodeDecodeError):
        raise UserError("an answer in the answers file is damaged (not zlib-compressed text); "
                        "restore the file") from None
    if kind not in KINDS:
        raise UserError(f"an answer in the answers file is of unknown kind {kind!r}; restore "
                        f"the file")
    return Answer(kind, text, int(status or 0))


_files: PerProcess[_AnswersFile] = PerProcess(_AnswersFile)
_answers_file = _files.get


class RunAnswers:
    """A results directory's answers as one LLM client keeps them (`path`) and, in a replay,
    finds them (`replayed`: the answers of the run it replays)."""

    def __init__(self, path: Optional[Path | str], replayed: Optional[Path | str] = None) -> None:
        self.path = Path(path) if path else None
        self._file = _answers_file(self.path) if self.path else None
        self._replayed = _answers_file(Path(replayed)) if replayed else None
        self._pending: list[Used] = []
        self._found: Counter = Counter()  # (scope, key) -> answers found so far, written
        self._found_pending: Counter = Counter()  # ... and in the episode in flight

    @property
    def replays(self) -> bool:
        return self._replayed is not None

    def find(self, scope: str, key: str) -> Optional[Answer]:
        """In a replay: the answer the replayed run's call of `key` got at this occurrence."""
        if self._replayed is None:
            return None
        n = self._found[(scope, key)] + self._found_pending[(scope, key)]
        found = self._replayed.find(scope, key, n)
        if found is not None:
            self._found_pending[(scope, key)] += 1
        return found

    def keep(self, scope: str, key: str, model: str, answer: Answer) -> None:
        self._pending.append(Used(scope, key, model, answer))

    def take_pending(self) -> list[Used]:
        """What was used and not yet written, taken (a preparation job's answers, which its
        stream's client keeps in their place: `add_pending`)."""
        used, self._pending = self._pending, []
        return used

    def add_pending(self, used: list[Used]) -> None:
        """Keep `used` (another client's `take_pending`) after what this one used so far."""
        self._pending.extend(used)

    def flush(self) -> None:
        """Write what the episode used (before its record is sent)."""
        self._found.update(self._found_pending)
        self._found_pending.clear()
        used, self._pending = self._pending, []
        if self._file is not None and used:
            self._file.write(used)

    def drop(self) -> None:
        """Forget what a failed attempt used: its retry asks again."""
        self._pending.clear()
        self._found_pending.clear()


def kept_count(path: Optional[str], replayed: Optional[str], key: str) -> Optional[int]:
    """A server's token count kept in a run's answers (in a replay: the replayed run's).
    By path, not by a client's object: the process's token counter serves every stream."""
    source = replayed or path
    return _answers_file(Path(source)).count(key) if source else None


def keep_count(path: Optional[str], key: str, tokens: int) -> None:
    """Keep a server's token count at once, before any record that it shaped."""
    if path:
        _answers_file(Path(path)).put_count(key, tokens)


def close(path: Path | str) -> None:
    """Close this process's connection to `path` and leave the file whole on its own (no
    WAL beside it): what a submission or a copy takes."""
    name = os.path.abspath(path)
    found = _files.pop(Path(name))
    if found is not None:
        found.conn.close()
    if not Path(name).exists():
        return
    try:
        conn = sqlite3.connect(name, timeout=LOCK_TIMEOUT_S)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.execute("PRAGMA journal_mode=DELETE")
        finally:
            conn.close()
    except sqlite3.OperationalError:  # another process still has it open: it stays in WAL
        pass


@atexit.register
def _close_at_exit() -> None:
    for answers_file in _files.all():
        try:
            answers_file.conn.close()
        except sqlite3.Error:
            pass


@dataclass(frozen=True)
class AnswersSummary:
    answers: int  # calls answered
    contents: int  # distinct answers stored
    token_counts: int
    bytes: int


def summary(path: Path | str) -> AnswersSummary:
    """What a file holds, and its size."""
    path = Path(path)
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=LOCK_TIMEOUT_S)
        try:
            numbers = [conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                       for table in ("answers", "contents", "token_counts")]
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise UserError(f"the answers file {path} is unreadable ({exc}); restore it") from None
    return AnswersSummary(*numbers, path.stat().st_size)


def copy(source: Path | str, target: Path | str) -> None:
    """A whole, compact copy of an answers file (what its WAL holds included)."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    try:
        src = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=LOCK_TIMEOUT_S)
        try:
            src.execute("VACUUM INTO ?", (str(target),))
        finally:
            src.close()
    except sqlite3.DatabaseError as exc:
        raise UserError(f"the answers file {source} is unreadable ({exc}); restore it") from None
