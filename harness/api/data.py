"""Benchmark data that no package registry ships: where it lives, and what a benchmark
declares about it so that `lifebench data` can fetch and verify it.

Where: `data_home()`, which is `$LIFEBENCH_DATA` when it is set and not empty, else the
platform's per-user cache (`$XDG_CACHE_HOME/lifebench/data`, by default
`~/.cache/lifebench/data`; `~/Library/Caches/lifebench/data` on macOS). A benchmark's files
are in one folder there (`alfworld/`, `textworld/ige_cooking/`, `crafter/`), laid out as
their readers expect.

What: a benchmark's `remote_data()` returns a `RemoteData`: every file it needs, each with
its pinned sha256 and either its upstream URL or its name in an upstream archive. Readers
and `lifebench data` check files against these pins; a file whose bytes differ may still be
accepted by the benchmark's own `check` (ALFWorld: the same game without byte equality).
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional

try:
    import fcntl
except ImportError:  # not on Windows: no lock there
    fcntl = None  # type: ignore[assignment]

DATA_ENV = "LIFEBENCH_DATA"


def data_home() -> Path:
    """`$LIFEBENCH_DATA`, else the platform's per-user cache folder for lifebench's data."""
    chosen = os.environ.get(DATA_ENV)
    if chosen:
        return Path(chosen).expanduser()
    return user_cache() / "data"


CACHE_ENV = "LIFEBENCH_CACHE"


def user_cache() -> Path:
    """lifebench's cache folder: `$LIFEBENCH_CACHE`, else the platform's per-user one
    (`~/.cache/lifebench` on Linux, under `$XDG_CACHE_HOME` when set)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    if sys.platform == "darwin":
        cache = Path("~/Library/Caches").expanduser()
    elif sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        cache = Path(os.environ["LOCALAPPDATA"])
    else:
        cache = Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser()
    return cache / "lifebench"


@contextlib.contextmanager
def exclusive(lock_file: Path) -> Iterator[None]:
    """The block runs while this process holds `lock_file` (made if missing): other
    processes asking for it wait, as do its other threads. A holder that dies releases it
    (flock), so a stale lock file blocks nobody. For what is made once into the data home
    or the cache: check, lock, check again, make."""
    with open(lock_file, "a") as handle:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(handle, fcntl.LOCK_UN)


def fetch_command(benchmark: str, force: bool = False) -> str:
    """The command that gets a benchmark's data."""
    return f"lifebench data fetch {benchmark}" + (" --force" if force else "")


@dataclass(frozen=True)
class Upstream:
    """Where files come from, and how far that was checked when they were pinned."""
    name: str       # "the Intelligent Go-Explore repository at commit 99c0aef"
    checked: bool   # the URL was fetched and its bytes hashed when the pins were made
    note: str       # what was and was not checked


@dataclass(frozen=True)
class DataFile:
    """One file a benchmark needs: where it goes (`target`, relative to the benchmark's data
    folder), its pinned sha256, and where it comes from: `url`, or `member` of the
    benchmark's archive."""
    target: str
    sha256: str
    url: Optional[str] = None
    member: Optional[str] = None
    # A hash of the file's content that the benchmark also accepts (its `check` computes
    # it): ALFWorld's game hash, over the game's domain, problem and grammar.
    content_sha256: Optional[str] = None

    def __post_init__(self) -> None:
        if (self.url is None) == (self.member is None):
            raise ValueError(f"{self.target}: give a DataFile either a url or an archive member")


@dataclass(frozen=True)
class DataArchive:
    """An upstream zip archive holding some of the files (only those are unpacked)."""
    url: str
    sha256: Optional[str]  # None: could not be pinned (the upstream's note says why)
    max_bytes: int         # a download past this is refused


# A benchmark's check of a file whose bytes are not the pinned ones: None accepts it (the
# same content), else the problem in a few words ("has no walkthrough"); files with the
# same problem are named together in one line.
ContentCheck = Callable[[DataFile, bytes], Optional[str]]


@dataclass(frozen=True)
class RemoteData:
    """What a benchmark needs from outside the package registries, for `lifebench data`."""
    benchmark: str
    folder: str                        # under data_home()
    what: str                          # "ALFWorld's 474 games", for one-line reports
    files: tuple[DataFile, ...]
    upstream: Upstream
    archive: Optional[DataArchive] = None
    # Other folders the benchmark's readers look in, after data_home()/folder, in order
    # (upstream caches, `$ALFWORLD_DATA`, ...).
    also_read_from: tuple[Path, ...] = ()
    # True: the benchmark runs without these files (only a report needs them).
    optional: bool = False
    check: Optional[ContentCheck] = None
    max_file_bytes: int = 64 << 20  # a file (or archive member) past this is refused

    @property
    def home(self) -> Path:
        return data_home() / self.folder

    def locations(self) -> list[Path]:
        """Where readers look, in order: the data home's folder first."""
        return list(dict.fromkeys([self.home, *self.also_read_from]))
