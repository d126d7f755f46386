"""What a plan past the language layers (layers 1-2 of AutoManual's sandbox) meets inside
the confinement, observed from inside and from the host. `observe()` runs every check and
returns what it saw; the tests assert on it for both ways a sandbox starts: here, as root
(the child runs as nobody), and in a process that dropped its privileges first (the child
gets a user namespace): `python sandbox_checks.py` run by `run_unprivileged()`, which
prints the same observations as JSON.

Standard library and lifebench only: the unprivileged process imports nothing of pytest.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

from lifebench.methods.automanual import confine
from lifebench.methods.automanual.api import GENERIC
from lifebench.methods.automanual.sandbox import (HARDEN_SOURCE, PID_INIT_SOURCE, ActionRequest,
                                                  CodeProcess, RunEnded, SandboxLimits)

NOBODY = 65534
IPC_KEY = 0x5EED50  # the SysV key the escaped plans create their objects under


def confined_source(plan: str, harden: bool = True) -> str:
    """`plan` as the sandbox's child runs: in its PID namespace (after the init's forks),
    hardened unless `harden` is false (then only the namespaces and the view hold).
    `DUMPABLE` is the plan's process's dumpable flag as it starts, before any hardening."""
    return (HARDEN_SOURCE.read_text() + "\n" + PID_INIT_SOURCE.read_text()
            + "\nenter_pid_namespace(libc_prctl())\nDUMPABLE = libc_prctl()(3, 0, 0, 0, 0)\n"
            + ("harden_in_force = harden()\n" if harden else "harden_in_force = []\n") + plan)


def start_confined(plan: str, harden: bool = True) -> subprocess.Popen:
    return confine.popen([os.path.realpath(sys.executable), "-I", "-S", "-c",
                          confined_source(plan, harden)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env={}, close_fds=True)


def run_confined(plan: str, harden: bool = True) -> list[str]:
    """`plan`, unchecked, run confined (`confined_source`); its printed lines."""
    proc = start_confined(plan, harden)
    out, err = proc.communicate(timeout=60)
    # the exit status too: a plan ended by a signal says nothing on stderr
    assert proc.returncode == 0, (proc.returncode, err.decode(), out.decode()[-2000:])
    return out.decode().splitlines()


# Calls by number (no wrapper needed) and signals, each answering "ok" or the errno's name.
PRELUDE = r"""
import ctypes, errno, json, os, signal, struct
libc = ctypes.CDLL(None, use_errno=True)

def call(number, *args):
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) for a in args])
    return "ok" if result >= 0 else errno.errorcode[ctypes.get_errno()]

def kill(pid, number):
    try:
        os.kill(pid, number)
        return "ok"
    except OSError as exc:
        return errno.errorcode[exc.errno]
"""

# From inside one sandbox: what it sees and reaches of processes, pidfds, io_uring, x32
# calls and IPC (OTHER: the host ids of another sandbox's processes).
INSIDE = PRELUDE + r"""
seen = {"pid": os.getpid(), "uid": os.getuid(), "process_group": os.getpgrp(),
        "dumpable_at_start": DUMPABLE, "in_force": harden_in_force}
seen["visible"] = [p for p in range(1, PID_MAX + 1) if kill(p, 0) != "ESRCH"]
seen["other"] = {str(p): {"kill 0": kill(p, 0), "SIGKILL": kill(p, signal.SIGKILL),
                          "pidfd_open": call(434, p, 0)} for p in OTHER}
seen["pidfd_getfd"] = call(438, 3, 1, 0)
params = ctypes.create_string_buffer(120)
seen["io_uring_setup"] = call(425, 8, ctypes.addressof(params))
seen["x32 getpid"] = call(0x40000000 | 39)
# what two sandboxes could signal each other by through a file both see (issue 61)
import sys
view = os.open(os.path.realpath(sys.executable), os.O_RDONLY)
folder = os.open(os.path.dirname(os.path.realpath(sys.executable)), os.O_RDONLY)
lock = ctypes.create_string_buffer(32)  # struct flock: F_RDLCK over the whole file
seen["flock"] = call(73, view, 1)
seen["F_SETLK"] = call(72, view, 6, ctypes.addressof(lock))
seen["F_OFD_SETLK"] = call(72, view, 37, ctypes.addressof(lock))
seen["F_SETLEASE"] = call(72, view, 1024, 0)
seen["F_SETLEASE, high bits set"] = call(72, view, (1 << 32) | 1024, 0)
seen["F_NOTIFY"] = call(72, folder, 1026, 1)
seen["inotify_init1"] = call(294, 0)
seen["fanotify_init"] = call(300, 0, 0)
seen["open_tree_attr"] = call(467, -100, 0, 0, 0, 0)
seen["F_GETFL"] = call(72, view, 3)  # an fcntl the interpreter needs: still allowed
print(json.dumps(seen))
"""

# Without the seccomp filter: SysV IPC objects made in one sandbox, as the attack made them.
MAKE_IPC = PRELUDE + r"""
queue = libc.msgget(KEY, 0o1600)
message = struct.pack("l", 1) + b"the other episode's secret"
sent = libc.msgsnd(queue, message, len(message) - 8, 0)
segment = libc.shmget(KEY + 1, 128 << 20, 0o1600)
print(json.dumps({"queue": queue >= 0, "sent": sent == 0, "segment": segment >= 0}))
"""
READ_IPC = PRELUDE + r"""
queue = libc.msgget(KEY, 0)
print(json.dumps({"queue": "ok" if queue >= 0 else errno.errorcode[ctypes.get_errno()]}))
"""


def _host_ipc_keys() -> set[int]:
    keys = set()
    for kind in ("msg", "shm"):
        for line in Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]:
            keys.add(int(line.split()[0]))
    return keys


def _inside(plan: str, harden: bool, **values: Any) -> dict[str, Any]:
    for name, value in values.items():
        plan = plan.replace(name, json.dumps(value))
    [line] = run_confined(plan, harden)
    return json.loads(line)


def _one_sandbox_against_another() -> dict[str, Any]:
    """A sandbox whose plan waits for an observation (the victim), and escaped code in a
    second one (the attacker), hardened and not: what the attacker saw and did, and
    whether the victim's plan then ran on."""
    victim = CodeProcess(GENERIC.action_names, {}, [], SandboxLimits(timeout_s=20))
    try:
        assert victim.run("seen = agent.act('look')\nprint('victim ran on:', seen)") is None
        assert isinstance(victim.next_event(), ActionRequest)
        pids = victim.pids()
        pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
        hardened = _inside(INSIDE, True, OTHER=pids, PID_MAX=pid_max)
        bare = _inside(INSIDE, False, OTHER=pids, PID_MAX=pid_max)
        victim.answer("the room")
        ended = victim.next_event()
        return {"victim_pids": len(pids), "hardened": hardened, "namespaces_only": bare,
                "victim_after": [ended.printed, ended.error, ended.killed]}
    finally:
        victim.close()


def _ipc_after_the_sandbox() -> dict[str, Any]:
    """SysV objects made in a sandbox without seccomp: whether the host or a later sandbox
    sees any of them once it has ended; and msgget under seccomp."""
    made = _inside(MAKE_IPC, False, KEY=IPC_KEY)
    left = sorted({IPC_KEY, IPC_KEY + 1} & _host_ipc_keys())
    later = _inside(READ_IPC, False, KEY=IPC_KEY)
    hardened = _inside(PRELUDE + "print(json.dumps(call(68, KEY, 0o1600)))", True, KEY=IPC_KEY)
    return {"made": made, "left_on_host": left, "later_sandbox": later["queue"],
            "hardened_msgget": hardened}


def _lifecycle() -> dict[str, Any]:
    """A real sandbox from start to close: its processes and its root folder afterwards; a
    plan process killed while its parent waits to answer it (what another sandbox could
    do before the PID namespace); and a fresh process after that."""
    roots: list[str] = []
    mkdtemp = tempfile.mkdtemp

    def recorded(*args: Any, **kwargs: Any) -> str:
        roots.append(mkdtemp(*args, **kwargs))
        return roots[-1]

    confine.tempfile.mkdtemp = recorded  # type: ignore[assignment]
    process = CodeProcess(GENERIC.action_names, {}, [], SandboxLimits(timeout_s=20))
    try:
        assert process.run("agent.act('look')\nprint('never')") is None
        assert isinstance(process.next_event(), ActionRequest)
        pids = process.pids()
        os.kill(pids[-1], signal.SIGKILL)  # the plan's process, mid-episode
        process.answer("an observation nobody reads")  # a broken pipe: not an exception
        killed = process.next_event()
        fresh_pids = []
        if process.run("print('fresh')") is None:
            fresh_pids = process.pids()
            fresh = process.next_event()
        else:
            fresh = RunEnded(error="did not start")
    finally:
        process.close()
        confine.tempfile.mkdtemp = mkdtemp  # type: ignore[assignment]
    return {"processes": len(pids), "killed": [killed.killed, killed.error, killed.misbehaved],
            "fresh": [fresh.printed, fresh.error],
            "left_processes": [p for p in pids + fresh_pids if Path(f"/proc/{p}").exists()],
            "roots": len(roots), "left_roots": [r for r in roots if os.path.exists(r)]}


ESCAPES = PRELUDE + r"""
import socket
out = {}
for what, attempt in [
        ("read /etc/hostname", lambda: open("/etc/hostname").read()),
        ("read a host file", lambda: open(SECRET).read()),
        ("write /work", lambda: open("/work/escaped", "w").write("x")),
        ("connect", lambda: socket.create_connection(("127.0.0.1", PORT), timeout=2)),
        ("socketpair", lambda: socket.socketpair()),
        ("fork", lambda: os.fork()),
        ("exec", lambda: os.execv("/bin/sh", ["sh"]))]:
    try:
        attempt()
        out[what] = "ESCAPED"
    except OSError as exc:
        out[what] = errno.errorcode[exc.errno]
print(json.dumps(out))
"""


def _escapes() -> dict[str, Any]:
    listener = socket.create_server(("127.0.0.1", 0))  # a port that would accept
    with tempfile.NamedTemporaryFile("w", suffix=".secret") as secret:
        secret.write("the parent's file")
        secret.flush()
        os.chmod(secret.name, 0o644)
        try:
            return _inside(ESCAPES, True, SECRET=secret.name, PORT=listener.getsockname()[1])
        finally:
            listener.close()


# -- round 3 (issue 61): the stop, the worker's death, a child that stops reading, a forged end

RECURSING = """
def probe(depth):
    try:
        return probe(depth + 1)
    except RuntimeError:
        return depth
top = probe(0)
def dive(depth):
    if depth < top - MARGIN:
        return dive(depth + 1)
    try:
        agent.act('look')
    except Exception:
        pass
    if SPIN:
        spun = 0
        while True:  # caught the stop: computes on, without acting
            spun += 1
dive(0)
"""


def _stop_at_every_depth(margins: range = range(0, 24)) -> dict[str, Any]:
    """A plan that acts at `MARGIN` frames below the recursion limit, for every margin at
    which it can act at all (found first, with plans that end), and catches whatever the
    stop raises: the longest time from the stop to the run's end, and whether every child
    had exited by then."""
    process = CodeProcess(GENERIC.action_names, {}, [], SandboxLimits(timeout_s=10))
    slowest, exited, ends, actable = 0.0, True, set(), []
    try:
        for margin in margins:
            assert process.run(RECURSING.replace("MARGIN", str(margin)).replace("SPIN", "False")) is None
            if isinstance(process.next_event(), ActionRequest):
                actable.append(margin)
                process.answer("ok")
                process.next_event()
        for margin in actable:
            assert process.run(RECURSING.replace("MARGIN", str(margin)).replace("SPIN", "True")) is None
            if not isinstance(process.next_event(), ActionRequest):
                ends.add("no action")
                continue
            child = process.proc
            started = time.monotonic()
            ended = process.stop("the task is over")
            slowest = max(slowest, time.monotonic() - started)
            ends.add("stopped" if ended.stopped == "the task is over" and not ended.killed else "other")
            try:
                child.wait(timeout=1)
            except subprocess.TimeoutExpired:
                exited = False
    finally:
        process.close()
    return {"slowest_s": slowest, "exited": exited, "ends": sorted(ends), "depths": len(actable),
            "deepest_margin": min(actable, default=None)}


WORKER = """
import json, sys, time
from lifebench.methods.automanual.api import GENERIC
from lifebench.methods.automanual.sandbox import CodeProcess, SandboxLimits
process = CodeProcess(GENERIC.action_names, {}, [], SandboxLimits(timeout_s=60))
process.run(sys.argv[1])
time.sleep(0.5)  # the plan under way
print(json.dumps(process.pids()), flush=True)
time.sleep(3600)
"""


def _worker_killed() -> dict[str, Any]:
    """A worker with a busy plan and one waiting for an observation, SIGKILLed as the
    runner kills a hung worker: its sandbox's processes left after 2 s."""
    out = {}
    for name, plan in (("busy", "spun = 0\nwhile True:\n    spun += 1"),
                       ("waiting", "agent.act('look')")):
        worker = subprocess.Popen([sys.executable, "-c", WORKER, plan], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, cwd="/")
        try:
            pids = json.loads(worker.stdout.readline())
        finally:
            worker.kill()
            worker.wait()
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.05)
        out[name] = {"pids": len(pids), "left": [p for p in pids if _alive(p)]}
    return out


def _alive(pid: int) -> bool:
    """A process that is neither gone nor a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


# An escaped child: it shrinks its input pipe, forges the end of a run (a `stopped` of a
# million characters, prints of ten thousand), then sleeps without reading.
HOSTILE_CHILD = """
import fcntl, json, os, sys, time
def send(message):
    os.write(1, (json.dumps(message) + "\\n").encode())
sys.stdin.buffer.readline()
send({"type": "ready"})
fcntl.fcntl(0, 1031, 4096)
sys.stdin.buffer.readline()
send({"type": "finished", "error": None, "printed": "p" * 10000, "stopped": "s" * 1000000})
time.sleep(3600)
"""


def _child_that_stops_reading(timeout_s: float = 2.0) -> dict[str, Any]:
    """The hostile child's forged end, and how long the next run (a plan of 20,000
    characters, more than its pipe holds) takes to end."""
    process = CodeProcess(GENERIC.action_names, {}, [], SandboxLimits(timeout_s=timeout_s),
                          program=HOSTILE_CHILD)
    try:
        assert process.run("agent.act('look')") is None
        forged = process.next_event()
        started = time.monotonic()
        refused = process.run("x = 1\n" + "# " + "c" * 20_000)
        ended = refused or process.next_event()
        seconds = time.monotonic() - started
        pids = process.pids()
    finally:
        process.close()
    return {"forged": {"stopped": forged.stopped, "printed": len(forged.printed),
                       "killed": forged.killed},
            "next_run": {"seconds": seconds, "killed": ended.killed, "misbehaved": ended.misbehaved,
                         "left": pids}, "timeout_s": timeout_s}


def observe() -> dict[str, Any]:
    """Every check's observations (JSON-able); {"unavailable": why} without confinement."""
    confinement = confine.probe()
    if not confinement.available:
        return {"unavailable": confinement.description}
    return {"uid": os.getuid(), "confinement": confinement.description,
            "escapes": _escapes(), "two_sandboxes": _one_sandbox_against_another(),
            "ipc": _ipc_after_the_sandbox(), "lifecycle": _lifecycle(),
            "stop": _stop_at_every_depth(), "worker_killed": _worker_killed(),
            "stops_reading": _child_that_stops_reading()}


# -- an unprivileged user, from a root test process

def _reachable_preexec() -> None:
    """Between fork and exec, as root: a private mount namespace in which the interpreter's
    installation, the virtual environment and this checkout can be reached by any user
    (they may live under a 0700 folder: root's home, or a `mktemp -d` clone): a tmpfs of
    mode 755 goes over each folder that blocks the way, with what it held that is needed
    bound back in; then uid and gid nobody, no groups, no capability."""
    libc = ctypes.CDLL(None, use_errno=True)

    def mount(source: Optional[str], target: str, fstype: Optional[str], flags: int,
              data: Optional[str] = None) -> None:
        if libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(),
                      ctypes.c_ulong(flags), data and data.encode()) != 0:
            raise OSError(ctypes.get_errno(), f"mount {target}")

    bind, recursive, private = 4096, 16384, 1 << 18
    if libc.unshare(0x00020000) != 0:
        raise OSError(ctypes.get_errno(), "unshare")
    mount(None, "/", None, recursive | private)
    needed = {os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, Path(__file__).parents[2])}
    blocked: dict[Path, set[str]] = {}  # the outermost folder in each one's way: what it holds
    for path in needed:
        ancestors = [p for p in Path(path).parents if p != Path("/") and not os.stat(p).st_mode & 0o001]
        if ancestors:
            blocked.setdefault(ancestors[-1], set()).add(path)
    for folder, paths in blocked.items():
        kept = [p for p in paths if not any(q != p and p.startswith(q + "/") for q in paths)]
        staged = {}
        for path in kept:
            staged[path] = tempfile.mkdtemp()
            mount(path, staged[path], None, bind | recursive)
        mount("tmpfs", str(folder), "tmpfs", 0, "mode=755")
        for path, staging in staged.items():
            os.makedirs(path)
            mount(staging, path, None, bind | recursive)
            libc.umount2(staging.encode(), 2)  # MNT_DETACH: the staging folder is empty again
            os.rmdir(staging)
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def run_unprivileged() -> dict[str, Any]:
    """`observe()` in a process of uid nobody, started from this root process."""
    result = subprocess.run([sys.executable, str(Path(__file__).resolve())],
                            preexec_fn=_reachable_preexec, capture_output=True, cwd="/",
                            env={"PATH": "/usr/bin:/bin"}, timeout=300)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    return json.loads(result.stdout)


if __name__ == "__main__":
    print(json.dumps(observe()))
