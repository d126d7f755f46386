"""Make crafter 1.8.3 deterministic, without forking it.

Two things in the package make the same seed and actions give different games:
1. A chunk's objects are kept in a `set`, which iterates in memory-address order; the
   balancing pass that spawns and despawns creatures every 10 steps picks one by its
   position in that order (crafter issue 31). Chunks here keep their objects in insertion
   order (a dict-backed set), so the pick depends only on the game.
2. The night-time noise of the rendered view draws from the world's random generator,
   which also drives creatures and world events (crafter issue 36): rendering or not
   changed the game. The noise here draws from a generator of its own, seeded with the
   world, so images are reproducible too and the game does not depend on them.

`enable()` installs both (the adapter does, on import); `disable()` restores the package.
"""

from __future__ import annotations

import collections
from typing import Any, Iterator

import numpy as np
from crafter import engine

_ORIGINAL = {"reset": engine.World.reset, "noise": engine.LocalView._noise}
# Separates the render noise's seed from the world's own.
_NOISE_SALT = 0x5EED


class InsertionOrderedSet:
    """The part of `set` that crafter's chunks use, iterating in insertion order."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: dict[Any, None] = {}

    def add(self, item: Any) -> None:
        self._items[item] = None

    def remove(self, item: Any) -> None:
        del self._items[item]

    def discard(self, item: Any) -> None:
        self._items.pop(item, None)

    def __contains__(self, item: Any) -> bool:
        return item in self._items

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)


def _reset(self: engine.World, seed: Any = None) -> None:
    _ORIGINAL["reset"](self, seed)
    self._chunks = collections.defaultdict(InsertionOrderedSet)
    self.render_random = np.random.RandomState(
        None if seed is None else (int(seed) ^ _NOISE_SALT) % 2**32)


def _noise(self: engine.LocalView, canvas: np.ndarray, amount: float, stddev: float) -> np.ndarray:
    noise = self._world.render_random.uniform(32, 127, canvas.shape[:2])[..., None]
    mask = amount * self._vignette(canvas.shape, stddev)[..., None]
    return (1 - mask) * canvas + mask * noise


def enable() -> None:
    engine.World.reset = _reset
    engine.LocalView._noise = _noise


def disable() -> None:
    engine.World.reset = _ORIGINAL["reset"]
    engine.LocalView._noise = _ORIGINAL["noise"]


def enabled() -> bool:
    return engine.World.reset is _reset
