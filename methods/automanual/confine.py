"""Operating-system confinement of the sandbox's child process, set up between fork and exec
(`preexec`), on Linux:

- new mount, network, IPC and PID namespaces (as root), or a user namespace with them (as
  another user, as `unshare -Urn` does): no network at all, not even loopback; no SysV or
  POSIX IPC object shared with the host or another sandbox, and none left when it ends; no
  process visible but its own (`pid_init.py`: the namespace's init, then the plan's process);
- a filesystem view that holds only the interpreter's installation and the system's
  libraries, read-only, and an empty private working directory (`/work`): a tmpfs root
  built in the child's own mount namespace, then `chroot`;
- an unprivileged uid and gid (nobody) when started as root;
- a parent-death signal (SIGKILL), set last (a change of uid or of user namespace clears
  it), with a check that the parent did not die before: a worker killed with SIGKILL, as
  the runner kills a hung one, takes its sandboxes with it.

The child then confines itself further (`pid_init.py`, `harden.py`: not dumpable, no new
privileges, a seccomp filter) and the kernel's rlimits hold as before (`child.py`).
`probe()` says, once per process, whether this platform allows it: a method that runs model
code refuses to start without it unless told otherwise (`allow_unconfined`).
"""

from __future__ import annotations

import ctypes
import functools
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

_CLONE_NEWNS = 0x00020000
_CLONE_NEWNET = 0x40000000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWPID = 0x20000000  # for the children of the process started: pid_init.py forks them
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = (
    1, 2, 4, 32, 4096, 16384, 1 << 18)
_NOBODY = 65534
_PR_SET_PDEATHSIG = 1
# What the interpreter needs to start: its own installation, and the system's libraries.
_SYSTEM_LIBRARIES = ("/lib", "/lib64", "/usr/lib", "/usr/lib64")


@dataclass(frozen=True)
class Confinement:
    available: bool
    description: str  # one line: what is in force, or why none is


def _mount(libc: ctypes.CDLL, source: Optional[str], target: str, fstype: Optional[str],
           flags: int, data: Optional[str] = None) -> None:
    if libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(),
                  ctypes.c_ulong(flags), data and data.encode()) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {target}: {os.strerror(errno)}")


def _binds() -> list[str]:
    prefix = os.path.realpath(sys.base_prefix)
    return [prefix] + [p for p in _SYSTEM_LIBRARIES
                       if os.path.isdir(p) and not prefix.startswith(p + "/")]


def preexec(root: str) -> Callable[[], None]:
    """What the child runs between fork and exec: namespaces, the read-only view under
    `root` (an empty folder), chroot, an unprivileged uid. The process then started must
    fork to be in the new PID namespace (`pid_init.enter_pid_namespace`)."""
    binds = _binds()
    parent = os.getpid()

    def confine() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        uid, gid = os.getuid(), os.getgid()
        flags = _CLONE_NEWNS | _CLONE_NEWNET | _CLONE_NEWIPC | _CLONE_NEWPID | (
            0 if uid == 0 else _CLONE_NEWUSER)
        if libc.unshare(flags) != 0:
            raise OSError(ctypes.get_errno(), "unshare")
        if uid != 0:  # inside the user namespace: root, mapped to this user only
            Path("/proc/self/setgroups").write_text("deny")
            Path("/proc/self/uid_map").write_text(f"0 {uid} 1")
            Path("/proc/self/gid_map").write_text(f"0 {gid} 1")
        _mount(libc, None, "/", None, _MS_REC | _MS_PRIVATE)
        _mount(libc, "tmpfs", root, "tmpfs", _MS_NOSUID | _MS_NODEV, "size=4m,mode=755")
        for source in binds:
            target = root + source
            os.makedirs(target, exist_ok=True)
            _mount(libc, source, target, None, _MS_BIND | _MS_REC)
            _mount(libc, None, target, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID)
        os.makedirs(root + "/work", mode=0o777)
        os.chmod(root + "/work", 0o777)
        _mount(libc, None, root, None, _MS_REMOUNT | _MS_NOSUID | _MS_NODEV | _MS_RDONLY,
               "size=4m,mode=755")
        os.chroot(root)
        os.chdir("/work")
        if uid == 0:
            os.setgroups([])
            os.setgid(_NOBODY)
            os.setuid(_NOBODY)
        if libc.prctl(_PR_SET_PDEATHSIG, 9, 0, 0, 0) != 0 or os.getppid() != parent:
            os._exit(1)  # no parent-death signal, or the parent is already gone
    return confine


def popen(args: list[str], **kwargs) -> subprocess.Popen:
    """`subprocess.Popen(args)` confined (the caller has checked `probe()`); the root's
    folder is removed when the process has started (the view lives in its namespace)."""
    root = tempfile.mkdtemp(prefix="lifebench-sandbox-")
    try:
        return subprocess.Popen(args, preexec_fn=preexec(root), **kwargs)
    except subprocess.SubprocessError as exc:  # its text says no more than this
        raise OSError(f"the confinement could not be set up (namespaces, the view or the "
                      f"user): {exc}") from None
    finally:
        os.rmdir(root)


@functools.lru_cache(maxsize=1)
def say_once(confinement: Optional[Confinement]) -> None:
    """The one line a process prints about the confinement model code runs under."""
    what = confinement.description if confinement else "no OS confinement (rlimits only), as allowed"
    print(f"automanual: model-written code runs confined: {what}" if confinement
          else f"automanual: model-written code runs with {what}", file=sys.stderr, flush=True)


@functools.lru_cache(maxsize=1)
def probe() -> Confinement:
    """Whether this platform confines the child: a trial process, once per process."""
    if sys.platform != "linux":
        return Confinement(False, f"no OS confinement on {sys.platform} (Linux namespaces needed)")
    try:
        proc = popen([os.path.realpath(sys.executable), "-I", "-S", "-c", _PROBE],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={}, close_fds=True)
        out, err = proc.communicate(timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return Confinement(False, f"no OS confinement: {exc}")
    if proc.returncode != 0 or out.split()[1:] != [b"/work", b"False", b"True"]:
        why = (err.decode(errors="replace").strip().splitlines() or ["it did not start"])[-1]
        return Confinement(False, f"no OS confinement: {why[:200]}")
    user = "uid nobody" if out.split()[0] == str(_NOBODY).encode() else "a user namespace"
    return Confinement(True, f"PID, IPC, network and mount namespaces, a read-only view of "
                             f"the interpreter only, {user}")


# What the probe runs confined: its uid, its folder, whether the host's /etc is in view, and
# whether its first child is PID 1 (a PID namespace of its own).
_PROBE = """
import os
child = os.fork()
if child == 0:
    os._exit(0 if os.getpid() == 1 else 1)
print(os.getuid(), os.getcwd(), os.path.exists('/etc'), os.waitpid(child, 0)[1] == 0)
"""
