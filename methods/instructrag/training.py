"""InstructRAG's stages (Section 4.5, Algorithms 2-3) over the graph and the two agents.

Meta-training is first-order MAML: for each sampled task, the agents adapt to it by `inner_steps`
gradient steps (rate alpha) on its support questions (warm start L_WS for the RL-Agent,
pre-training L_PT for the ML-Agent), then the adapted agents play its query questions and
the gradients of L_PG and L_FT taken at the adapted parameters update the shared ones with
Adam (rate beta, the paper's 0.001). The paper's Algorithm 2 differentiates through the
inner step; first-order MAML drops that second-order term (Finn et al. 2017, Section 5.2),
which keeps the networks' gradients hand-written.

Rewards come from `Evaluate`: an LLM episode on the question's instance with a given path in
the prompt, scored by the benchmark (success, or the score scaled to [0, 1]).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np

from lifebench.api import Instance
from lifebench.methods.instructrag import matcher, policy
from lifebench.methods.instructrag.encoders import Encoder
from lifebench.methods.instructrag.graph import InstructionGraph
from lifebench.methods.instructrag.nn import Adam, Params, add_scaled, copy_params, zeros_like
from lifebench.methods.instructrag.prompts import path_text
from lifebench.methods.instructrag.retrieval import (Retrieval, Traversal, greedy_decider,
                                                     sampling_decider, threshold_decider)


@dataclass(frozen=True)
class Question:
    """A question of a task: the episode's task text, its instance (to play it) and, for a
    support question, the successful path that went into the graph."""

    task: str
    text: str
    instance: Instance
    benchmark: str
    path: tuple[str, ...] = ()


Evaluate = Callable[[Question, tuple[str, ...]], float]


@dataclass(frozen=True)
class Switches:
    """The parts Table 5 removes one at a time."""

    graph: bool = True
    rl_agent: bool = True
    warm_start: bool = True
    policy_gradient: bool = True
    ml_agent: bool = True
    pre_training: bool = True
    fine_tuning: bool = True
    meta_learning: bool = True


@dataclass(frozen=True)
class Hyper:
    k_paths: int = 3
    alpha: float = 0.1          # inner-loop (adaptation) rate
    beta: float = 0.001         # Adam's rate (the paper's)
    discount: float = 0.99      # the paper's
    inner_steps: int = 5
    questions_per_task: int = 2  # B
    ws_nodes: int = 4           # nodes sampled per support question for the warm start
    pool_extra: int = 2         # paths of other questions added to the fine-tuning pool
    include_threshold: float = 0.5  # the rule that replaces the RL-Agent (Table 5)
    encoder: str = "attention"  # the ML-Agent's encoders (encoders.py): attention | mlp
    # Meta-training stops when its query reward plateaus: checked every `plateau_window`
    # iterations, the last window's mean reward is not above the one before by
    # `plateau_tolerance` (0: no early stop, every one of the config's `iterations` runs).
    plateau_window: int = 25
    plateau_tolerance: float = 0.01


def plateaued(rewards: Sequence[float], window: int, tolerance: float) -> bool:
    """Whether, at the end of a window of `window` iterations, the mean reward has not risen
    by `tolerance` over the window before. Checked once a window (not every iteration) so
    that a noisy but rising curve is not stopped by its first unlucky window."""
    if window <= 0 or len(rewards) < 2 * window or len(rewards) % window:
        return False
    last, before = np.mean(rewards[-window:]), np.mean(rewards[-2 * window: -window])
    return bool(last < before + tolerance)


# A learning curve's series, per meta-training iteration (`TrainingLog.curve`).
CURVE_SERIES = ("reward", "ws_loss", "pt_loss", "pg_loss", "ft_loss",
                "rl_step", "ml_step", "rl_distance", "ml_distance")


@dataclass
class TrainingLog:
    """What meta-training did: per iteration, the query episodes' mean reward, the losses
    (warm start and pre-training at the shared agents, before adaptation; policy gradient
    and fine-tuning at the adapted ones; None where the stage is switched off), the norm
    of each agent's update and its distance from the start; and why it stopped."""

    curve: dict[str, list[Optional[float]]] = field(
        default_factory=lambda: {name: [] for name in CURVE_SERIES})
    stop: str = ""

    @property
    def iterations(self) -> int:
        return len(self.curve["reward"])


@dataclass
class Counters:
    """What each stage did, for the record and the ablation tests."""

    ws_steps: int = 0
    pt_steps: int = 0
    pg_updates: int = 0
    ft_updates: int = 0
    evaluations: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))


@dataclass
class Agents:
    rl: Params
    ml: Params
    rl_opt: Adam
    ml_opt: Adam
    counters: Counters = field(default_factory=Counters)


class Learner:
    """The graph, the agents and the stages that train them."""

    def __init__(self, graph: InstructionGraph, agents: Agents, switches: Switches, hyper: Hyper,
                 rng: random.Random, encoder: Encoder) -> None:
        self.graph = graph
        self.agents = agents
        self.switches = switches
        self.hyper = hyper
        self.rng = rng
        self.encoder = encoder
        self.baseline = 0.0  # REINFORCE's running reward baseline (Williams 1992)

    # -- retrieval and choice
    def retrieve(self, question: str, rl: Params, sample: bool) -> Retrieval:
        if not self.switches.graph:
            return self._nearest_stored(question)
        probs = lambda state: float(policy.action_probs(rl, state)[0, policy.INCLUDE])
        if not self.switches.rl_agent:
            decide = threshold_decider(self.hyper.include_threshold)
        elif sample:
            decide = sampling_decider(probs, self.rng)
        else:
            decide = greedy_decider(probs)
        return Traversal(self.graph, question).run(decide, self.hyper.k_paths)

    def _nearest_stored(self, question: str) -> Retrieval:
        """Without the graph (Table 5): the K stored paths whose questions are nearest."""
        stored = self.graph.paths
        if not stored:
            return Retrieval()
        vectors = self.graph.embed([p.question for p in stored])
        scores = vectors @ self.graph.embed([question])[0]
        out = Retrieval()
        for index in np.argsort(-scores, kind="stable"):
            path = stored[int(index)].instructions
            if path not in out.paths:
                out.paths.append(path)
            if len(out.paths) == self.hyper.k_paths:
                break
        return out

    def choose(self, question: str, paths: Sequence[tuple[str, ...]], ml: Params) -> int:
        if not paths:
            return -1
        if not self.switches.ml_agent or len(paths) == 1:
            return 0  # the RL-Agent's first path
        return matcher.choose(self.encoder, ml, self.encoder.features([question]),
                              self.encoder.features([path_text(p) for p in paths]))

    # -- support-set losses (inner loop and few-shot adaptation)
    def warm_start_grads(self, rl: Params, support: Sequence[Question]) -> Optional[tuple[float, Params]]:
        """L_WS (Eq. 4) on nodes sampled for each support question, as many on its path
        (label include) as off it (label exclude), and its gradient."""
        states, labels = [], []
        for question in support:
            own = self._own_nodes(question)
            if not own:
                continue
            others = [n for n in range(len(self.graph.nodes)) if n not in own]
            traversal = Traversal(self.graph, question.text, leave_out=question.text)
            picks = [(n, 1) for n in self.rng.sample(sorted(own), min(self.hyper.ws_nodes, len(own)))]
            picks += [(n, 0) for n in self.rng.sample(others, min(self.hyper.ws_nodes, len(others)))]
            for node, label in picks:
                edges = self.graph.in_edges(node)
                edge = [self.rng.choice(edges)] if edges else []
                states.append(traversal.state(node, edge))
                labels.append(label)
        if not states:
            return None
        self.agents.counters.ws_steps += 1
        return policy.weighted_nll(rl, np.vstack(states), np.array(labels), np.ones(len(labels)))

    def pretraining_grads(self, ml: Params, support: Sequence[Question]) -> Optional[tuple[float, Params]]:
        """L_PT (Eq. 9) on the support questions and their paths, and its gradient."""
        pairs = [q for q in support if q.path]
        if len(pairs) < 2:
            return None
        questions = self.encoder.features([q.text for q in pairs])
        paths = self.encoder.features([path_text(q.path) for q in pairs])
        self.agents.counters.pt_steps += 1
        return matcher.pretraining_loss(self.encoder, ml, questions, paths, self.rng)

    def adapt(self, rl: Params, ml: Params, support: Sequence[Question],
              losses: Optional[dict[str, list[float]]] = None) -> tuple[Params, Params]:
        """theta' = theta - alpha grad L_WS, eta' = eta - alpha grad L_PT, `inner_steps` times.
        The first step's losses (at the agents given) go to `losses`."""
        for step in range(self.hyper.inner_steps):
            if self.switches.rl_agent and self.switches.warm_start:
                found = self.warm_start_grads(rl, support)
                if found is not None:
                    if step == 0 and losses is not None:
                        losses["ws_loss"].append(found[0])
                    rl = add_scaled(rl, found[1], -self.hyper.alpha)
            if self.switches.ml_agent and self.switches.pre_training:
                found = self.pretraining_grads(ml, support)
                if found is not None:
                    if step == 0 and losses is not None:
                        losses["pt_loss"].append(found[0])
                    ml = add_scaled(ml, found[1], -self.hyper.alpha)
        return rl, ml

    # -- query-set losses (outer loop), which play episodes
    def play_query(self, rl: Params, ml: Params, question: Question, evaluate: Evaluate,
                   others: Sequence[Question]) -> tuple[Optional[tuple[float, Params]],
                                                        Optional["PoolChoice"], float]:
        """One query question: retrieve (sampling), choose, play. Returns the policy
        gradient's loss and gradient at `rl`, the fine-tuning pool with its best path (each
        of its paths played), and the reward of the chosen path."""
        retrieval = self.retrieve(question.text, rl, sample=True)
        chosen = self.choose(question.text, retrieval.paths, ml)
        path = retrieval.paths[chosen] if chosen >= 0 else ()
        rewards = {path: self._evaluate(evaluate, question, path)}
        pg = None
        if self.switches.rl_agent and self.switches.policy_gradient and retrieval.actions:
            reward = rewards[path]
            returns = policy.discounted_returns(len(retrieval.actions), reward - self.baseline,
                                                self.hyper.discount)
            self.baseline = 0.9 * self.baseline + 0.1 * reward
            pg = policy.weighted_nll(rl, np.vstack(retrieval.states), np.array(retrieval.actions),
                                     returns)
            self.agents.counters.pg_updates += 1
        pool_choice = None
        if self.switches.ml_agent and self.switches.fine_tuning and retrieval.paths:
            pool = list(retrieval.paths)
            extra = [q.path for q in others if q.path and q.path not in pool and q.text != question.text]
            pool += self.rng.sample(extra, min(self.hyper.pool_extra, len(extra)))
            for candidate in pool:
                if candidate not in rewards:
                    rewards[candidate] = self._evaluate(evaluate, question, candidate)
            best = max(range(len(pool)), key=lambda i: (rewards[pool[i]], -i))
            pool_choice = PoolChoice(question.text, tuple(pool), best)
        return pg, pool_choice, rewards[path]

    def finetuning_grads(self, ml: Params, choices: Sequence["PoolChoice"]) -> Optional[tuple[float, Params]]:
        """L_FT (Eq. 10) over a batch of questions (a task's B), so that its path-to-question
        term compares each best path with the batch's other questions."""
        if not choices:
            return None
        self.agents.counters.ft_updates += 1
        return matcher.finetuning_loss(
            self.encoder, ml, self.encoder.features([c.question for c in choices]),
            [self.encoder.features([path_text(p) for p in c.pool]) for c in choices],
            [c.best for c in choices])

    def _evaluate(self, evaluate: Evaluate, question: Question, path: tuple[str, ...]) -> float:
        self.agents.counters.evaluations += 1
        return evaluate(question, path)

    # -- Algorithm 2
    def meta_train(self, support: dict[str, list[Question]], query: dict[str, list[Question]],
                   evaluate: Evaluate, iterations: int, tasks_per_batch: int) -> TrainingLog:
        """At most `iterations` iterations, fewer when the query reward plateaus (Hyper)."""
        log = TrainingLog()
        tasks = sorted(t for t in query if query[t])
        if not tasks:
            log.stop = "no query questions"
            return log
        everyone = [q for qs in support.values() for q in qs]
        start = (copy_params(self.agents.rl), copy_params(self.agents.ml))
        hyper = self.hyper
        for _ in range(iterations):
            before = (copy_params(self.agents.rl), copy_params(self.agents.ml))
            losses: dict[str, list[float]] = {name: [] for name in CURVE_SERIES}
            rl_sum, ml_sum = zeros_like(self.agents.rl), zeros_like(self.agents.ml)
            rewards = []
            for task in self.rng.sample(tasks, min(tasks_per_batch, len(tasks))):
                shots = self._sample(support.get(task, []))
                if self.switches.meta_learning:
                    rl, ml = self.adapt(self.agents.rl, self.agents.ml, shots, losses)
                else:
                    rl, ml = self.agents.rl, self.agents.ml
                choices = []
                for question in self._sample(query[task]):
                    pg, choice, reward = self.play_query(rl, ml, question, evaluate, everyone)
                    rewards.append(reward)
                    if pg is not None:
                        losses["pg_loss"].append(pg[0])
                        rl_sum = add_scaled(rl_sum, pg[1], 1.0)
                    if choice is not None:
                        choices.append(choice)
                ft = self.finetuning_grads(ml, choices)
                if ft is not None:
                    losses["ft_loss"].append(ft[0])
                    ml_sum = add_scaled(ml_sum, ft[1], 1.0)
                if not self.switches.meta_learning:
                    # without meta-learning the support losses train the shared agents directly
                    self._step_support(shots, rl_sum, ml_sum, losses)
            self.agents.rl_opt.step(self.agents.rl, rl_sum)
            self.agents.ml_opt.step(self.agents.ml, ml_sum)
            losses["reward"] = rewards
            point = {name: float(np.mean(values)) if values else None for name, values in losses.items()}
            point.update(rl_step=distance(self.agents.rl, before[0]), ml_step=distance(self.agents.ml, before[1]),
                         rl_distance=distance(self.agents.rl, start[0]),
                         ml_distance=distance(self.agents.ml, start[1]))
            for name in CURVE_SERIES:
                log.curve[name].append(point[name])
            if plateaued(log.curve["reward"], hyper.plateau_window, hyper.plateau_tolerance):  # type: ignore[arg-type]
                log.stop = "plateau"
                return log
        log.stop = "cap"
        return log

    def _step_support(self, shots: Sequence[Question], rl_sum: Params, ml_sum: Params,
                      losses: dict[str, list[float]]) -> None:
        if self.switches.rl_agent and self.switches.warm_start:
            found = self.warm_start_grads(self.agents.rl, shots)
            if found is not None:
                losses["ws_loss"].append(found[0])
                for name in rl_sum:
                    rl_sum[name] += found[1][name]
        if self.switches.ml_agent and self.switches.pre_training:
            found = self.pretraining_grads(self.agents.ml, shots)
            if found is not None:
                losses["pt_loss"].append(found[0])
                for name in ml_sum:
                    ml_sum[name] += found[1][name]

    # -- Algorithm 3
    def few_shot(self, support: dict[str, list[Question]], evaluate: Evaluate) -> dict[str, tuple[Params, Params]]:
        """Per test task: theta'_i = theta - alpha grad L_WS - beta grad L_PG (and likewise eta)
        on its support questions, which are played (never scored)."""
        adapted = {}
        everyone = [q for qs in support.values() for q in qs]
        for task in sorted(support):
            shots = self._sample(support[task])
            if not self.switches.meta_learning:
                continue  # the graph is extended, the agents stay as trained
            rl, ml = self.adapt(self.agents.rl, self.agents.ml, shots)
            rl_grad = zeros_like(rl)
            choices = []
            for question in shots:
                pg, choice, _ = self.play_query(self.agents.rl, self.agents.ml, question, evaluate, everyone)
                if pg is not None:
                    rl_grad = add_scaled(rl_grad, pg[1], 1.0)
                if choice is not None:
                    choices.append(choice)
            ft = self.finetuning_grads(self.agents.ml, choices)
            ml_grad = ft[1] if ft is not None else zeros_like(ml)
            adapted[task] = (add_scaled(rl, rl_grad, -self.hyper.beta),
                             add_scaled(ml, ml_grad, -self.hyper.beta))
        return adapted

    # -- helpers
    def _sample(self, questions: Sequence[Question]) -> list[Question]:
        b = self.hyper.questions_per_task
        return list(questions) if len(questions) <= b else self.rng.sample(list(questions), b)

    def _own_nodes(self, question: Question) -> set[int]:
        for stored in self.graph.paths:
            if stored.question == question.text and stored.task == question.task:
                return set(stored.nodes)
        return set()


@dataclass(frozen=True)
class PoolChoice:
    """A fine-tuning example: a question, its pool of paths (the RL-Agent's candidates and
    other questions' paths) and the index of the pool's best-rewarded path."""

    question: str
    pool: tuple[tuple[str, ...], ...]
    best: int


def distance(params: Params, other: Params) -> float:
    """The Euclidean distance between two parameter sets (all arrays as one vector)."""
    return float(np.sqrt(sum(float(((params[name] - other[name]) ** 2).sum()) for name in params)))
