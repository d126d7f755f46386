"""A SQLite cache of LLM responses, keyed on everything that shapes an answer.

The key is the sha256 of the request as sent (model, base URL, messages, tools, sampling
parameters, seed) plus the stream's seed and the sample index: the streams of two seeds,
and repeated samples of one prompt, are independent answers, while re-running the same
seed replays.
The API key is never part of it, nor stored. Modes: `rw` (read, and write what is new),
`replay` (a miss is an error: exact reproduction, CI), `off`. Safe under concurrent
workers: WAL journal, a busy timeout, one connection per thread, insert-or-ignore.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Optional

from lifebench.api.errors import UserError

MODES = ("rw", "replay", "off")
DEFAULT_PATH = Path("results") / "llm-cache.sqlite"
LOCK_TIMEOUT_S = 60


def request_key(request: dict[str, Any], sample: int, stream_seed: Optional[int] = None) -> str:
    blob = json.dumps({"request": request, "sample": sample, "stream_seed": stream_seed},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


class ResponseCache:
    def __init__(self, path: Path | str, mode: str = "rw") -> None:
        if mode not in MODES:
            raise UserError(f"unknown cache mode {mode!r}; choose from: {', '.join(MODES)}")
        self.path = Path(path)
        self.mode = mode
        self._local = threading.local()
        self.hits = 0
        self.misses = 0
        if mode != "off":
            self._connection()  # create the file and table now: errors surface early

    def _connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                conn = sqlite3.connect(self.path, timeout=LOCK_TIMEOUT_S)
                self._set_up(conn)
            except sqlite3.DatabaseError as exc:
                raise UserError(f"LLM cache {self.path} is unusable ({exc}); delete it or "
                                f"clear it with `lifebench cache clear`") from None
            self._local.conn = conn
        return conn

    @staticmethod
    def _set_up(conn: sqlite3.Connection) -> None:
        # Switching a new file to WAL does not wait on SQLite's busy handler: workers that
        # open one fresh cache together get "database is locked" at once, so retry here.
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        delay = 0.01
        while True:
            try:
                if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, "
                             "model TEXT, created REAL, response TEXT NOT NULL)")
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

    def get(self, key: str) -> Optional[dict[str, Any]]:
        if self.mode == "off":
            return None
        row = self._connection().execute("SELECT response FROM responses WHERE key = ?",
                                         (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return json.loads(row[0])

    def put(self, key: str, model: str, response: dict[str, Any]) -> None:
        if self.mode != "rw":
            return
        conn = self._connection()
        conn.execute("INSERT OR IGNORE INTO responses (key, model, created, response) "
                     "VALUES (?, ?, ?, ?)", (key, model, time.time(), json.dumps(response)))
        conn.commit()

    def stats(self) -> dict[str, Any]:
        conn = self._connection()
        entries, models = conn.execute(
            "SELECT COUNT(*), COUNT(DISTINCT model) FROM responses").fetchone()
        return {"path": str(self.path), "entries": entries, "models": models,
                "bytes": self.path.stat().st_size if self.path.exists() else 0}

    def clear(self) -> int:
        conn = self._connection()
        removed = conn.execute("DELETE FROM responses").rowcount
        conn.commit()
        conn.execute("VACUUM")
        return removed
