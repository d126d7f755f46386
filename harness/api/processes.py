"""A process's lifetime tied to its parent's: a worker, a server or a command started by a
lifebench process never outlives it."""

from __future__ import annotations

import ctypes
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def die_with_parent(how: signal.Signals = signal.SIGKILL, parent: int = 0) -> None:
    """Linux: the kernel sends `how` to this process when its parent dies, even by SIGKILL.
    `parent`: the pid expected as the parent; if it is already gone (the signal was set too
    late to fire), this process ends now. Elsewhere: nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, how)
    except OSError:
        return
    if parent and os.getppid() != parent:
        os._exit(1)
