"""Shared fixtures: the CLI run as a real subprocess, and the test plugin package installed
(into a private directory, never into the venv) so its entry points are discovered."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PLUGIN_SRC = ROOT / "tests" / "fixtures" / "testplugin"


@dataclass
class CLIResult:
    returncode: int
    stdout: str
    stderr: str


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

    def run(*args: str, timeout: float = 300, env: dict | None = None) -> CLIResult:
        environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_path), str(ROOT)]),
                   **(env or {})}
        proc = subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True,
                              text=True, timeout=timeout, cwd=ROOT, env=environ)
        return CLIResult(proc.returncode, proc.stdout, proc.stderr)

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


def read_records(out: Path) -> list[dict]:
    path = Path(out) / "episodes.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


TIMING_FIELDS = ("wall_s",)


def without_timings(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in TIMING_FIELDS}


def key_of(record: dict) -> tuple:
    return (record["benchmark"], record.get("benchmark_config_hash", ""), record["split"], record["instance_id"], record["method"],
            record["method_config_hash"], record["model"], record["seed"], record["trial"],
            record["budget_steps"])


@pytest.fixture
def llm_server():
    """Starts real local OpenAI-compatible servers (`harness.llm.fakeserver`) with the given
    `ServerConfig` fields; they are shut down after the test."""
    from harness.llm.fakeserver import ServerConfig, serve

    servers = []

    def start(**config):
        server = serve(ServerConfig(**config))
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
