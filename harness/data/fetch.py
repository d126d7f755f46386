"""Fetching a benchmark's data into the data home: what readers already find verified is
left alone; what is missing (or, in the data home, fails its check; or everything, with
`force`) is downloaded, verified and renamed into place.

Each file goes to a temporary name beside its target (`.NAME.partial`) and is renamed only
once verified, so an interrupted fetch leaves no half file under a real name; the next
fetch removes stale partial files (it holds the folder's lock, `.fetch.lock`, so two
fetches never share them) and starts the interrupted file again. A file whose hash differs
is removed and fetched once more; a second failure is one line naming it. An archive is
downloaded whole (to a partial name, removed after), its members checked for safety, and
only the files needed unpacked.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Literal

from lifebench.api.data import DataFile, RemoteData, exclusive
from lifebench.data.archive import open_archive, read_member
from lifebench.data.download import FetchFailed, Limits, download, write_failure
from lifebench.data.urls import OFFLINE_ENV, mirrored, offline
from lifebench.data.verify import FolderCheck, check_folder, problem_of, where_found

LOCK = ".fetch.lock"
PARTIAL = ".partial"
ATTEMPTS = 2  # a file refused for its hash is fetched once more


@dataclass(frozen=True)
class FetchResult:
    """What a fetch did: `ready` (nothing to do) or `fetched`, where the files are, how many
    files and bytes were downloaded, and why existing data was not used."""
    state: Literal["ready", "fetched"]
    check: FolderCheck
    files: int = 0
    bytes: int = 0
    replaced: str = ""  # e.g. "what was in ~/.cache/alfworld: 474 in an older format (...)"


def fetch(remote: RemoteData, force: bool = False, limits: Limits = Limits()) -> FetchResult:
    """Make `remote`'s files present and verified where readers look first. Raises
    FetchFailed (one line) when that cannot be done."""
    found = where_found(remote)
    if found is not None and found.complete and not force:
        return FetchResult("ready", found)
    replaced = ""
    if found is not None and found.folder != remote.home and not found.complete:
        replaced = f"what was in {found.folder}: {'; '.join(found.problems())}"
    if offline():
        raise FetchFailed(f"offline ({OFFLINE_ENV} is set), and "
                          f"{_shortfall(found or check_folder(remote, remote.home))}")
    home = remote.home
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_failure(home, exc) from None
    with _locked(home):
        wanted = remote.files if force else check_folder(remote, home).unverified()
        files, size = _fetch_files(remote, home, [f for f in wanted if f.url], limits)
        members = [f for f in wanted if f.member]
        if members:
            more, archive_size = _fetch_members(remote, home, members, limits)
            files, size = files + more, size + archive_size
    final = check_folder(remote, home)
    if not final.complete:  # a file changed under us: say so rather than report success
        raise FetchFailed(f"{home} is still not complete after fetching: {final.problems()[0]}")
    return FetchResult("fetched", final, files, size, replaced)


def _shortfall(check: FolderCheck) -> str:
    return f"in {check.folder}: {'; '.join(check.problems())}"


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """The folder's fetch lock (other fetches wait), with stale partial files removed."""
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(exclusive(folder / LOCK))
        except OSError as exc:
            raise write_failure(folder / LOCK, exc) from None
        for stale in folder.rglob(f".*{PARTIAL}"):
            stale.unlink(missing_ok=True)
        yield


def _partial(target: Path) -> Path:
    return target.with_name(f".{target.name}{PARTIAL}")


def _fetch_files(remote: RemoteData, home: Path, files: list[DataFile],
                 limits: Limits) -> tuple[int, int]:
    """Download each file, verify it, rename it into place; (files, bytes)."""
    limits = Limits(limits.stall_s, limits.deadline_s, remote.max_file_bytes)
    total = 0
    for file in files:
        target = home / file.target
        url = mirrored(file.url or "")
        for attempt in range(1, ATTEMPTS + 1):
            fetched = download(url, _partial(target), limits, file.target)
            total += fetched.size
            problem = None if fetched.sha256 == file.sha256 else \
                problem_of(remote, file, _partial(target).read_bytes(), fetched.sha256)
            if problem is None:
                _partial(target).replace(target)
                break
            _partial(target).unlink(missing_ok=True)
            if attempt == ATTEMPTS:
                raise FetchFailed(f"{file.target} from {url} was refused twice: {problem}; "
                                  f"removed")
    return len(files), total


def _fetch_members(remote: RemoteData, home: Path, members: list[DataFile],
                   limits: Limits) -> tuple[int, int]:
    """Download the archive, unpack and verify the members needed; (files, bytes). Members
    refused are fetched once more from a second download."""
    assert remote.archive is not None, f"{remote.benchmark}: archive members without an archive"
    url = mirrored(remote.archive.url)
    limits = Limits(limits.stall_s, limits.deadline_s, remote.archive.max_bytes)
    scratch = _partial(home / url.rsplit("/", 1)[-1])
    placed, total, left = 0, 0, list(members)
    for attempt in range(1, ATTEMPTS + 1):
        try:
            fetched = download(url, scratch, limits, url.rsplit("/", 1)[-1])
            total += fetched.size
            if remote.archive.sha256 and fetched.sha256 != remote.archive.sha256:
                refused = [(f, "the archive's sha256 differs from the pinned one") for f in left]
            else:
                refused = _unpack(remote, home, scratch, url, left)
        finally:
            scratch.unlink(missing_ok=True)
        placed += len(left) - len(refused)
        if not refused:
            return placed, total
        left = [f for f, _ in refused]
        if attempt == ATTEMPTS:
            file, problem = refused[0]
            more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
            raise FetchFailed(f"{file.target} from {url} was refused twice: {problem}{more}; "
                              f"removed")
    return placed, total


def _unpack(remote: RemoteData, home: Path, archive_path: Path, url: str,
            members: list[DataFile]) -> list[tuple[DataFile, str]]:
    """Write each verified member to its target; the ones refused, with why."""
    refused = []
    with open_archive(archive_path, url) as archive:
        for file in members:
            try:
                data = read_member(archive, file.member or "", remote.max_file_bytes)
            except FetchFailed as exc:
                refused.append((file, str(exc)))
                continue
            problem = problem_of(remote, file, data)
            if problem:
                refused.append((file, problem))
                continue
            _write_atomically(home / file.target, data)
    return refused


def _write_atomically(target: Path, data: bytes) -> None:
    partial = _partial(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        partial.write_bytes(data)
        partial.replace(target)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise write_failure(partial, exc) from None
