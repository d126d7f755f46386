"""InstructRAG's meta-training without the LLM: what one iteration costs in the learner
itself (retrieval, adaptation, the encoders' forward and backward passes), where that time
goes, and how far training moves the agents.

The world is the scripted one of tests/methods/instructrag (`heating_world`), with the real
all-MiniLM-L6-v2 in place of the bag of words: "heat the X" is solved by a path that warms
X and burns nothing; the scripted model (`heated`) plays a path in no time, so what is
timed is the learner's own work, which a real run adds to its LLM episodes. It has one
query task, 12 foods' questions to train on and 4 held out, scored after the few-shot stage.

Prints:
  1. seconds per meta-training iteration (the method's defaults: K=3, B=2, 5 inner steps,
     3 tasks a batch; `iterations` fixed, no plateau stop) with the self-attention encoder
     and with the MLP variant, and their ratio;
  2. the profile of the attention encoder's iterations: the functions with the most time;
  3. meta-training at the method's defaults (B=2 questions of each of up to 3 tasks: 2 an
     iteration here; Adam at the paper's 0.001; the stopping rule; the cap of 200), then the
     same with the cap at `--long-cap` (where the rule alone stops it): iterations run, why
     it stopped, the mean reward of the first and last 25 iterations, the lines of the
     rule's last look (window: slope an iteration, its bound), the few-shot-adapted success
     on the held-out questions before and after, and the RL-Agent's and ML-Agent's distance
     from their start at iteration 10 and at the end.

    python tests/perf/perf_instructrag_training.py [--iterations 10] [--long-cap 600]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "methods" / "instructrag"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from lifebench.api import Instance  # noqa: E402
from lifebench.embeddings import get_embedder  # noqa: E402
from lifebench.methods.instructrag import matcher, policy  # noqa: E402
from lifebench.methods.instructrag.encoders import make_encoder  # noqa: E402
from lifebench.methods.instructrag.graph import InstructionGraph  # noqa: E402
from lifebench.methods.instructrag.nn import Adam  # noqa: E402
from lifebench.methods.instructrag import InstructRagConfig  # noqa: E402
from lifebench.methods.instructrag.training import (Agents, Hyper, Learner, Question,  # noqa: E402
                                                    Switches)

FOODS = ["apple", "bread", "cake", "egg", "fish", "ham", "pie", "rice", "soup", "tofu",
         "potato", "tomato", "lettuce", "mug of milk", "pan of beans", "bowl of pasta"]
HELD_OUT = 4  # the last foods' questions are scored, never trained on
DEFAULTS = InstructRagConfig()  # the method's cap (`iterations`) and tasks a batch


def world(seed: int, encoder_name: str, hyper: Hyper) -> tuple[Learner, dict, dict, dict]:
    embedder = get_embedder()
    graph = InstructionGraph(embedder.embed, 0.9)
    support: dict[str, list[Question]] = {"heat": [], "burn": []}
    for food in FOODS:
        start = (f"take the {food} from the countertop", f"warm the {food} in the microwave")
        for task, text, end in (("heat", f"heat some {food} and put it on the table",
                                 f"put the {food} on the dining table"),
                                ("burn", f"burn the {food} until it is ash",
                                 f"heat the {food} again until it burns")):
            graph.insert_path(start + (end,), task, text)
            support[task].append(Question(task, text, Instance(food), "toy", start + (end,)))
    asked = [Question("heat", f"please heat the {f} and serve it", Instance(f), "toy") for f in FOODS]
    query, held_out = {"heat": asked[:-HELD_OUT]}, {"heat": asked[-HELD_OUT:]}
    rng = random.Random(seed)
    encoder = make_encoder(encoder_name, embedder)
    agents = Agents(policy.init_policy(rng), matcher.init_matcher(rng, encoder),
                    Adam(hyper.beta), Adam(hyper.beta))
    return Learner(graph, agents, Switches(), hyper, rng, encoder), support, query, held_out


def heated(question: Question, path: tuple[str, ...]) -> float:
    food = question.text.removeprefix("please heat the ").removesuffix(" and serve it")
    return float(f"warm the {food} in the microwave" in path
                 and not any("burn" in step for step in path))


def adapted_success(learner: Learner, support: dict, questions: dict) -> float:
    rl, ml = learner.few_shot({"heat": support["heat"]}, heated)["heat"]
    found = []
    for question in questions["heat"]:
        retrieval = learner.retrieve(question.text, rl, sample=False)
        chosen = learner.choose(question.text, retrieval.paths, ml)
        found.append(heated(question, retrieval.paths[chosen]) if chosen >= 0 else 0.0)
    return float(np.mean(found))


def per_iteration(encoder: str, iterations: int) -> float:
    learner, support, query, _ = world(0, encoder, Hyper(encoder=encoder, plateau_slope=0))
    learner.meta_train(support, query, heated, 1, 3)  # token states and vectors cached
    started = time.perf_counter()
    learner.meta_train(support, query, heated, iterations, 3)
    return (time.perf_counter() - started) / iterations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--long-cap", type=int, default=600)
    args = parser.parse_args()

    print("1. seconds per meta-training iteration (K=3, B=2, 5 inner steps, 3 tasks a batch)")
    seconds = {name: per_iteration(name, args.iterations) for name in ("attention", "mlp")}
    for name, value in seconds.items():
        print(f"   {name:9s} {value:.3f} s")
    print(f"   attention / mlp: {seconds['attention'] / seconds['mlp']:.2f}x")

    print("\n2. where the attention encoder's iterations go (top 8 by own time)")
    learner, support, query, _ = world(0, "attention", Hyper(plateau_slope=0))
    learner.meta_train(support, query, heated, 1, 3)
    profile = cProfile.Profile()
    profile.runcall(learner.meta_train, support, query, heated, args.iterations, 3)
    stats = pstats.Stats(profile)
    total = stats.total_tt  # type: ignore[attr-defined]
    rows = sorted(stats.stats.items(), key=lambda item: -item[1][2])[:8]  # type: ignore[attr-defined]
    for (path, line, function), (_, calls, own, cumulative, _) in rows:
        print(f"   {own / total:6.1%} own, {cumulative / total:6.1%} with callees, {calls:7d} calls  "
              f"{Path(path).name}:{line} {function}")

    print("\n3. meta-training until the stopping rule or the cap, over seeds 0-2")
    for cap in (DEFAULTS.iterations, args.long_cap):
        for seed in range(3):
            train_to_the_stop(seed, cap)


def train_to_the_stop(seed: int, cap: int) -> None:
    learner, support, query, held_out = world(seed, "attention", Hyper())
    before = adapted_success(learner, support, held_out)
    started = time.perf_counter()
    log = learner.meta_train(support, query, heated, cap, DEFAULTS.tasks_per_batch)
    took = time.perf_counter() - started
    curve = log.curve
    at10 = (curve["rl_distance"][9], curve["ml_distance"][9]) if log.iterations >= 10 else (0, 0)
    lines = ", ".join(f"{fit['window']}: {fit['slope']:+.4f} ({fit['upper']:+.4f})" for fit in log.trend)
    print(f"   cap {cap}, seed {seed}: {log.iterations:4d} iterations ({log.stop}, {took:.0f} s); "
          f"reward {np.mean(curve['reward'][:25]):.2f} -> {np.mean(curve['reward'][-25:]):.2f}; "
          f"last look {lines}; held-out success {before:.2f} -> "
          f"{adapted_success(learner, support, held_out):.2f}; distance from start at 10 / at the "
          f"end: RL-Agent {at10[0]:.3f} / {curve['rl_distance'][-1]:.3f}, ML-Agent "
          f"{at10[1]:.3f} / {curve['ml_distance'][-1]:.3f}", flush=True)


if __name__ == "__main__":
    main()
