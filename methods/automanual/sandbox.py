"""The parent's side of the Planner's sandbox: one child process (`child.py`) per task,
spoken to in JSON lines, whose namespace lives across the task's code attempts.

The parent never runs the Planner's code itself. It checks the code first (`check_code`,
the same function the child applies again), sends it, and then waits for the child's
next message: an action request (the code called an agent method and blocks until its
observation is sent back) or the end of the run. A wait longer than `timeout_s` (the code
computes without acting) kills the child: the run ends with an error, and the next run
starts a fresh child with the helpers defined again.

Two kinds of failure. A sandbox that cannot start (no namespaces, a process that ends or
breaks its pipe before it is ready) is the machine's: `SandboxUnavailable`, one line, and
the runner retries the episode. Whatever happens once plan code has run is the plan's: a
child that dies, is killed, or breaks the protocol (a message that is not valid text or
not JSON, an action while its functions are being defined, an action after it was told to
stop, one over MAX_MESSAGE_BYTES, a child that stops reading) ends that run as killed,
with the reason in `RunEnded.misbehaved`; the next run gets a fresh child. Nothing the
child sends or fails to read raises out of here, and nothing waits on it without a
deadline: every read within `timeout_s`, every write within WRITE_S (the pipe is
non-blocking), `close()` at once. No field the parent decides (whether a run was stopped,
and why) is read from the child, and every field it sends is cut to its bound before it
reaches a prompt, a record or a log.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
import weakref
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional, Union

from lifebench.api.processes import die_with_parent
from lifebench.api.untrusted import encodable_value, parse_json

from lifebench.methods.automanual import confine
from lifebench.methods.automanual.bounds import MAX_FEEDBACK_CHARS, cut
from lifebench.methods.automanual.child import STOP_LINE, allowed_attributes, check_code

CHILD_SOURCE = Path(__file__).with_name("child.py")
HARDEN_SOURCE = Path(__file__).with_name("harden.py")
PID_INIT_SOURCE = Path(__file__).with_name("pid_init.py")
# The longest message the child may send (its errors and prints are cut far below this):
# a longer one is a misbehaving child, stopped.
MAX_MESSAGE_BYTES = 1 << 20
START_S = 10.0  # the longest a child may take to be ready, or to define its functions
WRITE_S = 5.0  # the longest one message to the child may take to be written
_KEPT = "variables set by earlier code are lost (its functions are defined again)"


def child_source() -> str:
    """child.py's source with harden.py's and pid_init.py's inside it (after its
    `__future__` import, which must come first): the child confines itself as it starts
    (`child.main`)."""
    future = "from __future__ import annotations\n"
    inserted = HARDEN_SOURCE.read_text() + "\n" + PID_INIT_SOURCE.read_text() + "\n"
    return CHILD_SOURCE.read_text().replace(future, future + inserted, 1)


class SandboxUnavailable(RuntimeError):
    """The sandbox process could not start: the machine's failure, not the plan's (the
    runner retries the episode). Its text is one line."""


class _Silent(Exception):
    """No message within the time given."""


class _Gone(Exception):
    """The child's stream ended: the process ended or was killed."""


class _Misbehaved(Exception):
    """The child sent what the protocol does not allow (its text says what)."""


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
    misbehaved: Optional[str] = None  # how the child broke the protocol (it was killed)


Event = Union[ActionRequest, RunEnded]


def _one_line(text: object, limit: int = 200) -> str:
    return " ".join(str(text).split())[:limit]


def _kill(proc: subprocess.Popen, has_init: bool) -> None:
    """End the child and reap it. Confined, SIGTERM asks its outer process (our code, out
    of the plan's reach) to kill the namespace's init, which ends every process in it,
    and to reap it; SIGKILL if that does not happen in time."""
    if proc.poll() is None:
        try:
            if has_init:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
            else:
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


def _action_request(message: dict[str, Any]) -> Optional[ActionRequest]:
    name, args, call = message.get("name"), message.get("args", []), message.get("call", "")
    if not (isinstance(name, str) and isinstance(call, str) and isinstance(args, list)
            and all(isinstance(a, str) for a in args)):
        return None
    # the call and the command made of the arguments are cut where they are shown (trial.py:
    # MAX_ACTION_CHARS); the name, never shown whole, here
    return ActionRequest(_one_line(name, 200), tuple(args), call)


def _run_end(message: dict[str, Any]) -> Optional[RunEnded]:
    """The child's end of a run: its error and prints, cut; a `stopped` it sends is not
    read (only the parent knows whether it stopped the run)."""
    error, printed = message.get("error"), message.get("printed") or ""
    if not (isinstance(printed, str) and (error is None or isinstance(error, str))):
        return None
    return RunEnded(error=cut(error, MAX_FEEDBACK_CHARS) if error else None,
                    printed=cut(printed, MAX_FEEDBACK_CHARS))


@dataclass
class CodeProcess:
    """A child process running plans for one task. `actions`: the agent's method names;
    `variables`: strings put in the namespace (the first observation); `helpers`: function
    definitions made before any plan (a failed one is skipped)."""

    actions: tuple[str, ...]
    variables: dict[str, str]
    helpers: list[str]
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    # the child's program (`python -I -S -c PROGRAM LIMITS`), started confined as this one
    # is: child.py's by default; the hostile-input tests give one that misbehaves at will
    program: Optional[str] = None

    def __post_init__(self) -> None:
        self.proc: Optional[subprocess.Popen] = None
        self._buffer = bytearray()  # appended in place: linear in what the child sends
        self.running = False       # a plan is running (its end not yet read)
        self.waiting = False       # the running plan waits for an observation
        self.helper_errors: list[str] = []
        self.restarts = 0
        self._finalizer: Optional[weakref.finalize] = None
        self._unread: Optional[str] = None  # why the last write could not be made in time
        self.allowed = allowed_attributes(frozenset(self.actions))

    # -- the process
    def _start(self) -> None:
        """A fresh child, ready: SandboxUnavailable when it cannot be had."""
        confined = confine.probe().available
        limits = json.dumps({"memory_mb": self.limits.memory_mb, "cpu_s": self.limits.cpu_s,
                             "pid_namespace": confined})
        # confined, the interpreter is reached by its real path (its installation is the
        # only folder in the child's view), and the confinement sets its parent-death signal
        python = os.path.realpath(sys.executable) if confined else sys.executable
        parent = os.getpid()
        extra = {} if confined else {"preexec_fn": lambda: die_with_parent(parent=parent)}
        start = confine.popen if confined else subprocess.Popen
        try:
            self.proc = start(
                [python, "-I", "-S", "-c", self.program or child_source(), limits],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                env={"PYTHONIOENCODING": "utf-8"}, cwd="/", close_fds=True, **extra)
        except (OSError, subprocess.SubprocessError) as exc:
            raise SandboxUnavailable(f"the sandbox process could not start: "
                                     f"{_one_line(exc)}") from None
        self._finalizer = weakref.finalize(self, _kill, self.proc, confined)
        assert self.proc.stdin is not None
        os.set_blocking(self.proc.stdin.fileno(), False)  # every write has a deadline
        self._buffer = bytearray()
        self._unread = None
        why = None
        if not self._send({"type": "init", "actions": list(self.actions),
                           "variables": self.variables}):
            # a broken pipe: the process ended before it read its first message (whether
            # the write or its end comes first is the machine's timing, so one reason)
            why = self._unread or "it ended before it was ready"
        else:
            try:
                message = self._receive(max(self.limits.timeout_s, START_S))
                if message.get("type") != "ready":
                    why = f"it sent {_one_line(message.get('type'), 40)!r} before it was ready"
            except _Silent:
                why = f"it was not ready within {max(self.limits.timeout_s, START_S):g} s"
            except _Gone:
                why = "it ended before it was ready"
            except _Misbehaved as exc:
                why = str(exc)
        if why is not None:
            self.close()
            raise SandboxUnavailable(f"the sandbox process did not start: {why}")

    def _define(self) -> Optional[RunEnded]:
        """The helpers defined in the fresh child: the plans' own code runs here (default
        arguments), so what goes wrong is the plan's: the run's end."""
        if not self.helpers:
            return None
        if not self._send({"type": "define", "source": "\n\n".join(self.helpers)}) and self._unread:
            return self._killed("it broke the sandbox's protocol", self._unread)
        try:
            message = self._receive(max(self.limits.timeout_s, START_S))
        except _Silent:
            return self._killed(f"defining the code's functions took more than "
                                f"{max(self.limits.timeout_s, START_S):g} s")
        except _Gone:
            return self._killed("the code's process ended while its functions were defined")
        except _Misbehaved as exc:
            return self._killed("it broke the sandbox's protocol", str(exc))
        errors = message.get("errors")
        if message.get("type") != "defined" or not isinstance(errors, list):
            return self._killed("it broke the sandbox's protocol",
                                f"it sent {_one_line(message.get('type'), 40)!r} while its "
                                f"functions were being defined")
        self.helper_errors = [_one_line(e, 2_000) for e in errors]
        return None

    def pids(self) -> list[int]:
        """The host's ids of the child's processes, outermost first (confined: the process
        started, the namespace's init, the plan's process); empty when there is none."""
        pids = [self.proc.pid] if self.proc is not None and self.proc.poll() is None else []
        while pids:
            try:
                children = Path(f"/proc/{pids[-1]}/task/{pids[-1]}/children").read_text().split()
            except OSError:
                break
            if not children:
                break
            pids.append(int(children[0]))
        return pids

    def close(self) -> None:
        """End the child at once: an exit asked for when it is idle (never waited for), then
        the kill."""
        if self.proc is not None:
            if self.proc.poll() is None and not self.running:
                self._send({"type": "exit"}, deadline_s=0.0)
            if self._finalizer is not None:
                self._finalizer()
            self.proc = None
        self.running = self.waiting = False

    def _killed(self, why: str, misbehaved: Optional[str] = None) -> RunEnded:
        """The run's end when its process is stopped or gone: the next run starts afresh."""
        self.running = self.waiting = False
        self.restarts += 1
        self.close()
        if misbehaved is not None:
            why = f"{why} ({misbehaved})"
        return RunEnded(error=f"Execution stopped: {why}; {_KEPT}", killed=True,
                        misbehaved=misbehaved)

    # -- messages
    def _send(self, message: Union[dict[str, Any], bytes], deadline_s: float = WRITE_S) -> bool:
        """Write one message within `deadline_s`; False when the child cannot be written to:
        it died (its end is read next), or it stopped reading (`_unread` says so, and the
        next read ends the run)."""
        if self.proc is None or self.proc.stdin is None or self._unread:
            return False
        data = message if isinstance(message, bytes) else (json.dumps(message) + "\n").encode("utf-8")
        fd, view = self.proc.stdin.fileno(), memoryview(data)
        deadline = time.monotonic() + deadline_s
        try:
            while view:
                try:
                    view = view[os.write(fd, view):]
                    continue
                except BlockingIOError:
                    pass
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not select.select([], [fd], [], remaining)[1]:
                    self._unread = (f"it did not read its input: a message of {len(data)} bytes "
                                    f"was not taken within {deadline_s:g} s")
                    return False
        except (OSError, ValueError):  # a broken pipe, or a pipe already closed
            return False
        return True

    def _receive(self, timeout_s: float) -> dict[str, Any]:
        """The child's next message: _Silent when none came in time, _Gone when its stream
        ended, _Misbehaved for a line that is not a JSON object of valid text."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        searched = 0  # the buffer's bytes already known to hold no newline
        while (end := self._buffer.find(b"\n", searched)) < 0:
            searched = len(self._buffer)
            if searched > MAX_MESSAGE_BYTES:
                raise _Misbehaved(f"a message over {MAX_MESSAGE_BYTES} bytes")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Silent()
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                raise _Silent()
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise _Gone()
            self._buffer += chunk
        line = bytes(self._buffer[:end])
        del self._buffer[:end + 1]
        try:
            message = parse_json(line, max_chars=MAX_MESSAGE_BYTES)
        except ValueError as exc:
            raise _Misbehaved(f"a message that is not JSON text: {_one_line(exc, 80)}") from None
        if not isinstance(message, dict):
            raise _Misbehaved("a message that is not a JSON object")
        if encodable_value(message)[1]:
            raise _Misbehaved("a message that is not valid text (a lone surrogate)")
        return message

    # -- runs
    def run(self, code: str) -> Optional[RunEnded]:
        """Start a plan; its end when it cannot run (refused by the checker, or its
        functions could not be defined in a fresh process), else None (read its events
        with `next_event`). SandboxUnavailable when no process can be started."""
        problems = check_code(code, self.allowed)
        if problems:
            return RunEnded(error="Refused: " + "; ".join(problems))
        if self.proc is None or self.proc.poll() is not None:
            if self.proc is not None:  # it died between runs
                self.restarts += 1
                self.close()
            self._start()
            ended = self._define()
            if ended is not None:
                return ended
        self._send({"type": "run", "code": code})  # a child that died is read as such next
        self.running, self.waiting = True, False
        return None

    def next_event(self) -> Event:
        """The running plan's next action request, or its end."""
        assert self.running and not self.waiting
        if self._unread:
            return self._killed("it broke the sandbox's protocol", self._unread)
        try:
            message = self._receive(self.limits.timeout_s)
        except _Silent:
            return self._killed(f"the code computed for more than {self.limits.timeout_s:g} s "
                                f"without acting and was stopped (an endless loop?)")
        except _Gone:
            return self._killed("the code's process ended (it went over its memory or CPU "
                                "limit, or was killed)")
        except _Misbehaved as exc:
            return self._killed("it broke the sandbox's protocol", str(exc))
        kind = message.get("type")
        event = (_action_request(message) if kind == "action" else
                 _run_end(message) if kind == "finished" else None)
        if event is None:
            return self._killed("it broke the sandbox's protocol",
                                f"a malformed or unexpected message {_one_line(kind, 40)!r}")
        if isinstance(event, ActionRequest):
            self.waiting = True
        else:
            self.running = False
        return event

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
        end: the child sends it and exits at once, whatever the plan would run next. A
        child that acts again, or does not answer in time, is killed."""
        if self.running and not self.waiting:  # it computes: its next action, or its end
            event = self.next_event()
            if isinstance(event, RunEnded):
                return replace(event, stopped=reason)
        if not self.running:
            return RunEnded(stopped=reason)
        self.waiting = False
        self._send(STOP_LINE)
        event = self.next_event()
        if isinstance(event, ActionRequest):  # only code past the checks can act again
            event = self._killed("it did not stop when told", "an action after the stop")
        return replace(event, stopped=reason)
