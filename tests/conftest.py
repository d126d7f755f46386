"""Shared fixtures: the CLI run as a real subprocess, and the test plugin package installed
(into a private directory, never into the venv) so its entry points are discovered. The
local LLM server and results directories come from `lifebench.testing`, as a plugin's
tests get them."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lifebench.api import EpisodeRecord, RecordKey
from lifebench.testing import CLIResult, read_records, run_cli  # noqa: F401 (used by tests)

pytest_plugins = ["lifebench.testing.fixtures", "timing", "pytester"]

# A shell without job control starts background commands with SIGINT ignored, and an ignored
# signal stays ignored in every process started from them: the CLI runs these tests
# interrupt with SIGINT would not hear it. A handler of ours is reset to the default in them.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

ROOT = Path(__file__).resolve().parent.parent
PLUGIN_SRC = ROOT / "tests" / "fixtures" / "testplugin"
CANARY = "sk-canary-5f1d2e9c7b"  # an API key that must never be written anywhere


# Runs that name no --workers play in the CLI's own process (a pool of one worker per core
# costs each run 2-3x its CPU, and the suite's workers already fill the cores); the tests of
# the pool, the workers' crashes and Ray name their --workers.
os.environ.setdefault("LIFEBENCH_WORKERS", "0")
# `run_cli`'s commands are forked from a process that imported the CLI, numpy, Plancraft,
# TextWorld and Crafter once (lifebench.testing.cli_forks): 0.3-2 s saved in each of ~600
# commands
os.environ.setdefault("LIFEBENCH_CLI_FORKS", "numpy,plancraft.config,textworld,crafter")
# The real model's server on one thread: its threads wait for each other at every step, and
# beside the other worker (or `make check`, which CI runs beside the tests) a second thread
# made its tests 654 s instead of 68 s
os.environ.setdefault("LIFEBENCH_SERVE_THREADS", "1")


@pytest.fixture(scope="session", autouse=True)
def shared_embedding_store(tmp_path_factory) -> Path | None:
    """The embeddings' store on disk (lifebench.embedding_store) for this session, shared by
    its workers and every CLI they start (each would embed Plancraft's and ScienceWorld's
    valid actions again, 5-30 s a process), and never the user's own."""
    from lifebench.embedding_store import STORE_ENV

    if os.environ.get(STORE_ENV, "").strip().lower() == "off":  # measuring without it
        return None
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "embeddings"
    folder.mkdir(exist_ok=True)
    os.environ[STORE_ENV] = str(folder)
    return folder


@pytest.fixture(scope="session")
def plugin_path(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("plugin-site")
    build = tmp_path_factory.mktemp("plugin-build")
    source = build / "src"  # a copy, so building leaves nothing in the repository
    shutil.copytree(PLUGIN_SRC, source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--no-build-isolation", "--disable-pip-version-check", "--target", str(target),
                    str(source)], check=True, cwd=build,
                   env={**os.environ, "PIP_NO_INDEX": "1"})
    return target


@pytest.fixture
def cli(plugin_path):
    """Run `lifebench ...` in a subprocess with the test plugin installed."""

    # the deadline is a guard against a hang, not a bound any result depends on: 15 minutes,
    # several times the slowest command's time on a loaded machine (issue 64)
    def run(*args: str, timeout: float = 900, env: dict | None = None) -> CLIResult:
        return run_cli(*args, timeout=timeout, cwd=ROOT, env={**plugin_env(plugin_path), **(env or {})})

    return run


@pytest.fixture
def faulty(tmp_path):
    """`--method-arg` flags for the test plugin's `faulty` method, with a fresh directory
    for its attempt counters."""
    markers = tmp_path / "markers"
    markers.mkdir()

    def method_args(mode: str, at: str, **more) -> list[str]:
        pairs = {"mode": mode, "at": at, **more, "marker_dir": str(markers)}
        flags = []
        for key, value in pairs.items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            flags += ["--method-arg", f"{key}={text}"]
        return flags

    return method_args


def plugin_env(plugin_path: Path) -> dict[str, str]:
    """Environment variables that make the test plugin's entry points visible."""
    return {"PYTHONPATH": os.pathsep.join(p for p in (str(plugin_path), os.environ.get("PYTHONPATH")) if p)}


TIMING_FIELDS = ("wall_s",)


def without_timings(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in TIMING_FIELDS}


def key_of(record: dict) -> RecordKey:
    return EpisodeRecord.from_dict(record).key


def markdown_table(text: str, title: str) -> list[dict[str, str]]:
    """The rows of the table titled `title` in a markdown report, as {header: cell}."""
    blocks = text.split("\n\n")
    lines = [line for line in blocks[blocks.index(title) + 1].splitlines() if line.startswith("|")]
    cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
    return [dict(zip(cells[0], row)) for row in cells[2:]]


def one_line_error(result: CLIResult, *fragments: str, code: int = 2) -> str:
    """The single stderr line of a refused command (exit `code`), holding every fragment."""
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def archive_members(archive: Path) -> dict[str, bytes]:
    """The regular files of a .tar.gz, by name."""
    import tarfile

    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def rewrite_archive(archive: Path, target: Path, change, rehash: bool = False) -> Path:
    """`archive` written again to `target` with its members changed by `change(members)`;
    `rehash`: submission.json's digests updated to match, so every archive check passes."""
    import hashlib
    import io
    import json
    import tarfile

    members = archive_members(archive)
    change(members)
    if rehash:
        info = json.loads(members["submission.json"])
        info["files"] = {n: hashlib.sha256(d).hexdigest() for n, d in members.items()
                         if n != "submission.json"}
        members["submission.json"] = json.dumps(info).encode()
    with tarfile.open(target, "w:gz") as tar:
        for name, data in members.items():
            member = tarfile.TarInfo(name)
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    return target


@pytest.fixture(scope="session")
def submitted(tmp_path_factory) -> tuple[Path, Path]:
    """A small real run (random on Plancraft val.small, 2 instances) and its submission."""
    root = tmp_path_factory.mktemp("submission")
    out, archive = root / "run", root / "random.tar.gz"
    result = run_cli("run", "--no-progress", "--benchmark", "plancraft", "--split", "val.small",
                     "--method", "random", "--limit", "2", "--out", str(out))
    assert result.returncode == 0, result.stderr
    exported = run_cli("export", "--submission", str(archive), str(out))
    assert exported.returncode == 0, exported.stderr
    assert "2 episodes of random" in exported.stdout
    return out, archive

