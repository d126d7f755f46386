"""Sentence vectors kept on disk, shared by every process of a machine (`lifebench.embeddings`).

A worker embeds the same texts as every other process on the same benchmark: Plancraft's
~700 valid actions and ScienceWorld's thousands cost 5-30 s of numpy per process, and a
run starts a process per worker, a test suite hundreds. The vectors are kept here, one file
per model and machine, and any process reads what another computed.

A vector is a function of the text, the model's weights and the machine's arithmetic (the
BLAS kernel the CPU selects, its thread count): the file's name carries a digest of all of
them, so a vector read is the one this process would have computed, bit for bit, and a run
gives the same records with the store warm, cold or off.

Where: `$LIFEBENCH_EMBEDDING_CACHE` (a folder; `off` turns it off), else the per-user cache
(`~/.cache/lifebench/embeddings`). At most `LIFEBENCH_EMBEDDING_CACHE_MB` (default 512) MiB
per file are read or written.

The file, from outside the process, is checked before use: a header naming the format and
the vectors' size; then records of a text's 16-byte BLAKE2b digest and its float32 vector;
a record whose vector is not finite and of norm 1 is skipped, a cut last record (a process
killed mid-write) is cut off before the next append, a file with another header is set
aside and started again. Appends hold an exclusive lock, so concurrent processes add whole
records. Anything unusable (a read-only folder, a full disk) turns the store off for the
process, said once on stderr; embeddings are then computed as without it.
"""

from __future__ import annotations

import hashlib
import os
import struct
import sys
from pathlib import Path
from typing import Iterable, Optional

import numpy as np

from lifebench.api.data import user_cache

STORE_ENV = "LIFEBENCH_EMBEDDING_CACHE"
STORE_MB_ENV = "LIFEBENCH_EMBEDDING_CACHE_MB"
DEFAULT_MB = 512
MAGIC = b"lifebench-vectors-1\n"
DIGEST = 16
NORM_TOLERANCE = 1e-3

try:
    import fcntl
except ImportError:  # Windows: no shared store
    fcntl = None


def store_folder() -> Optional[Path]:
    """Where the vectors are kept, or None when the store is off."""
    chosen = os.environ.get(STORE_ENV, "").strip()
    if chosen.lower() in ("off", "0", "none"):
        return None
    if fcntl is None:
        return None
    return Path(chosen).expanduser() if chosen else user_cache() / "embeddings"


def store_limit_bytes() -> int:
    text = os.environ.get(STORE_MB_ENV, "").strip()
    return int(float(text) * (1 << 20)) if text.replace(".", "", 1).isdigit() else DEFAULT_MB << 20


def text_digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=DIGEST).digest()


def machine_identity(threads: str) -> str:
    """What decides a forward pass's rounding here: numpy and its BLAS (library, version,
    the kernel it chose for this CPU), the BLAS thread count, and the CPU."""
    parts = [np.__version__, sys.platform, os.uname().machine if hasattr(os, "uname") else "", threads]
    try:
        from threadpoolctl import threadpool_info

        # numpy's own BLAS only: which other libraries are loaded (scipy's) varies by process
        parts += sorted(f"{i.get('internal_api')}:{i.get('version')}:{i.get('architecture')}"
                        for i in threadpool_info() if i.get("user_api") == "blas"
                        and "numpy" in str(i.get("filepath", "")))
    except ImportError:
        pass
    try:
        with open("/proc/cpuinfo", "rb") as f:
            cpu = f.read(1 << 20).split(b"\n\n")[0]
        parts += [line.decode("utf-8", "replace") for line in cpu.splitlines()
                  if line.startswith((b"model name", b"flags", b"vendor_id"))]
    except OSError:
        pass
    return "\n".join(parts)


class VectorStore:
    """One model's vectors on this machine: `get` what is kept, `put` what was computed."""

    def __init__(self, folder: Path, model: str, identity: str, dim: int,
                 limit_bytes: Optional[int] = None) -> None:
        digest = hashlib.blake2b(identity.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in model)[:64]
        self.path = folder / f"{safe}-{digest}.vectors"
        self.dim = dim
        self.header = MAGIC + struct.pack("<I", dim)
        self.record = DIGEST + 4 * dim
        self.limit = limit_bytes if limit_bytes is not None else store_limit_bytes()
        self.rows: dict[bytes, np.ndarray] = {}
        self.read_to = 0          # bytes of the file read so far
        self.off: Optional[str] = None
        self.skipped = 0          # records refused on reading
        self.found = 0            # vectors given from the file

    # reading -------------------------------------------------------------------------------

    def get(self, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """The kept vectors of those texts that have one (read-only arrays)."""
        texts = list(texts)
        if self.off or not texts:
            return {}
        self._read_more()
        found = {}
        for text in texts:
            vector = self.rows.get(text_digest(text))
            if vector is not None:
                found[text] = vector
        self.found += len(found)
        return found

    def _read_more(self) -> None:
        """Reads what was appended since the last read (by this or another process)."""
        try:
            with open(self.path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if self.read_to == 0:
                    if size < len(self.header):
                        return
                    if f.read(len(self.header)) != self.header:
                        self._set_aside("its header is not this format's")
                        return
                    self.read_to = len(self.header)
                end = min(size, self.limit)
                whole = (end - self.read_to) // self.record
                if whole <= 0:
                    return
                f.seek(self.read_to)
                data = f.read(whole * self.record)
        except FileNotFoundError:
            return
        except OSError as error:
            self._turn_off(f"cannot read {self.path} ({error})")
            return
        whole = len(data) // self.record
        self.read_to += whole * self.record
        raw = np.frombuffer(data, dtype=np.uint8, count=whole * self.record).reshape(whole, self.record)
        vectors = raw[:, DIGEST:].copy().view("<f4").astype(np.float32, copy=False)
        norms = np.linalg.norm(vectors.astype(np.float64), axis=1)
        good = np.isfinite(vectors).all(axis=1) & (np.abs(norms - 1) <= NORM_TOLERANCE)
        self.skipped += int((~good).sum())
        vectors.flags.writeable = False
        for i in np.flatnonzero(good):
            self.rows.setdefault(raw[i, :DIGEST].tobytes(), vectors[i])

    # writing -------------------------------------------------------------------------------

    def put(self, vectors: dict[str, np.ndarray]) -> None:
        """Keeps computed vectors (those of norm 1; whole records, under a lock)."""
        if self.off or not vectors:
            return
        records = []
        for text, vector in vectors.items():
            key = text_digest(text)
            if key in self.rows or vector.shape != (self.dim,):
                continue
            records.append(key + np.asarray(vector, dtype="<f4").tobytes())
        if not records:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                size = os.fstat(fd).st_size
                if size == 0:
                    os.write(fd, self.header)
                    size = len(self.header)
                elif size < len(self.header):
                    os.ftruncate(fd, 0)  # a header cut short: start again
                    os.write(fd, self.header)
                    size = len(self.header)
                cut = (size - len(self.header)) % self.record
                if cut:  # a record cut short by a killed writer: drop it, keep whole records
                    os.ftruncate(fd, size - cut)
                    size -= cut
                room = max(0, (self.limit - size) // self.record)
                data = b"".join(records[:room])
                while data:
                    written = os.write(fd, data)
                    data = data[written:]
            finally:
                os.close(fd)  # releases the lock
        except OSError as error:
            self._turn_off(f"cannot write {self.path} ({error})")
            return
        for text, vector in vectors.items():
            self.rows.setdefault(text_digest(text), vector)

    def _set_aside(self, why: str) -> None:
        aside = self.path.with_suffix(".unreadable")
        try:
            os.replace(self.path, aside)
        except OSError as error:
            self._turn_off(f"{self.path}: {why}, and it cannot be moved ({error})")
            return
        print(f"lifebench: the embedding cache {self.path}: {why}; moved to {aside.name}, "
              f"started again", file=sys.stderr)

    def _turn_off(self, why: str) -> None:
        self.off = why
        print(f"lifebench: the embedding cache is off for this process: {why} (set "
              f"{STORE_ENV} to a writable folder, or to off)", file=sys.stderr)
