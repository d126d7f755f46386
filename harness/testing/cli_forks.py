"""`run_cli` without the interpreter's start-up: a process that imported the CLI once forks
a fresh child for each command (about 0.3-0.8 s of imports saved a command; a test suite
starts hundreds).

The child is a process of its own, as `python -m lifebench.cli` would be: its own pid, exit
status, signals, working directory, environment and `sys.path` (`PYTHONPATH` applied again),
its stdout and stderr in files of the caller's. What it shares with its siblings is what
the parent imported before any command ran, and the parent's hash seed: so that two
consecutive commands (a run and its rerun) do not share it, `CLIForks` keeps two parents
and takes them in turn.

`LIFEBENCH_CLI_FORKS` turns it on for `run_cli`: a comma-separated list of modules the
parents import besides `lifebench.cli` (e.g. `numpy,plancraft.config`), or `on`. A command
whose environment sets what only a process's start reads (`PYTHONHASHSEED`, say) is a plain
subprocess, and so is every command under coverage (which follows subprocesses).
"""

from __future__ import annotations

import atexit
import io
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Optional

ENV = "LIFEBENCH_CLI_FORKS"
_HEADER = struct.Struct("!I")
_MAX_REQUEST = 16 << 20  # a command's arguments and environment, bounded


# read by the interpreter or a native library as the process starts: a command given one
# of these is a subprocess of its own
_AT_START = ("PYTHON", "OPENBLAS_", "OMP_", "MKL_", "LD_", "MALLOC_")


def preload_modules(env: Optional[dict[str, str]] = None) -> Optional[list[str]]:
    """The modules the parents import (None: forks are off, or the command's `env` sets what
    only a process's start reads)."""
    value = os.environ.get(ENV, "").strip()
    under_coverage = os.environ.get("COVERAGE_PROCESS_START") or os.environ.get("COVERAGE_PROCESS_CONFIG")
    if not value or value.lower() == "off" or under_coverage:
        return None
    if any(k.startswith(_AT_START) and k != "PYTHONPATH" for k in env or {}):
        return None
    extra = [] if value.lower() == "on" else [m.strip() for m in value.split(",") if m.strip()]
    return ["lifebench.cli", *extra]


class CLIForks:
    """Two fork parents of this process, started on first use, taken in turn."""

    def __init__(self, modules: list[str]) -> None:
        self.modules = modules
        self.folder = Path(tempfile.mkdtemp(prefix="lifebench-forks-"))
        self.parents: list[subprocess.Popen] = []
        self.turn = 0
        self.cpu_seconds = 0.0  # the commands' CPU, theirs and their children's, so far
        self.lock = threading.Lock()
        atexit.register(self.close)

    def run(self, args: tuple[str, ...], env: dict[str, str], cwd: Optional[str],
            timeout: float, module: str = "lifebench.cli") -> tuple[int, str, str]:
        """`python -m MODULE ARGS` forked: its exit status (negative: killed by that signal),
        stdout and stderr; `subprocess.TimeoutExpired` once `timeout` has passed (killed)."""
        with self.lock:
            address = self._parent_address(self.turn % 2)
            self.turn += 1
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
                socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(address)
            request = json.dumps({"module": module, "args": list(args), "env": env,
                                  "cwd": os.path.abspath(cwd or os.getcwd())}).encode()
            socket.send_fds(conn, [_HEADER.pack(len(request))], [out.fileno(), err.fileno()])
            conn.sendall(request)
            reply = conn.makefile("rb")
            pid = int(reply.readline())
            conn.settimeout(timeout)
            try:
                status = reply.readline()
            except (socket.timeout, TimeoutError):
                _kill(pid)
                raise subprocess.TimeoutExpired(["lifebench", *args], timeout) from None
            if not status:
                raise RuntimeError(f"the fork parent lost the command `lifebench {' '.join(args)}`")
            code, cpu = status.split()
            with self.lock:
                self.cpu_seconds += float(cpu)
            return int(code), _text(out), _text(err)

    def _parent_address(self, index: int) -> str:
        address = str(self.folder / f"parent-{index}.sock")
        while len(self.parents) <= index:
            self.parents.append(None)  # type: ignore[arg-type]
        parent = self.parents[index]
        if parent is None or parent.poll() is not None:
            env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
            parent = subprocess.Popen(
                [sys.executable, "-m", "lifebench.testing.cli_forks", address, str(os.getpid()),
                 *self.modules], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, start_new_session=True)
            line = parent.stdout.readline()
            if line.strip() != b"ready":
                parent.kill()
                raise RuntimeError(f"the CLI's fork parent did not start ({line[:200]!r})")
            self.parents[index] = parent
        return address

    def close(self) -> None:
        for parent in self.parents:
            if parent is not None and parent.poll() is None:
                parent.kill()
                parent.wait()
        self.parents = []
        shutil.rmtree(self.folder, ignore_errors=True)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _text(file: Any) -> str:
    """What `subprocess.run(text=True)` would have read: the locale's encoding, newlines
    translated."""
    file.seek(0)
    return io.TextIOWrapper(io.BytesIO(file.read())).read()


# ------------------------------------------------------------------ the parent's side


def _serve(address: str, owner: int, modules: list[str]) -> None:
    import importlib

    for name in modules:
        importlib.import_module(name)
    base_path = [p for p in sys.path[1:] if p not in _pythonpath(os.environ)]
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(16)
    print("ready", flush=True)
    while os.getppid() == owner:  # the test process is gone: so is its parent of forks
        if not select.select([listener], [], [], 1.0)[0]:
            _reap()
            continue
        conn, _ = listener.accept()
        sys.stdout.flush()
        sys.stderr.flush()
        if os.fork() == 0:
            listener.close()
            _serve_one(conn, base_path)
        conn.close()
        _reap()


def _reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _serve_one(conn: socket.socket, base_path: list[str]) -> None:
    """In a child of the parent: receive one command, run it in a child of its own, report
    its pid then its exit status."""
    try:
        header, fds, _, _ = socket.recv_fds(conn, _HEADER.size, 2)
        (size,) = _HEADER.unpack(header)
        if len(fds) != 2 or size > _MAX_REQUEST:
            os._exit(1)
        body = b""
        while len(body) < size:
            chunk = conn.recv(size - len(body))
            if not chunk:
                os._exit(1)
            body += chunk
        request = json.loads(body)
        pid = os.fork()
        if pid == 0:
            conn.close()
            try:
                _become_cli(request, fds, base_path)
            finally:  # it failed before the command ran (a missing directory, say)
                import traceback

                traceback.print_exc()
                os._exit(1)
        for fd in fds:
            os.close(fd)
        conn.sendall(f"{pid}\n".encode())
        _, status, usage = os.wait4(pid, 0)  # its CPU, its own children's included
        conn.sendall(f"{os.waitstatus_to_exitcode(status)} {usage.ru_utime + usage.ru_stime:.3f}\n".encode())
    finally:
        os._exit(0)


def _become_cli(request: dict[str, Any], fds: list[int], base_path: list[str]) -> None:
    """Turn this fresh child into `python -m MODULE ARGS` started with the request's
    environment and working directory; never returns."""
    import importlib
    import runpy
    import traceback

    os.dup2(fds[0], 1)
    os.dup2(fds[1], 2)
    for fd in fds:
        os.close(fd)
    # the signal dispositions a fresh interpreter starts with
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for number in (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(number, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[:] = [request["cwd"], *_pythonpath(request["env"]), *base_path]
    importlib.invalidate_caches()
    sys.argv = [request["module"], *request["args"]]
    code: Any = 0
    try:
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code
    except KeyboardInterrupt:
        traceback.print_exc()
        code = -signal.SIGINT
    except BaseException:
        traceback.print_exc()
        code = 1
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]  # as the interpreter's exit does
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    if code < 0:  # died of a signal, as Python does on an uncaught KeyboardInterrupt
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code & 0xFF)


def _pythonpath(env: dict[str, str] | os._Environ) -> list[str]:
    return [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]


if __name__ == "__main__":
    _serve(sys.argv[1], int(sys.argv[2]), sys.argv[3:])
