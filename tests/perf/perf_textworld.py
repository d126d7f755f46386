"""ALFWorld and TextWorld cooking: lifebench against bare textworld loops on the same games.

For each benchmark, the walkthrough (oracle) over the same games, timed three ways:
  1. lifebench: the real runner in-process (episode loop, records fsync'd, trajectories),
  2. a bare loop over textworld as shipped: `textworld.start` on each game (with alfworld's
     demangler for ALFWorld), `reset`, `step` per walkthrough command,
  3. (ALFWorld) the same bare loop on the engine with lifebench's speedups, so that
     (1) vs (3) is the harness's own overhead per step.
It prints steps/s (stepping only) and resets/s (loading a game and resetting it) of each,
and the ratios. Target: lifebench's overhead per step at most 10% (1 vs the bare loop on
the same engine: 3 for ALFWorld, 2 for TextWorld, whose engine lifebench does not change).
Rounds are interleaved and the best of each is kept.

    LIFEBENCH_DATA=../shared/data python tests/perf/perf_textworld.py [--alfworld-games N]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from unittest import mock


import textworld  # noqa: E402
from alfworld.agents.environment.alfred_tw_env import AlfredDemangler  # noqa: E402

import lifebench.runner.unit  # noqa: E402
from lifebench.benchmarks.alfworld import AlfworldBenchmark, speedups  # noqa: E402
from lifebench.benchmarks.alfworld.env import AlfworldEnv  # noqa: E402
from lifebench.benchmarks.textworld import TextWorldBenchmark  # noqa: E402
from lifebench.benchmarks.textworld.env import CookingEnv, jericho_seed  # noqa: E402
from lifebench.api import Budget  # noqa: E402
from lifebench.runner.run import execute  # noqa: E402
from lifebench.config.run import ExecutionConfig, RunConfig  # noqa: E402


@dataclass
class Timing:
    steps: int = 0
    resets: int = 0
    stepping_s: float = 0.0
    resetting_s: float = 0.0
    wins: int = 0

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.stepping_s

    @property
    def resets_per_s(self) -> float:
        return self.resets / self.resetting_s


def best(timings: list[Timing]) -> Timing:
    return Timing(timings[0].steps, timings[0].resets, min(t.stepping_s for t in timings),
                  min(t.resetting_s for t in timings), timings[0].wins)


def bare_loop(games: list[Path], start) -> Timing:
    timing = Timing()
    for game in games:
        began = time.perf_counter()
        env, state = start(game)
        stepped = time.perf_counter()
        timing.resetting_s += stepped - began
        timing.resets += 1
        walkthrough = state["extra.walkthrough"]
        for command in walkthrough:
            state, _, done = env.step(command)
            timing.steps += 1
            if done:
                break
        timing.stepping_s += time.perf_counter() - stepped
        timing.wins += int(bool(state["won"]))
        env.close()
    return timing


def start_alfworld(game: Path):
    env = textworld.start(str(game), textworld.EnvInfos(won=True, extras=["walkthrough"]),
                          wrappers=[AlfredDemangler(shuffle=False)])
    return env, env.reset()


def start_cooking(game: Path):
    infos = textworld.EnvInfos(score=True, max_score=True, won=True, lost=True,
                               extras=["walkthrough"])
    env = textworld.start(str(game), infos)
    env.seed(jericho_seed(0))
    return env, env.reset()


def lifebench_loop(benchmark: str, split: str, instance_ids: list[str], env_cls) -> Timing:
    """The real runner in this process; episode and reset times come from wrapping the
    runner's episode function and the adapter's reset."""
    durations = {"episodes": 0.0, "resets": 0.0}

    def timed(key, fn):
        def wrapper(*args, **kwargs):
            began = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                durations[key] += time.perf_counter() - began
        return wrapper

    timing = Timing()
    with tempfile.TemporaryDirectory() as out, \
            mock.patch.object(lifebench.runner.unit, "play_episode", timed("episodes", lifebench.runner.unit.play_episode)), \
            mock.patch.object(env_cls, "reset", timed("resets", env_cls.reset)):
        spec = RunConfig(benchmarks=(benchmark,), methods=("oracle",), splits={benchmark: (split,)},
                       instances=tuple(instance_ids), budgets=(Budget(200),))
        outcome = execute(spec, ExecutionConfig(out=out, workers=0, progress=False,
                                           trajectories=True))
        records = [json.loads(line) for line in (Path(out) / "episodes.jsonl").read_text().splitlines()]
    timing.steps = sum(r["steps"] for r in records)
    timing.resets = len(records)
    timing.wins = outcome.successes
    timing.resetting_s = durations["resets"]
    timing.stepping_s = durations["episodes"] - durations["resets"]
    return timing


def report(title: str, contenders: dict[str, Timing], same_engine: str, shipped: str) -> None:
    print(title)
    for name, t in contenders.items():
        print(f"  {name:46s} {t.steps_per_s:8.1f} steps/s  {t.resets_per_s:7.2f} resets/s  "
              f"({t.steps} steps, {t.resets} games, {t.wins} won)")
    lb = contenders["lifebench (oracle, in-process runner)"]
    ref, raw = contenders[same_engine], contenders[shipped]
    overhead = ref.steps_per_s / lb.steps_per_s - 1
    print(f"  lifebench / bare loop as shipped:  steps {lb.steps_per_s / raw.steps_per_s:5.2f}x, "
          f"resets {lb.resets_per_s / raw.resets_per_s:5.2f}x")
    print(f"  lifebench overhead per step vs the bare loop on the same engine: {overhead:+.1%} "
          f"(target <= +10%: {'met' if overhead <= 0.10 else 'NOT met'})")


def with_speedups(on: bool, fn, *args):
    (speedups.enable if on else speedups.disable)()
    try:
        return fn(*args)
    finally:
        speedups.enable()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--alfworld-games", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    alfworld = AlfworldBenchmark().instances("valid_unseen")[: args.alfworld_games]
    alf_games = [i.payload for i in alfworld]
    cooking = TextWorldBenchmark().instances("ige-cooking")
    cook_games = [i.payload for i in cooking]

    runs: dict[str, list[Timing]] = {}
    for _ in range(args.rounds):
        for name, fn in {
            "alf:lifebench": lambda: lifebench_loop("alfworld", "valid_unseen",
                                                    [i.instance_id for i in alfworld], AlfworldEnv),
            "alf:shipped": lambda: with_speedups(False, bare_loop, alf_games, start_alfworld),
            "alf:same": lambda: with_speedups(True, bare_loop, alf_games, start_alfworld),
            "tw:lifebench": lambda: lifebench_loop("textworld", "ige-cooking",
                                                   [i.instance_id for i in cooking], CookingEnv),
            "tw:shipped": lambda: bare_loop(cook_games, start_cooking),
        }.items():
            runs.setdefault(name, []).append(fn())

    report(f"ALFWorld valid_unseen, walkthrough over {len(alf_games)} games, one process, "
           f"best of {args.rounds}", {
               "lifebench (oracle, in-process runner)": best(runs["alf:lifebench"]),
               "bare textworld loop, as shipped": best(runs["alf:shipped"]),
               "bare textworld loop, lifebench's speedups": best(runs["alf:same"]),
           }, same_engine="bare textworld loop, lifebench's speedups",
           shipped="bare textworld loop, as shipped")
    report(f"TextWorld ige-cooking, walkthrough over {len(cook_games)} games, one process, "
           f"best of {args.rounds}", {
               "lifebench (oracle, in-process runner)": best(runs["tw:lifebench"]),
               "bare textworld loop, as shipped": best(runs["tw:shipped"]),
           }, same_engine="bare textworld loop, as shipped", shipped="bare textworld loop, as shipped")


if __name__ == "__main__":
    main()
