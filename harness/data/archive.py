"""A downloaded zip archive, opened as a stranger's: refused whole, in one line, when any
member would land outside the folder it is unpacked into (an absolute path, a drive, `..`)
or is a link, as `lifebench.store.submission` refuses such tar members. Members are read
one at a time, bounded, and checked by zip's own CRC."""

from __future__ import annotations

import stat
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from lifebench.data.download import FetchFailed

_PIECE = 1 << 20


def _unsafe(info: zipfile.ZipInfo) -> str | None:
    """Why a member may not be unpacked, or None."""
    name = info.filename
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or ":" in name.split("/", 1)[0]:
        return "lies outside the folder it unpacks into"
    if stat.S_ISLNK(info.external_attr >> 16):
        return "is a link"
    return None


def open_archive(path: Path, url: str) -> zipfile.ZipFile:
    """The zip at `path`, every member checked; FetchFailed when it is not a zip or any
    member is unsafe."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise FetchFailed(f"{url} is not a zip archive ({exc})") from None
    for info in archive.infolist():
        why = _unsafe(info)
        if why:
            archive.close()
            raise FetchFailed(f"{url} refused: its member {info.filename!r} {why}")
    return archive


def read_member(archive: zipfile.ZipFile, name: str, max_bytes: int) -> bytes:
    """A member's bytes (at most `max_bytes`); FetchFailed when it is missing, too large
    or damaged."""
    try:
        info = archive.getinfo(name)
    except KeyError:
        raise FetchFailed(f"{name} is not in the archive") from None
    if info.file_size > max_bytes:
        raise FetchFailed(f"{name} unpacks to {info.file_size:,} bytes, over the limit of "
                          f"{max_bytes:,}")
    parts, size = [], 0
    try:
        with archive.open(info) as member:
            while piece := member.read(_PIECE):
                size += len(piece)
                if size > max_bytes:  # a header that lies about the size
                    raise FetchFailed(f"{name} unpacks past the limit of {max_bytes:,} bytes")
                parts.append(piece)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        raise FetchFailed(f"{name} is damaged in the archive ({exc})") from None
    return b"".join(parts)
