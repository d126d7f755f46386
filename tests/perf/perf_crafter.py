"""Crafter: steps/s of lifebench's text adapter against crafter's stock environment.

Both play the same uniform-random action sequences on the same worlds (seeds-100's first
worlds), stepping only (world generation is timed apart: it is the same code in both,
and lifebench caches generated worlds per worker). Contenders:
  1. stock: `crafter.Env` as shipped, rendering its 64x64 image every step (what a
     pixel agent or a wrapper that does not switch it off pays),
  2. lifebench: `CrafterEnv` (text observation built every step, no image).
Target: lifebench >= 3x stock. Rounds are interleaved; the best of each is kept.

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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--worlds", type=int, default=8)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    worlds = list(range(args.worlds))
    results: dict[str, list[tuple[int, float, float]]] = {"stock": [], "lifebench": []}
    for _ in range(args.rounds):
        results["stock"].append(stock(worlds, args.steps))
        results["lifebench"].append(lifebench(worlds, args.steps))
    rates = {}
    print(f"Crafter: random actions on {len(worlds)} worlds (up to {args.steps} steps each), "
          f"one process, best of {args.rounds}")
    for name, label in (("stock", "crafter.Env as shipped, rendering"),
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
    print("  (world setup: the stock env generates every world; lifebench generates each once "
          "per worker and restores a copy after that)")


if __name__ == "__main__":
    main()
