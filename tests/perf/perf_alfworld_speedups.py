"""ALFWorld's parse memos (issue 54: `benchmarks/alfworld/speedups.py` items 4 and 5, the
conjunctive queries and the game logic's grammar): oracle episodes a second over 20
`valid_unseen` games with one worker, with them against without them (the other speedups
on in both), in alternating passes of one process; then a profile of a pass with them, and
the share of its time in tatsu (the grammar parser), which the issue's profile put at a
third. Target: tatsu under 10%.

    python tests/perf/perf_alfworld_speedups.py [--games 20] [--rounds 2]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time

from textworld.envs.pddl import logic as pddl_logic
from textworld.logic import Rule

from lifebench import registry
from lifebench.benchmarks.alfworld import speedups


def play_all(bench, instances) -> int:
    """Each game's oracle to the end (its walkthrough): the steps played."""
    steps = 0
    for instance in instances:
        env = bench.make_env(instance, 0)
        observation = env.reset()
        oracle = bench.oracle(env)
        for _ in range(bench.default_budget):
            step = env.step(oracle.next_action(observation))
            observation, steps = step.observation, steps + 1
            if step.done:
                break
        env.close()
    return steps


def new_memos(on: bool) -> None:
    """Items 4-5 of the speedups on or off (1-3 stay on); their memos emptied."""
    speedups.enable()
    if not on:
        Rule.parse_conjunctive_query = speedups._ORIGINAL["query"]
        pddl_logic._parse_and_convert = speedups._ORIGINAL["logic_parse"]
    speedups._queries.clear()
    speedups._logics.clear()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    bench = registry.get_benchmark("alfworld")
    instances = bench.instances("valid_unseen")[:args.games]
    new_memos(True)
    play_all(bench, instances)  # warm the engines' imports and files
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.rounds):
        for on in (False, True):
            new_memos(on)
            started = time.perf_counter()
            play_all(bench, instances)
            times[on].append(time.perf_counter() - started)
    rate = {on: len(instances) / statistics.median(t) for on, t in times.items()}
    print(f"{len(instances)} games, oracle to the end, one worker, {args.rounds} alternating rounds")
    print(f"without the parse memos: {rate[False]:.2f} episodes/s")
    print(f"with them:               {rate[True]:.2f} episodes/s ({rate[True] / rate[False]:.2f}x)")
    new_memos(True)
    profile = cProfile.Profile()
    profile.enable()
    play_all(bench, instances)
    profile.disable()
    stats = pstats.Stats(profile).stats
    total = sum(tottime for _, _, tottime, _, _ in stats.values())
    tatsu = sum(row[2] for (path, _, _), row in stats.items() if "/tatsu/" in path)
    print(f"profile of a pass with them: {100 * tatsu / total:.1f}% of the time in tatsu "
          f"(target < 10%)")
    top = sorted(stats.items(), key=lambda kv: kv[1][3], reverse=True)
    print("largest cumulative costs:")
    for (path, line, name), row in top[:12]:
        print(f"  {row[3]:7.2f} s  {path.split('site-packages/')[-1]}:{line} {name}")


if __name__ == "__main__":
    main()
