"""The per-process engine pool that TextWorld and ALFWorld envs share: an idle engine that
holds the game asked for is handed out first, else the least recently used idle one is
reloaded, and idle engines past `max_idle` are closed, oldest first."""

from __future__ import annotations

from lifebench.benchmarks.engine_pool import EnginePool


class Engines:
    """Engines as numbered records of what happened to them."""

    def __init__(self) -> None:
        self.made = 0
        self.loads: list[tuple[int, str]] = []
        self.closed: list[int] = []

    def create(self) -> int:
        self.made += 1
        return self.made

    def load(self, engine: int, game: str) -> None:
        self.loads.append((engine, game))

    def close(self, engine: int) -> None:
        self.closed.append(engine)


def test_an_engine_holding_the_game_is_reused_and_the_oldest_idle_one_reloaded():
    engines = Engines()
    pool = EnginePool(engines.create, engines.load, engines.close, max_idle=2)
    a, b = pool.acquire("g1"), pool.acquire("g2")
    pool.release("g1", a)
    pool.release("g2", b)
    assert pool.acquire("g2") == b  # holds g2 already: no load
    assert pool.acquire("g3") == a  # the idle one, reloaded with g3
    assert engines.loads == [(1, "g1"), (2, "g2"), (1, "g3")] and engines.made == 2


def test_idle_engines_past_the_limit_are_closed_oldest_first():
    engines = Engines()
    pool = EnginePool(engines.create, engines.load, engines.close, max_idle=2)
    held = [pool.acquire(f"g{i}") for i in range(4)]
    for i, engine in enumerate(held):
        pool.release(f"g{i}", engine)
    assert engines.closed == [1, 2]
    assert pool.acquire("g3") == 4 and pool.acquire("g2") == 3 and engines.made == 4
