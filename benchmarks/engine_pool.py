"""A per-process pool of game engines that are slow to build or to load a game into.

An engine is loaded with one game at a time. `acquire(game)` hands out an idle engine that
already holds the game when there is one, else the least recently used idle engine reloaded
with it, else a new engine; `release` returns it. Envs of one worker (an episode and its
exploration, trials of one instance, successive episodes) thus share engines instead of
building one per episode.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, ClassVar, Generic, Hashable, Optional, TypeVar

from lifebench.api import EnvError

E = TypeVar("E")


class EnginePool(Generic[E]):
    def __init__(self, create: Callable[[], E], load: Callable[[E, Hashable], None],
                 close: Optional[Callable[[E], None]] = None, max_idle: int = 4) -> None:
        self._create = create
        self._load = load
        self._close = close
        self._max_idle = max_idle
        self._idle: list[tuple[Hashable, E]] = []  # least recently used first
        self._lock = threading.Lock()

    def acquire(self, game: Hashable) -> E:
        with self._lock:
            for i, (loaded, engine) in enumerate(self._idle):
                if loaded == game:
                    del self._idle[i]
                    return engine
            engine = self._idle.pop(0)[1] if self._idle else None
        if engine is None:
            engine = self._create()
        self._load(engine, game)
        return engine

    def release(self, game: Hashable, engine: E) -> None:
        """Return an engine still holding `game` (its state may be mid-episode: the next
        user resets it). An engine that failed is not released, only dropped."""
        with self._lock:
            self._idle.append((game, engine))
            evicted = self._idle[:-self._max_idle]
            del self._idle[:-self._max_idle]
        for _, old in evicted:
            if self._close is not None:
                self._close(old)


class PooledEngineEnv:
    """What envs playing on a pooled engine share: every engine call runs under the
    benchmark's engine lock, and an engine that fails is dropped (never returned to its
    pool) and reported as an EnvError, so that the episode is retried on a fresh one.
    Subclasses set `engine_lock` and say what failed (`engine_failure`)."""

    engine_lock: ClassVar[Any]
    _engine: Any = None
    _state: Any = None

    def engine_failure(self) -> str:
        """The start of the EnvError's message, e.g. "ALFWorld engine failed on GAME"."""
        raise NotImplementedError

    def _require(self) -> Any:
        if self._engine is None or self._state is None:
            raise RuntimeError("call reset() before using the environment")
        return self._engine

    def _call(self, fn: Callable[[], Any]) -> Any:
        try:
            with self.engine_lock:
                return fn()
        except EnvError:
            raise
        except Exception as exc:
            self._engine = None  # dropped, not returned to the pool
            raise EnvError(f"{self.engine_failure()} ({type(exc).__name__}: {exc})") from exc
