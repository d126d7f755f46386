"""Crafter: steps/s of lifebench's text adapter against crafter's stock environment.

Both play the same uniform-random action sequences on the same worlds (seeds-100's first
worlds), stepping only (world generation is timed apart: it is the same code in both,
and lifebench caches generated worlds per worker). Contenders:
  1. stock: `crafter.Env` as shipped, rendering its 64x64 image every step (what a
     pixel agent or a wrapper that does not switch it off pays),
  2. bare: `crafter.Env` with its image and semantic map switched off: the engine alone,
     observing nothing (issue 54's "bare Crafter"),
  3. lifebench: `CrafterEnv` (text observation built every step, no image).
Targets: lifebench >= 3x stock, and >= 0.95x bare (the text view at the engine's speed).
Rounds are interleaved; the best of each is kept.

    python tests/perf/perf_crafter.py [--worlds N] [--steps N]
"""

from __future__ import annotations

import argparse
import random
import time


import crafter  # noqa: E402

from lifebench.benchmarks.crafter.env import CrafterEnv  # noqa: E402
from lifebench.benchmarks.crafter.text import ACTION_NAMES  # noqa: E402


def plan(world: int, steps: int) -> list[int]:
    rng = random.Random(world)
    return [rng.randrange(len(ACTION_NAMES)) for _ in range(steps)]


def stock(worlds: list[int], steps: int) -> tuple[int, float, float]:
    taken, stepping, generating = 0, 0.0, 0.0
    for world in worlds:
        began = time.perf_counter()
        env = crafter.Env(seed=world)
        env.reset()
        started = time.perf_counter()
        generating += started - began
        for action in plan(world, steps):
            _, _, done, _ = env.step(action)
            taken += 1
            if done:
                break
        stepping += time.perf_counter() - started
    return taken, stepping, generating


def bare(worlds: list[int], steps: int) -> tuple[int, float, float]:
    taken, stepping, generating = 0, 0.0, 0.0
    for world in worlds:
        began = time.perf_counter()
        env = crafter.Env(seed=world)
        env._obs = lambda: None  # as lifebench's engine: no image, no semantic map
        env._sem_view = lambda: None
        env.reset()
        started = time.perf_counter()
        generating += started - began
        for action in plan(world, steps):
            _, _, done, _ = env.step(action)
            taken += 1
            if done:
                break
        stepping += time.perf_counter() - started
    return taken, stepping, generating


def lifebench(worlds: list[int], steps: int) -> tuple[int, float, float]:
    taken, stepping, generating = 0, 0.0, 0.0
    for world in worlds:
        began = time.perf_counter()
        env = CrafterEnv(world, 10000)
        env.reset()
        started = time.perf_counter()
        generating += started - began
        for action in plan(world, steps):
            step = env.step(ACTION_NAMES[action])
            taken += 1
            if step.done:
                break
        stepping += time.perf_counter() - started
    return taken, stepping, generating


def gap(worlds: list[int], steps: int) -> list[tuple[str, float]]:
    """The shares of a lifebench step's time: crafter's own step, the text observation,
    and the adapter's bookkeeping around them."""
    import cProfile
    import pstats

    lifebench(worlds, 1)  # every world made: only stepping is profiled
    profile = cProfile.Profile()
    profile.enable()
    lifebench(worlds, steps)
    profile.disable()
    stats = pstats.Stats(profile).stats
    total = sum(row[2] for row in stats.values())

    def cumulative(path_end: str, name: str) -> float:
        return sum(row[3] for (path, _, fn), row in stats.items()
                   if path.endswith(path_end) and fn == name)

    engine = cumulative("site-packages/crafter/env.py", "step")
    text = cumulative("benchmarks/crafter/text.py", "observe")
    return [("crafter's Env.step (the engine)", 100 * engine / total),
            ("the text observation (text.observe)", 100 * text / total),
            ("the adapter and the driver loop", 100 * (total - engine - text) / total)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--worlds", type=int, default=8)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    worlds = list(range(args.worlds))
    contenders = {"stock": stock, "bare": bare, "lifebench": lifebench}
    results: dict[str, list[tuple[int, float, float]]] = {name: [] for name in contenders}
    for _ in range(args.rounds):
        for name, play in contenders.items():
            results[name].append(play(worlds, args.steps))
    rates = {}
    print(f"Crafter: random actions on {len(worlds)} worlds (up to {args.steps} steps each), "
          f"one process, best of {args.rounds}")
    for name, label in (("stock", "crafter.Env as shipped, rendering"),
                        ("bare", "crafter.Env, no image nor semantic map"),
                        ("lifebench", "lifebench text adapter, no image")):
        runs = results[name]
        steps = runs[0][0]
        stepping = min(r[1] for r in runs)
        generating = min(r[2] for r in runs)
        rates[name] = steps / stepping
        print(f"  {label:36s} {rates[name]:8.0f} steps/s ({steps} steps); world setup "
              f"{generating / len(worlds) * 1000:7.1f} ms/world")
    ratio = rates["lifebench"] / rates["stock"]
    print(f"  lifebench / stock = {ratio:.2f}x (target >= 3x: {'met' if ratio >= 3 else 'NOT met'})")
    engine = rates["lifebench"] / rates["bare"]
    print(f"  lifebench / bare = {engine:.2f}x (target >= 0.95x: "
          f"{'met' if engine >= 0.95 else 'NOT met'})")
    print("  what a lifebench step is made of (a profile of the stepping, worlds already made):")
    for part, share in gap(worlds, args.steps):
        print(f"    {share:5.1f}%  {part}")
    print("  (world setup: the stock env generates every world; lifebench generates each once "
          "per worker and restores a copy after that)")


if __name__ == "__main__":
    main()
