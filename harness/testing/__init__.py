"""What a plugin's tests need: a real local OpenAI-compatible server (scripted replies,
latency, faults), a temporary results directory, the CLI run as a subprocess, and the
records it wrote. Nothing here patches lifebench: tests run the real harness.

    from lifebench.testing import llm_server, results_dir, run_cli, read_records

    with llm_server(script=["look"]) as server, results_dir() as out:
        result = run_cli("run", "--benchmark", "plancraft", "--split", "val.small",
                         "--method", "my-method", "--limit", "2", "--model", "m",
                         "--base-url", server.url, "--out", str(out))
        assert result.returncode == 0, result.stderr
        assert len(read_records(out)) == 2

With pytest, `pytest_plugins = ["lifebench.testing.fixtures"]` in a conftest gives the
same as fixtures (`llm_server`, `results_dir`, `lifebench_cli`).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Optional

if TYPE_CHECKING:
    from lifebench.testing.fakeserver import FAULT_KINDS, LocalServer, ServerConfig, serve

_FROM_FAKESERVER = ("FAULT_KINDS", "LocalServer", "ServerConfig", "serve")


def __getattr__(name: str) -> Any:
    # The server's names load with it, on first use: importing them here would load the
    # module before `python -m lifebench.testing.fakeserver` runs it as __main__ (a
    # RuntimeWarning, and two copies of the module).
    if name in _FROM_FAKESERVER:
        from lifebench.testing import fakeserver

        return getattr(fakeserver, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["FAULT_KINDS", "CLIResult", "LocalServer", "ServerConfig", "llm_server",
           "read_records", "results_dir", "run_cli", "serve"]


@contextlib.contextmanager
def llm_server(**config: Any) -> Iterator[LocalServer]:
    """A local OpenAI-compatible server with the given `ServerConfig` fields, on a free
    port, shut down at the end."""
    from lifebench.testing.fakeserver import ServerConfig, serve

    server = serve(ServerConfig(**config))
    try:
        yield server
    finally:
        server.close()


@contextlib.contextmanager
def results_dir() -> Iterator[Path]:
    """A fresh, empty directory for a run's results, removed at the end."""
    with tempfile.TemporaryDirectory(prefix="lifebench-results-") as tmp:
        yield Path(tmp) / "out"


@dataclass
class CLIResult:
    returncode: int
    stdout: str
    stderr: str


_forks: Any = None  # this process's CLIForks, made on first use


def run_cli(*args: str, env: Optional[dict[str, str]] = None, timeout: float = 600,
            cwd: Optional[str | Path] = None) -> CLIResult:
    """`lifebench ARGS...` in a subprocess of this interpreter (plugins installed in its
    environment are found through their entry points). With `LIFEBENCH_CLI_FORKS` set, a
    child forked from a process that imported the CLI already (`lifebench.testing.cli_forks`)."""
    from lifebench.testing import cli_forks

    modules = cli_forks.preload_modules(env)
    if modules is not None:
        global _forks
        if _forks is None or _forks.modules != modules:
            if _forks is not None:
                _forks.close()
            _forks = cli_forks.CLIForks(modules)
        code, out, err = _forks.run(args, {**os.environ, **(env or {})}, None if cwd is None
                                    else str(cwd), timeout)
        return CLIResult(code, out, err)
    proc = subprocess.run([sys.executable, "-m", "lifebench.cli", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd, env={**os.environ, **(env or {})})
    return CLIResult(proc.returncode, proc.stdout, proc.stderr)


def read_records(out: str | Path) -> list[dict[str, Any]]:
    """The records a run wrote into `out`, as JSON objects, in the order written."""
    path = Path(out) / "episodes.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
