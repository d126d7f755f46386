"""One URL to one file, bounded: a GET over lifebench's own transport (one deadline from
connect to last byte, the longest wait for the next bytes, a byte limit), redirects
followed a few times, the body streamed into a temporary file with its sha256 computed on
the way and a progress bar on stderr (a terminal only). Whatever goes wrong is one line
(`FetchFailed`), and the temporary file is gone."""

from __future__ import annotations

import errno
import hashlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Optional
from urllib.parse import urljoin, urlsplit

from tqdm import tqdm

from lifebench.llm.transport import (Endpoint, TransportFailure, TransportTimeout,
                                     WriteFailure)

MAX_REDIRECTS = 5
USER_AGENT = "lifebench-data/1"


class FetchFailed(Exception):
    """A download or a check failed; the message is one line saying what and where."""


@dataclass(frozen=True)
class Limits:
    """Bounds on one download."""
    stall_s: float = 60.0       # the longest wait for the next bytes
    deadline_s: float = 1800.0  # connect to last byte, per URL
    max_bytes: int = 64 << 20


@dataclass(frozen=True)
class Fetched:
    sha256: str
    size: int


def write_failure(path: Path, error: OSError) -> FetchFailed:
    """A failed write, in one line: a full disk says so."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return FetchFailed(f"no space left on the device writing {path} (the partial file "
                           f"was removed); free some space, or set LIFEBENCH_DATA to a "
                           f"folder on another disk")
    return FetchFailed(f"cannot write {path}: {error.strerror or error}")


class _FileSink:
    """The body into an open file, hashed as it passes, with a progress bar."""

    def __init__(self, out: BinaryIO, label: str) -> None:
        self.out = out
        self.label = label
        self.digest = hashlib.sha256()
        self.bar: Optional[tqdm] = None

    def begin(self, length: Optional[int]) -> None:
        # disable=None: no bar unless stderr is a terminal (make's logs stay one line each)
        self.bar = tqdm(total=length, desc=self.label, unit="B", unit_scale=True,
                        unit_divisor=1024, leave=False, disable=None, file=sys.stderr,
                        dynamic_ncols=True)

    def write(self, data: bytes) -> None:
        self.out.write(data)
        self.digest.update(data)
        if self.bar is not None:
            self.bar.update(len(data))

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def download(url: str, partial: Path, limits: Limits, label: str) -> Fetched:
    """GET `url` into `partial` (created or truncated); its sha256 and size. On any failure
    `partial` is removed and FetchFailed says what happened."""
    partial.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(partial, "wb") as out:
            sink = _FileSink(out, label)
            try:
                size = _get(url, sink, limits)
            finally:
                sink.close()
        return Fetched(sink.digest.hexdigest(), size)
    except WriteFailure as exc:
        partial.unlink(missing_ok=True)
        raise write_failure(partial, exc.error) from None
    except OSError as exc:  # opening or closing the file
        partial.unlink(missing_ok=True)
        raise write_failure(partial, exc) from None
    except BaseException:  # a failed download, or an interrupt: nothing half-written stays
        partial.unlink(missing_ok=True)
        raise


def _get(url: str, sink: _FileSink, limits: Limits) -> int:
    """Follow redirects to a 200 and stream it into `sink`; the body's size."""
    started = time.monotonic()
    for _ in range(MAX_REDIRECTS + 1):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise FetchFailed(f"cannot download {url}: not an http(s) URL")
        where = parts.netloc
        left = limits.deadline_s - (time.monotonic() - started)
        try:
            endpoint = Endpoint(f"{parts.scheme}://{parts.netloc}", limits.stall_s)
            answer = endpoint.download(parts.path + (f"?{parts.query}" if parts.query else ""),
                                       {"User-Agent": USER_AGENT, "Accept": "*/*"}, sink,
                                       max(left, 0.001), limits.max_bytes)
        except TransportTimeout:
            if time.monotonic() - started >= limits.deadline_s:
                raise FetchFailed(f"the download from {where} did not finish within "
                                  f"{limits.deadline_s:g} s") from None
            raise FetchFailed(f"{where} stopped answering (nothing for {limits.stall_s:g} s)") from None
        except TransportFailure as exc:
            raise FetchFailed(f"{exc} ({where})") from None
        if answer.status == 200:
            return answer.size
        if answer.status in (301, 302, 303, 307, 308) and answer.location:
            url = urljoin(url, answer.location)
            continue
        raise FetchFailed(f"{where} answered HTTP {answer.status} for {url}")
    raise FetchFailed(f"more than {MAX_REDIRECTS} redirects from {url}")
