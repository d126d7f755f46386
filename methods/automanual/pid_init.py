"""The init of a sandbox's PID namespace (standard library only: its source is prepended to
the sandbox child's, as harden.py's is).

`confine.preexec` unshares the PID namespace, which only takes effect for the next child:
the process the parent started (the outer process) stays outside. So
`enter_pid_namespace()` forks twice, and returns in the last process only:
- the outer process waits for the init; a SIGTERM to it (the parent's way to end the
  sandbox, `sandbox._kill`) kills the init, and the kernel then kills everything in the
  namespace; it exits as the init did;
- the init is PID 1 of the namespace, in a session of its own: it forks the plan's process,
  reaps it, forwards the signals it gets to it, and exits as it did; it dies with the outer
  process (its parent-death signal);
- the plan's process (PID 2) sees no process but the init and itself, and is not dumpable
  from its start: it is forked from a process that was made not dumpable before the first
  fork, and never runs exec; it dies with the init (its parent-death signal), as the init
  dies with the outer process, and the outer process with the harness's worker
  (`confine.preexec`): SIGKILL the worker and no sandbox process is left.
Only the plan's process keeps the pipes (stdin and stdout): the parent sees the end of the
stream as soon as it ends.
"""

import os
import signal

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
              signal.SIGUSR2)


def _exit_as(status):
    code = os.waitstatus_to_exitcode(status)
    os._exit(code if code >= 0 else 128 - code)


def _supervise(child, on_signal):
    """Reap children until `child` ends, with `on_signal` handling the forwarded signals
    (blocked since before the fork); then exit as it did."""
    for fd in (0, 1):  # the plan's process alone holds the pipes
        try:
            os.close(fd)
        except OSError:
            pass
    for number in _FORWARDED:
        signal.signal(number, on_signal)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _FORWARDED)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(1)
        if pid == child:
            _exit_as(status)


def _forked():
    """fork(): in the parent the child's pid; in the child 0, with the forwarded signals
    back to their defaults and unblocked."""
    pid = os.fork()
    if pid == 0:
        for number in _FORWARDED:
            signal.signal(number, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _FORWARDED)
    return pid


def enter_pid_namespace(prctl):
    """Fork the init and the plan's process (see the module's docstring); returns in the
    plan's process only. `prctl`: libc's (harden.libc_prctl)."""
    if prctl is None or prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        os._exit(1)  # not dumpable from the first fork on, or no sandbox at all
    signal.pthread_sigmask(signal.SIG_BLOCK, _FORWARDED)
    alive, outer_alive = os.pipe()  # the outer process holds the write end until it dies
    init = os.fork()
    if init:
        os.close(alive)
        _supervise(init, lambda number, frame: os.kill(init, signal.SIGKILL))
    os.close(outer_alive)
    if prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        os._exit(1)
    os.set_blocking(alive, False)
    try:
        if os.read(alive, 1) == b"":  # the outer process died before the signal was set
            os._exit(1)
    except BlockingIOError:
        pass  # alive: from now on its death kills this process
    os.setsid()  # signals to the process group reach the namespace only
    plan = _forked()
    if plan:
        os.close(alive)
        _supervise(plan, lambda number, frame: os.kill(plan, number))
    os.close(alive)
    if prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0 or os.getppid() != 1:
        os._exit(1)  # no parent-death signal, or the init died before it was set
