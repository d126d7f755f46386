"""The parent's side of the Planner's sandbox: one child process (`child.py`) per task,
spoken to in JSON lines, whose namespace lives across the task's code attempts.

The parent never runs the Planner's code itself. It checks the code first (`check_code`,
the same function the child applies again), sends it, and then waits for the child's
next message: an action request (the code called an agent method and blocks until its
observation is sent back) or the end of the run. A wait longer than `timeout_s` (the code
computes without acting) kills the child: the run ends with an error, and the next run
starts a fresh child with the helpers defined again.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from lifebench.methods.automanual import confine
from lifebench.methods.automanual.child import allowed_attributes, check_code

CHILD_SOURCE = Path(__file__).with_name("child.py")
HARDEN_SOURCE = Path(__file__).with_name("harden.py")
# The longest message the child may send (its errors and prints are cut far below this):
# a longer one is a misbehaving child, stopped.
MAX_MESSAGE_BYTES = 1 << 20
MAX_FEEDBACK_CHARS = 4_000  # of an error or a print reaching a prompt


def child_source() -> str:
    """child.py's source with harden.py's inside it (after its `__future__` import, which
    must come first): the child confines itself as it starts (`child.main`)."""
    future = "from __future__ import annotations\n"
    return CHILD_SOURCE.read_text().replace(future, future + HARDEN_SOURCE.read_text() + "\n", 1)


class _Oversized(Exception):
    """The child sent a message over MAX_MESSAGE_BYTES."""


def _cut(text: str) -> str:
    """Text for a prompt, cut with a marker past MAX_FEEDBACK_CHARS."""
    if len(text) <= MAX_FEEDBACK_CHARS:
        return text
    return text[:MAX_FEEDBACK_CHARS] + f" ... ({len(text) - MAX_FEEDBACK_CHARS} more characters cut)"


@dataclass(frozen=True)
class SandboxLimits:
    timeout_s: float = 10.0   # the longest the code may compute between two actions
    memory_mb: int = 1024     # the child's address space
    cpu_s: int = 120          # the child's CPU seconds over the whole task


@dataclass(frozen=True)
class ActionRequest:
    name: str
    args: tuple[str, ...]
    call: str  # as the code wrote it: agent.go_to('cabinet 1')


@dataclass(frozen=True)
class RunEnded:
    error: Optional[str] = None
    printed: str = ""
    stopped: Optional[str] = None  # why the parent stopped it (task over, step cap)
    killed: bool = False           # the child was killed or died: the next run starts afresh


Event = Union[ActionRequest, RunEnded]


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            proc.kill()
        except OSError:
            pass
    try:
        proc.wait(timeout=5)
    except Exception:  # noqa: BLE001 (best effort at exit)
        pass
    for stream in (proc.stdin, proc.stdout):
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass


@dataclass
class CodeProcess:
    """A child process running plans for one task. `actions`: the agent's method names;
    `variables`: strings put in the namespace (the first observation); `helpers`: function
    definitions made before any plan (a failed one is skipped)."""

    actions: tuple[str, ...]
    variables: dict[str, str]
    helpers: list[str]
    limits: SandboxLimits = field(default_factory=SandboxLimits)

    def __post_init__(self) -> None:
        self.proc: Optional[subprocess.Popen] = None
        self._buffer = bytearray()  # appended in place: linear in what the child sends
        self.running = False       # a plan is running (its end not yet read)
        self.waiting = False       # the running plan waits for an observation
        self.helper_errors: list[str] = []
        self.restarts = 0
        self._finalizer: Optional[weakref.finalize] = None
        self.allowed = allowed_attributes(frozenset(self.actions))

    # -- the process
    def _start(self) -> None:
        source = child_source()
        limits = json.dumps({"memory_mb": self.limits.memory_mb, "cpu_s": self.limits.cpu_s})
        confined = confine.probe().available
        start = confine.popen if confined else subprocess.Popen
        # confined, the interpreter is reached by its real path (its installation is the
        # only folder in the child's view)
        python = os.path.realpath(sys.executable) if confined else sys.executable
        self.proc = start(
            [python, "-I", "-S", "-c", source, limits],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env={"PYTHONIOENCODING": "utf-8"}, cwd="/", close_fds=True)
        self._finalizer = weakref.finalize(self, _kill, self.proc)
        self._buffer = bytearray()
        self._send({"type": "init", "actions": list(self.actions), "variables": self.variables})
        self._expect("ready")
        if self.helpers:
            self._send({"type": "define", "source": "\n\n".join(self.helpers)})
            self.helper_errors = list(self._expect("defined").get("errors") or [])

    def _ensure(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            if self.proc is not None:  # it died between runs
                self.restarts += 1
                self.close()
            self._start()

    def close(self) -> None:
        if self.proc is not None:
            try:
                if self.proc.poll() is None and self.proc.stdin is not None and not self.running:
                    self.proc.stdin.write(b'{"type": "exit"}\n')
                    self.proc.stdin.flush()
            except OSError:
                pass
            if self._finalizer is not None:
                self._finalizer()
            self.proc = None
        self.running = self.waiting = False

    # -- messages
    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode("utf-8"))
        self.proc.stdin.flush()

    def _receive(self, timeout_s: float) -> Optional[dict[str, Any]]:
        """The child's next message; None when it did not answer in time or died."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        searched = 0  # the buffer's bytes already known to hold no newline
        while (end := self._buffer.find(b"\n", searched)) < 0:
            searched = len(self._buffer)
            if searched > MAX_MESSAGE_BYTES:
                raise _Oversized()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self._buffer += chunk
        line = bytes(self._buffer[:end])
        del self._buffer[:end + 1]
        if len(line) > MAX_MESSAGE_BYTES:
            raise _Oversized()
        return json.loads(line.decode("utf-8"))

    def _expect(self, kind: str) -> dict[str, Any]:
        message = self._receive(max(self.limits.timeout_s, 10.0))
        if message is None or message.get("type") != kind:
            self.close()
            raise RuntimeError(f"the sandbox process did not start (expected {kind!r}, got {message!r})")
        return message

    # -- runs
    def run(self, code: str) -> Optional[RunEnded]:
        """Start a plan; its end when it cannot run (refused by the checker), else None
        (read its events with `next_event`)."""
        problems = check_code(code, self.allowed)
        if problems:
            return RunEnded(error="Refused: " + "; ".join(problems))
        self._ensure()
        self._send({"type": "run", "code": code})
        self.running, self.waiting = True, False
        return None

    def next_event(self) -> Event:
        """The running plan's next action request, or its end."""
        assert self.running and not self.waiting
        try:
            message = self._receive(self.limits.timeout_s)
        except _Oversized:
            self.running = False
            self.restarts += 1
            self.close()
            return RunEnded(error=f"Execution stopped: the code's output passed "
                                  f"{MAX_MESSAGE_BYTES} bytes; variables set by earlier code are "
                                  f"lost (its functions are defined again)", killed=True)
        if message is None:
            died = self.proc is not None and self.proc.poll() is not None
            self.running = False
            self.restarts += 1
            self.close()
            error = ("the code's process ended (it went over its memory or CPU limit)" if died
                     else f"the code computed for more than {self.limits.timeout_s:g} s without "
                          f"acting and was stopped (an endless loop?)")
            return RunEnded(error=f"Execution stopped: {error}; variables set by earlier "
                                  f"code are lost (its functions are defined again)",
                            killed=True)
        if message.get("type") == "action":
            self.waiting = True
            return ActionRequest(str(message.get("name")), tuple(str(a) for a in message.get("args", [])),
                                 str(message.get("call", "")))
        self.running = False
        error = message.get("error")
        return RunEnded(error=_cut(str(error)) if error else None,
                        printed=_cut(str(message.get("printed") or "")),
                        stopped=message.get("stopped"))

    def answer(self, observation: str, state: Optional[dict[str, Any]] = None) -> None:
        assert self.waiting
        self.waiting = False
        self._send({"type": "result", "observation": observation, "state": state or {}})

    def refuse(self, error: str) -> None:
        assert self.waiting
        self.waiting = False
        self._send({"type": "refused", "error": error})

    def stop(self, reason: str) -> RunEnded:
        """Abort the running plan (the task is over, or the step cap is reached) and read its
        end; a plan that does not end in time is killed."""
        if self.waiting:
            self.waiting = False
            self._send({"type": "stop", "reason": reason})
        while self.running:
            event = self.next_event()
            if isinstance(event, ActionRequest):  # it caught the stop and tried again
                self.waiting = False
                self._send({"type": "stop", "reason": reason})
                continue
            return RunEnded(event.error, event.printed, reason, event.killed)
        return RunEnded(stopped=reason)
