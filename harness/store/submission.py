"""Submissions: a results directory as one archive, for sending results to a leaderboard.

A submission is a gzip'd tar archive (`lifebench export --submission OUT.tar.gz DIR`)
holding, at its root:
    submission.json        what it is: format and version, who made it (lifebench's version),
                           the runs, the methods' configs as the manifests recorded them, the
                           plugins' versions, and the SHA-256 of every other member
    episodes.jsonl         the records
    manifest.json          the runs' manifests (spec, versions, commands)
    contexts.jsonl, contexts/   the instance contexts, when the run built any
    trajectories/          the episodes' steps (what `lifebench view` shows per episode)
    aside/                 per-call lists set aside from records with many calls
    answers.sqlite         every answer the runs' LLM calls used, by request key (what
                           `lifebench verify` replays them from); left out with
                           --no-responses, which makes the submission "not replayable"

Invariants: a member is a regular file (or a folder) under one of these names, with no
absolute path, `..`, link or device; every file is listed in submission.json with its
digest, and every listed file is there; no name appears twice; the members' count and sizes
and the unpacked total are bounded (`MAX_*` below). `open_submission` streams the members
into a temporary folder and moves it into place only when all of it holds, so a corrupt,
foreign or oversized archive is refused in one line (a UserError) and leaves nothing.
"""

from __future__ import annotations

import datetime
import hashlib
import io
import json
import shutil
import tarfile
import tempfile
import zlib
from pathlib import Path, PurePosixPath
from typing import Any, Optional

import lifebench
from lifebench.api.errors import UserError
from lifebench.api.untrusted import parse_json
from lifebench.store.aside import ASIDE_DIR
from lifebench.store.contexts import CONTEXTS_DIR, CONTEXTS_FILE
from lifebench.store.records_file import EPISODES_FILE, read_directory
from lifebench.store.results import ANSWERS_FILE, MANIFEST_FILE, TRAJECTORIES_DIR, read_manifest_runs

FORMAT = "lifebench-submission"
VERSION = 1
INFO_FILE = "submission.json"
FILES = (EPISODES_FILE, MANIFEST_FILE, CONTEXTS_FILE)
FOLDERS = (TRAJECTORIES_DIR, CONTEXTS_DIR, ASIDE_DIR)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _members(directory: Path) -> list[str]:
    """The files of a results directory that go into its submission, in a stable order."""
    names = [name for name in FILES if (directory / name).is_file()]
    for folder in FOLDERS:
        if (directory / folder).is_dir():
            names += sorted(p.relative_to(directory).as_posix()
                            for p in (directory / folder).rglob("*") if p.is_file())
    return names


def _unique(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for value in values:
        if value not in out:
            out.append(value)
    return out


def describe(directory: Path, records: list[dict[str, Any]]) -> dict[str, Any]:
    """submission.json's content but the digests: runs, methods' configs, plugins' versions."""
    try:
        runs = read_manifest_runs(directory)
    except ValueError as exc:
        raise UserError(f"{directory / MANIFEST_FILE} is unreadable ({exc}); restore it to export "
                        f"this directory (its records are intact)") from None
    plugins: dict[str, Any] = {}
    for run in runs:  # the last run's version of a package wins (it made the newest records)
        plugins.update({k: v for k, v in (run.get("packages") or {}).items()})
    methods: dict[str, dict[str, Any]] = {}
    for record in records:
        entry = methods.setdefault(record["method"], {"config_hashes": [], "args": [], "grid": []})
        if record["method_config_hash"] not in entry["config_hashes"]:
            entry["config_hashes"].append(record["method_config_hash"])
    for name, entry in methods.items():
        entry["config_hashes"].sort()
        specs = [run.get("spec") or {} for run in runs if name in ((run.get("spec") or {}).get("methods") or [])]
        entry["args"] = _unique([(s.get("method_args") or {}).get(name, {}) for s in specs])
        entry["grid"] = _unique([g for s in specs if (g := (s.get("method_grid") or {}).get(name))])
    return {"format": FORMAT, "version": VERSION,
            "created_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "lifebench": lifebench.__version__, "episodes": len(records),
            "runs": [run.get("run_id") for run in runs], "methods": methods, "plugins": plugins}


def write_submission(directory: str | Path, out: str | Path,
                     answers: Optional[Path] = None) -> dict[str, Any]:
    """Write the submission of results directory `directory` to `out` (.tar.gz); its
    submission.json content. `answers`: a whole copy of the directory's answers file, to
    include (None: the submission is not replayable)."""
    directory, out = Path(directory), Path(out)
    for required in (EPISODES_FILE, MANIFEST_FILE):
        if not (directory / required).is_file():
            raise UserError(f"{directory} has no {required}: give a results directory "
                            f"(`lifebench run ... --out DIR`)")
    records = [record.to_dict() for record in read_directory(directory)]
    if not records:
        raise UserError(f"{directory} holds no episode records; nothing to submit")
    info = describe(directory, records)
    names = _members(directory)
    contents = {name: (directory / name).read_bytes() for name in names}
    if answers is not None:
        contents[ANSWERS_FILE] = answers.read_bytes()
    info["responses"] = answers is not None
    info["answers_bytes"] = len(contents.get(ANSWERS_FILE, b""))
    info["files"] = {name: _digest(data) for name, data in contents.items()}
    out.parent.mkdir(parents=True, exist_ok=True)
    scratch = out.with_name(out.name + ".partial")
    try:
        with tarfile.open(scratch, "w:gz") as archive:
            for name, data in [(INFO_FILE, json.dumps(info, indent=2).encode() + b"\n"),
                               *contents.items()]:
                member = tarfile.TarInfo(name)
                member.size, member.mode = len(data), 0o644
                archive.addfile(member, io.BytesIO(data))
        scratch.replace(out)
    except OSError as exc:
        scratch.unlink(missing_ok=True)
        raise UserError(f"cannot write {out}: {exc.strerror or exc}") from None
    return info


def is_submission_path(path: str | Path) -> bool:
    """Whether a results argument names a submission to open: a file, but not a records
    file (`DIR/episodes.jsonl`, which the commands read as before)."""
    return Path(path).is_file() and not Path(path).name.endswith(".jsonl")


def _allowed(name: str) -> bool:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        return False
    return name in (INFO_FILE, *FILES, ANSWERS_FILE) or path.parts[0] in FOLDERS


# Bounds on what an archive from a stranger may unpack into (a results directory of 100,000
# episodes is ~150 MB in ~100 files): past any of them the archive is refused, before the
# member that passes it is read.
MAX_MEMBERS = 100_000
MAX_MEMBER_BYTES = 1 << 30
MAX_TOTAL_BYTES = 4 << 30
MAX_RATIO = 200  # unpacked bytes per archive byte (JSON lines compress ~10-30 times)
MAX_INFO_BYTES = 16 << 20
_CHUNK = 1 << 20


def open_submission(path: str | Path, into: str | Path) -> Path:
    """Check the submission at `path` and unpack it into `into` (a new folder); the results
    directory it holds. A UserError, in one line, for anything but an intact submission
    within the bounds above; then nothing is left behind. Members are streamed to a
    temporary folder beside `into` (never held whole), renamed into place once every check
    has passed."""
    path, into = Path(path), Path(into)

    def refuse(why: str) -> UserError:
        return UserError(f"{path} is not a lifebench submission: {why} (make one with "
                         f"`lifebench export --submission OUT.tar.gz DIR`)")

    made_parent = not into.parent.exists()
    into.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{into.name}.partial-", dir=into.parent))
    try:
        digests, info_raw = _unpack(path, partial, refuse)
        info = _info(info_raw, refuse)
        listed = info.get("files")
        if not isinstance(listed, dict) or EPISODES_FILE not in listed:
            raise refuse("submission.json lists no episodes.jsonl")
        if set(listed) != set(digests):
            missing = sorted(set(listed) - set(digests)) or sorted(set(digests) - set(listed))
            raise refuse(f"its members do not match submission.json ({missing[0]!r})")
        for name, digest in digests.items():
            if digest != listed[name]:
                raise refuse(f"{name} does not match its checksum (the archive is corrupt)")
        partial.rename(into)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        if made_parent:
            shutil.rmtree(into.parent, ignore_errors=True)  # it held only the partial folder
        raise
    return into


def _unpack(path: Path, target: Path, refuse: Any) -> tuple[dict[str, str], Optional[bytes]]:
    """Stream the archive's members into `target`: each file's SHA-256, and submission.json's
    bytes (held: it is small)."""
    budget = min(MAX_TOTAL_BYTES, MAX_RATIO * max(path.stat().st_size, 1) + _CHUNK)
    digests: dict[str, str] = {}
    info: Optional[bytes] = None
    seen: set[str] = set()
    unpacked = 0
    try:
        with tarfile.open(path, "r:*") as archive:
            for count, member in enumerate(archive, 1):
                name = member.name.rstrip("/")
                if count > MAX_MEMBERS:
                    raise refuse(f"more than {MAX_MEMBERS} members")
                if name in seen:
                    raise refuse(f"member {member.name!r} appears twice")
                seen.add(name)
                if member.isdir() and _allowed(name):
                    continue
                if not member.isfile() or not _allowed(name):
                    raise refuse(f"unexpected member {member.name!r}")
                if member.size > MAX_MEMBER_BYTES:
                    raise refuse(f"member {name!r} unpacks to {member.size:,} bytes, over the "
                                 f"limit of {MAX_MEMBER_BYTES:,}")
                unpacked += member.size
                if unpacked > budget:
                    raise refuse(f"it unpacks to over {budget:,} bytes (more than {MAX_RATIO} "
                                 f"times its size, or {MAX_TOTAL_BYTES:,} in all)")
                source = archive.extractfile(member)
                assert source is not None
                if name == INFO_FILE:
                    if member.size > MAX_INFO_BYTES:
                        raise refuse(f"{INFO_FILE} is over {MAX_INFO_BYTES:,} bytes")
                    info = source.read(member.size)
                    continue
                digests[name] = _copy(source, target / name, member.size)
    except EOFError:
        raise refuse("the archive is truncated") from None
    except (tarfile.TarError, OSError, ValueError, zlib.error) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not a tar.gz archive"
        raise refuse(why) from None
    return digests, info


def _copy(source: Any, target: Path, size: int) -> str:
    """Copy `size` bytes in chunks; their SHA-256. A short member is a truncated archive."""
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    left = size
    with open(target, "wb") as out:
        while left:
            chunk = source.read(min(_CHUNK, left))
            if not chunk:
                raise EOFError()
            digest.update(chunk)
            out.write(chunk)
            left -= len(chunk)
    return digest.hexdigest()


def _info(raw: Optional[bytes], refuse: Any) -> dict[str, Any]:
    if raw is None:
        raise refuse(f"no {INFO_FILE}")
    try:
        info = parse_json(raw)
    except ValueError:
        raise refuse(f"{INFO_FILE} is not JSON") from None
    if not isinstance(info, dict) or info.get("format") != FORMAT:
        raise refuse(f"{INFO_FILE} is not of format {FORMAT!r}")
    if info.get("version") != VERSION:
        raise refuse(f"format version {info.get('version')!r}; this lifebench reads version "
                     f"{VERSION} (upgrade lifebench)")
    return info

