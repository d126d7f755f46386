"""Streams as greenlets on one thread: `--scheduler greenlets`.

An LLM-bound stream spends nearly all its time waiting for the model server. With one OS
thread per stream, every wait and wake-up is a hand-off of the GIL between hundreds of
threads: at 256 streams about 30 context switches and 0.3 ms of kernel time per LLM call,
as much as the harness's own work (tests/perf/perf_llm_concurrency.py). Here every stream
is a greenlet of one thread, and the `Hub` switches between them where they wait: the LLM
client's socket reads (`wait_readable`), its backoff and slot waits (`sleep`). A switch is
a microsecond and no system call.

What does not wait through the hub blocks the thread, and so every stream of it: a CPU-bound
environment step is no worse off than under the GIL, but a simulator behind a socket
(ScienceWorld's JVM) is, so threads stay the default. Without a running hub, `wait_readable`
and `sleep` are the plain blocking calls: the same code serves both schedulers.

Greenlets of one thread share its `threading.local`: a plugin that keeps something per
stream played at once (an engine, a simulator) keys it on `current_stream()` or keeps it
in a `StreamLocal`, which are per greenlet under a hub and per thread elsewhere.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import select
import selectors
import threading
import time
import weakref
from typing import Any, Callable, Optional

SCHEDULERS = ("threads", "greenlets")

_local = threading.local()


class Hub:
    """Runs greenlets on this thread until all have ended; errors they raise are kept and
    the first is raised by `run` once the others are done (as futures would)."""

    def __init__(self) -> None:
        import greenlet

        self._greenlet = greenlet
        self._readiness = _OneShot()
        self._by_fd: dict[int, Any] = {}  # descriptor -> the greenlet waiting on it
        self._ready: collections.deque[tuple[Any, Any]] = collections.deque()
        self._timers: list[tuple[float, int, Any]] = []  # (deadline, sequence, greenlet)
        self._waiting: dict[Any, tuple[int, Optional[int]]] = {}  # greenlet -> (sequence, fd)
        self._sequence = itertools.count()
        self._alive = 0
        self.errors: list[BaseException] = []
        self._loop: Any = None

    def spawn(self, function: Callable[..., Any], *args: Any) -> None:
        def body(*_started: Any) -> None:  # the first switch passes its value
            try:
                function(*args)
            except BaseException as exc:  # kept for run(); the others go on
                self.errors.append(exc)
            finally:
                self._alive -= 1

        self._alive += 1
        glet = self._greenlet.greenlet(body)
        if self._loop is not None:  # ends back in the loop, whoever spawned it
            glet.parent = self._loop
        self._ready.append((glet, None))

    def run(self) -> None:
        """Until every greenlet has ended (they may spawn others)."""
        self._loop = self._greenlet.getcurrent()
        for glet, _ in self._ready:  # spawned before run, from this greenlet: ends here
            glet.parent = self._loop
        previous, _local.hub = getattr(_local, "hub", None), self
        try:
            while self._alive:
                while self._ready:
                    glet, value = self._ready.popleft()
                    glet.switch(value)
                if self._alive:
                    self._wait_for_events()
        finally:
            _local.hub = previous
            self._readiness.close()
        if self.errors:
            raise self.errors[0]

    def _wait_for_events(self) -> None:
        timeout = max(0.0, self._timers[0][0] - time.monotonic()) if self._timers else None
        if timeout is None and not self._waiting:
            raise RuntimeError("every stream waits and nothing can wake them")
        for fd in self._readiness.wait(timeout):
            glet = self._by_fd.get(fd)
            if glet is not None:  # else: a wait that timed out already
                self._wake(glet, True)
        now = time.monotonic()
        while self._timers and self._timers[0][0] <= now:
            _, sequence, glet = heapq.heappop(self._timers)
            waiting = self._waiting.get(glet)
            if waiting is not None and waiting[0] == sequence:
                self._wake(glet, False)

    def _wake(self, glet: Any, value: bool) -> None:
        _, fd = self._waiting.pop(glet)
        if fd is not None:
            del self._by_fd[fd]
            self._readiness.done(fd)
        self._ready.append((glet, value))

    def _park(self, fileobj: Any, timeout: Optional[float]) -> bool:
        """Suspend the calling greenlet until `fileobj` is readable (True) or `timeout`
        seconds pass (False)."""
        glet = self._greenlet.getcurrent()
        sequence = next(self._sequence)
        fd = None if fileobj is None else fileobj.fileno()
        self._waiting[glet] = (sequence, fd)
        if fd is not None:
            self._by_fd[fd] = glet
            self._readiness.arm(fd)
        if timeout is not None:
            heapq.heappush(self._timers, (time.monotonic() + timeout, sequence, glet))
        return bool(self._loop.switch())

    def in_stream(self) -> bool:
        return self._greenlet.getcurrent() is not self._loop


class _OneShot:
    """Readiness of descriptors, armed for one wait at a time. On Linux an epoll in one-shot
    mode: a descriptor stays registered between waits and a wait costs one system call (a
    socket closed leaves the set by itself); elsewhere a selector, registered per wait."""

    def __init__(self) -> None:
        self._epoll = select.epoll() if hasattr(select, "epoll") else None
        self._selector = None if self._epoll is not None else selectors.DefaultSelector()
        self._known: set[int] = set()

    def arm(self, fd: int) -> None:
        if self._selector is not None:
            self._selector.register(fd, selectors.EVENT_READ)
            return
        flags = select.EPOLLIN | select.EPOLLONESHOT
        if fd in self._known:
            try:
                self._epoll.modify(fd, flags)
                return
            except FileNotFoundError:  # closed since, and the number given to a new socket
                pass
        try:
            self._epoll.register(fd, flags)
        except FileExistsError:
            self._epoll.modify(fd, flags)
        self._known.add(fd)

    def done(self, fd: int) -> None:
        """The wait on `fd` is over (epoll: one-shot, already disarmed or ignored)."""
        if self._selector is not None:
            self._selector.unregister(fd)

    def wait(self, timeout: Optional[float]) -> list[int]:
        if self._selector is not None:
            return [key.fd for key, _ in self._selector.select(timeout)]
        return [fd for fd, _ in self._epoll.poll(-1 if timeout is None else timeout)]

    def close(self) -> None:
        (self._selector or self._epoll).close()


def current_stream() -> Any:
    """What plays the caller's stream now: its greenlet under a hub, else its thread."""
    hub = _hub()
    return hub._greenlet.getcurrent() if hub is not None else threading.current_thread()


def stream_ended(stream: Any) -> bool:
    """Whether a `current_stream()` has finished (its resources may go to another)."""
    if isinstance(stream, threading.Thread):
        return not stream.is_alive()
    return bool(stream.dead)


class StreamLocal:
    """Attributes per stream (`current_stream()`): a `threading.local` that also tells
    greenlets apart. What a finished stream held is dropped with it."""

    def __init__(self) -> None:
        object.__setattr__(self, "_by_stream", weakref.WeakKeyDictionary())

    @property
    def __dict__(self) -> dict[str, Any]:  # type: ignore[override]
        return self._by_stream.setdefault(current_stream(), {})

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self.__dict__[name] = value


def _hub() -> Optional[Hub]:
    hub = getattr(_local, "hub", None)
    return hub if hub is not None and hub.in_stream() else None


def active() -> bool:
    """Whether the caller is a stream of a running hub."""
    return _hub() is not None


def wait_readable(fileobj: Any, timeout: Optional[float]) -> bool:
    """In a hub's stream: let the others run until `fileobj` is readable (True) or the
    timeout passes (False). Elsewhere: True at once (the caller's read blocks instead)."""
    hub = _hub()
    return True if hub is None else hub._park(fileobj, timeout)


def sleep(seconds: float) -> None:
    """`time.sleep`, letting a hub's other streams run meanwhile."""
    hub = _hub()
    if hub is None:
        time.sleep(seconds)
    else:
        hub._park(None, max(0.0, seconds))
