"""pytest fixtures for plugins' tests: `pytest_plugins = ["lifebench.testing.fixtures"]`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from lifebench.testing import CLIResult, LocalServer, ServerConfig, run_cli, serve


@pytest.fixture
def llm_server() -> Iterator[Callable[..., LocalServer]]:
    """Starts local OpenAI-compatible servers with the given `ServerConfig` fields; they
    are shut down after the test."""
    servers: list[LocalServer] = []

    def start(**config: Any) -> LocalServer:
        server = serve(ServerConfig(**config))
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def results_dir(tmp_path: Path) -> Path:
    """A results directory that does not exist yet, in the test's temporary folder."""
    return tmp_path / "results"


@pytest.fixture
def lifebench_cli() -> Callable[..., CLIResult]:
    """`lifebench_cli("run", ...)`: the CLI in a subprocess."""
    return run_cli
