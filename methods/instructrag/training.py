"""InstructRAG's stages (Section 4.5, Algorithms 2-3) over the graph and the two agents.

Meta-training is first-order MAML: for each sampled task, the agents adapt to it by `inner_steps`
gradient steps (rate alpha) on its support questions (warm start L_WS for the RL-Agent,
pre-training L_PT for the ML-Agent), then the adapted agents play its query questions and
the gradients of L_PG and L_FT taken at the adapted parameters update the shared ones with
Adam (rate beta, the paper's 0.001). The paper's Algorithm 2 differentiates through the
inner step; first-order MAML drops that second-order term (Finn et al. 2017, Section 5.2),
which keeps the networks' gradients hand-written. Training ends when a trend test says the
query reward has stopped rising (`stopped_rising`), or at the cap.

Rewards come from `Evaluate`: an LLM episode on the question's instance with a given path in
the prompt, scored by the benchmark (success, or the score scaled to [0, 1]). An iteration's
episodes do not depend on one another: each task's random draws, retrievals and choices are
made in the order a loop would make them, and its episodes handed out as a batch
(`StartEpisodes`: on the run's workers) while the next task is planned; then the rewards are
used task by task, in order.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np

from lifebench.api import Instance
from lifebench.embeddings import similarity_scores
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
# hands a batch of (question, path) episodes out; gives the function that waits for their
# rewards, in order
StartEpisodes = Callable[[list[tuple[Question, tuple[str, ...]]]], Callable[[], list[float]]]


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
    # Meta-training stops once its query reward has stopped rising by this much an iteration
    # (0.001: 0.025 per 25 iterations), by the test of `stopped_rising`; 0: no early stop,
    # every one of the config's `iterations` runs.
    plateau_slope: float = 0.001


# When meta-training stops. The paper trains "while not done" (Algorithm 2) and gives no
# number of iterations. An iteration's query reward is the mean of about 6 rewards in [0, 1]
# (the default batch: B=2 questions x 3 tasks), so its noise is up to 0.5 / sqrt(6) = 0.2,
# beside which a rise of 0.001 an iteration is small. The rule therefore tests a trend: at
# every 25th iteration from the 100th (a look) it fits a least-squares line to the rewards of
# the last 100 iterations and one to all the rewards so far, and training stops when either
# line's slope plus PLATEAU_Z standard errors (from the line's residuals: the bound follows
# the curve's own noise) is below `plateau_slope`: the reward is then rising by less than
# that, with 99.5% confidence at that look.
#
# The constants come from a simulation of the default batch's binomial rewards, 20,000
# curves a case (tests/methods/instructrag/test_instructrag_stopping.py runs it with 4,000):
# - PLATEAU_Z: the smallest z, in steps of 0.05, for which curves rising by exactly 0.001 an
#   iteration through the default cap (200 iterations), centred at reward 0.1, 0.2, 0.35,
#   0.5, 0.65, 0.8 or 0.9, are stopped before the cap in at most 4% of runs (3.1-3.7%; the
#   tested bound is 5%, the rest is room for the test's own sampling error). A cap above 200
#   adds looks, each about 0.7% more (6% at 300 iterations).
# - The windows: the last 100 iterations follow a curve that rose and levelled off (a line
#   through all of it would go on rising long after); the line through every iteration is
#   the most one can know of a curve flat from the start. Looks every 25 iterations keep
#   their number, and so the z they need, small. The first look is at 100: with looks from
#   the 50th a curve rising from reward 0 (few successes, skewed noise) was stopped in 5.7%
#   of runs (z = 2.6), against 3.2% from the 100th.
# - What it cannot do, nor can any rule: stop a curve flat at reward 0.5 within 100
#   iterations in 90% of runs while stopping one rising by 0.001 an iteration in at most 5%.
#   The best test of those 100 iterations (Neyman-Pearson, knowing the level) stops the flat
#   one in 41%; this rule stops it in 13% by 100 and 81% before the cap. Within 100 in 90% at
#   every level takes about 8 times the rewards an iteration (48; README, "Until it stops
#   rising").
PLATEAU_FIRST_LOOK = 100
PLATEAU_LOOK_EVERY = 25
PLATEAU_WINDOW = 100
PLATEAU_Z = 2.55


def plateau_windows(iterations: int) -> tuple[int, ...]:
    """The trailing windows (numbers of iterations) whose lines are tested after
    `iterations` iterations: none between looks."""
    if iterations < PLATEAU_FIRST_LOOK or (iterations - PLATEAU_FIRST_LOOK) % PLATEAU_LOOK_EVERY:
        return ()
    return tuple(sorted({min(iterations, PLATEAU_WINDOW), iterations}))


def slope_bounds(rewards: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The least-squares slope of rewards along their last axis (one an iteration) and that
    slope plus PLATEAU_Z standard errors: of one curve, or of each row of many."""
    n = rewards.shape[-1]
    x = np.arange(n) - (n - 1) / 2
    sxx = float(x @ x)
    slope = rewards @ x / sxx
    residuals = rewards - rewards.mean(axis=-1, keepdims=True) - slope[..., None] * x
    stderr = np.sqrt((residuals ** 2).sum(axis=-1) / (n - 2) / sxx)
    return slope, slope + PLATEAU_Z * stderr


def stopped_rising(curves: np.ndarray, least_slope: float) -> np.ndarray:
    """Whether each curve (a row: one reward an iteration, as many as have run) has stopped
    rising by `least_slope` an iteration, by the test above; never while it is 0."""
    stopped = np.zeros(curves.shape[:-1], dtype=bool)
    for window in plateau_windows(curves.shape[-1]) if least_slope > 0 else ():
        stopped |= slope_bounds(curves[..., -window:])[1] < least_slope
    return stopped


def trend(curve: np.ndarray) -> list[dict[str, float]]:
    """The lines a look tests, for the record: each window, its slope and the slope's bound."""
    fits = []
    for window in plateau_windows(len(curve)):
        slope, upper = slope_bounds(curve[-window:])
        fits.append({"window": window, "slope": round(float(slope), 6), "upper": round(float(upper), 6)})
    return fits


# A learning curve's series, per meta-training iteration (`TrainingLog.curve`).
CURVE_SERIES = ("reward", "ws_loss", "pt_loss", "pg_loss", "ft_loss",
                "rl_step", "ml_step", "rl_distance", "ml_distance")


@dataclass
class TrainingLog:
    """What meta-training did: per iteration, the query episodes' mean reward, the losses
    (warm start and pre-training at the shared agents, before adaptation; policy gradient
    and fine-tuning at the adapted ones; None where the stage is switched off), the norm
    of each agent's update and its distance from the start; why it stopped, and the lines
    the last look of the stopping rule tested (`trend`)."""

    curve: dict[str, list[Optional[float]]] = field(
        default_factory=lambda: {name: [] for name in CURVE_SERIES})
    stop: str = ""
    trend: list[dict[str, float]] = field(default_factory=list)

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
        scores = similarity_scores(vectors, self.graph.embed([question])[0])
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
    def plan_query(self, rl: Params, ml: Params, question: Question,
                   others: Sequence[Question]) -> "QueryPlan":
        """One query question up to its episodes: retrieve (sampling), choose, and the
        fine-tuning pool (the RL-Agent's candidates and other questions' paths)."""
        retrieval = self.retrieve(question.text, rl, sample=True)
        chosen = self.choose(question.text, retrieval.paths, ml)
        path = retrieval.paths[chosen] if chosen >= 0 else ()
        pool: Optional[list[tuple[str, ...]]] = None
        if self.switches.ml_agent and self.switches.fine_tuning and retrieval.paths:
            pool = list(retrieval.paths)
            extra = [q.path for q in others if q.path and q.path not in pool and q.text != question.text]
            pool += self.rng.sample(extra, min(self.hyper.pool_extra, len(extra)))
        plan = QueryPlan(question, retrieval, path, pool)
        self.agents.counters.evaluations += len(plan.episodes)
        return plan

    def finish_query(self, rl: Params, plan: "QueryPlan", rewards: dict[tuple[str, ...], float]
                     ) -> tuple[Optional[tuple[float, Params]], Optional["PoolChoice"], float]:
        """The query question's policy gradient's loss and gradient at `rl`, its fine-tuning
        pool with its best path, and the reward of the chosen path, from its episodes'
        rewards (`plan.episodes`)."""
        retrieval, reward = plan.retrieval, rewards[plan.path]
        pg = None
        if self.switches.rl_agent and self.switches.policy_gradient and retrieval.actions:
            returns = policy.discounted_returns(len(retrieval.actions), reward - self.baseline,
                                                self.hyper.discount)
            self.baseline = 0.9 * self.baseline + 0.1 * reward
            pg = policy.weighted_nll(rl, np.vstack(retrieval.states), np.array(retrieval.actions),
                                     returns)
            self.agents.counters.pg_updates += 1
        pool_choice = None
        if plan.pool is not None:
            pool_choice = best_of_pool(plan.question.text, plan.pool, [rewards[p] for p in plan.pool])
        return pg, pool_choice, reward

    def start_queries(self, plans: Sequence["QueryPlan"], start: StartEpisodes
                      ) -> Callable[[], list[dict[tuple[str, ...], float]]]:
        """Hand every plan's episodes out as one batch; the function that waits for their
        rewards (per plan, by path)."""
        pairs = [(plan.question, path) for plan in plans for path in plan.episodes]
        wait = start(pairs)

        def rewards() -> list[dict[tuple[str, ...], float]]:
            found = iter(wait())
            return [{path: next(found) for path in plan.episodes} for plan in plans]
        return rewards

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

    # -- Algorithm 2
    def meta_train(self, support: dict[str, list[Question]], query: dict[str, list[Question]],
                   evaluate: Evaluate, iterations: int, tasks_per_batch: int,
                   batch: Optional[StartEpisodes] = None) -> TrainingLog:
        """At most `iterations` iterations, fewer once the query reward has stopped rising
        (`stopped_rising`). Each task's episodes are a batch (`batch`, else `evaluate` one
        after another)."""
        start_batch = batch or one_by_one(evaluate)
        log = TrainingLog()
        tasks = sorted(t for t in query if query[t])
        if not tasks:
            log.stop = "no query questions"
            return log
        everyone = [q for qs in support.values() for q in qs]
        start = (copy_params(self.agents.rl), copy_params(self.agents.ml))
        for _ in range(iterations):
            before = (copy_params(self.agents.rl), copy_params(self.agents.ml))
            losses: dict[str, list[float]] = {name: [] for name in CURVE_SERIES}
            rl_sum, ml_sum = zeros_like(self.agents.rl), zeros_like(self.agents.ml)
            rewards = []
            planned = []  # per task: its adapted agents, query plans and support gradients
            for task in self.rng.sample(tasks, min(tasks_per_batch, len(tasks))):
                shots = self._sample(support.get(task, []))
                if self.switches.meta_learning:
                    rl, ml = self.adapt(self.agents.rl, self.agents.ml, shots, losses)
                else:
                    rl, ml = self.agents.rl, self.agents.ml
                plans = [self.plan_query(rl, ml, question, everyone)
                         for question in self._sample(query[task])]
                played = self.start_queries(plans, start_batch)
                # without meta-learning the support losses train the shared agents directly
                grads = None if self.switches.meta_learning else self._support_grads(shots, losses)
                planned.append((rl, ml, plans, played, grads))
            for rl, ml, plans, played, grads in planned:
                choices = []
                for plan, rewards_of in zip(plans, played()):
                    pg, choice, reward = self.finish_query(rl, plan, rewards_of)
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
                if grads is not None:
                    for name in rl_sum:
                        if grads[0] is not None:
                            rl_sum[name] += grads[0][name]
                    for name in ml_sum:
                        if grads[1] is not None:
                            ml_sum[name] += grads[1][name]
            self.agents.rl_opt.step(self.agents.rl, rl_sum)
            self.agents.ml_opt.step(self.agents.ml, ml_sum)
            losses["reward"] = rewards
            point = {name: float(np.mean(values)) if values else None for name, values in losses.items()}
            point.update(rl_step=distance(self.agents.rl, before[0]), ml_step=distance(self.agents.ml, before[1]),
                         rl_distance=distance(self.agents.rl, start[0]),
                         ml_distance=distance(self.agents.ml, start[1]))
            for name in CURVE_SERIES:
                log.curve[name].append(point[name])
            if self._stopped_rising(log):
                log.stop = "plateau"
                return log
        log.stop = "cap"
        return log

    def _stopped_rising(self, log: TrainingLog) -> bool:
        rewards = np.asarray(log.curve["reward"], dtype=float)
        if plateau_windows(len(rewards)):
            log.trend = trend(rewards)
        return bool(stopped_rising(rewards, self.hyper.plateau_slope))

    def _support_grads(self, shots: Sequence[Question], losses: dict[str, list[float]]
                       ) -> tuple[Optional[Params], Optional[Params]]:
        """The support losses' gradients at the shared agents (L_WS, L_PT), their losses to
        `losses`."""
        rl_grad = ml_grad = None
        if self.switches.rl_agent and self.switches.warm_start:
            found = self.warm_start_grads(self.agents.rl, shots)
            if found is not None:
                losses["ws_loss"].append(found[0])
                rl_grad = found[1]
        if self.switches.ml_agent and self.switches.pre_training:
            found = self.pretraining_grads(self.agents.ml, shots)
            if found is not None:
                losses["pt_loss"].append(found[0])
                ml_grad = found[1]
        return rl_grad, ml_grad

    # -- Algorithm 3
    def few_shot(self, support: dict[str, list[Question]], evaluate: Evaluate,
                 batch: Optional[StartEpisodes] = None) -> dict[str, tuple[Params, Params]]:
        """Per test task: theta'_i = theta - alpha grad L_WS - beta grad L_PG (and likewise eta)
        on its support questions, which are played (never scored): each task's episodes a
        batch (`batch`, else `evaluate` one after another)."""
        everyone = [q for qs in support.values() for q in qs]
        planned = []
        for task in sorted(support):
            shots = self._sample(support[task])
            if not self.switches.meta_learning:
                continue  # the graph is extended, the agents stay as trained
            rl, ml = self.adapt(self.agents.rl, self.agents.ml, shots)
            plans = [self.plan_query(self.agents.rl, self.agents.ml, q, everyone) for q in shots]
            planned.append((task, rl, ml, plans, self.start_queries(plans, batch or one_by_one(evaluate))))
        adapted = {}
        for task, rl, ml, plans, played in planned:
            rl_grad = zeros_like(rl)
            choices = []
            for plan, rewards_of in zip(plans, played()):
                pg, choice, _ = self.finish_query(self.agents.rl, plan, rewards_of)
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


def one_by_one(evaluate: Evaluate) -> StartEpisodes:
    """A batch played there and then, one episode after another."""
    def start(pairs: list[tuple[Question, tuple[str, ...]]]) -> Callable[[], list[float]]:
        rewards = [evaluate(question, path) for question, path in pairs]
        return lambda: rewards
    return start


@dataclass(frozen=True)
class QueryPlan:
    """A query question's retrieval, chosen path and fine-tuning pool, before its episodes."""

    question: Question
    retrieval: Retrieval
    path: tuple[str, ...]
    pool: Optional[list[tuple[str, ...]]]

    @property
    def episodes(self) -> list[tuple[str, ...]]:
        """The paths to play, each once: the chosen one, then the pool's others."""
        return list(dict.fromkeys([self.path, *(self.pool or ())]))


@dataclass(frozen=True)
class PoolChoice:
    """A fine-tuning example: a question, its pool of paths (the RL-Agent's candidates and
    other questions' paths) and the index of the pool's best-rewarded path."""

    question: str
    pool: tuple[tuple[str, ...], ...]
    best: int


def best_of_pool(question: str, pool: Sequence[tuple[str, ...]],
                 rewards: Sequence[float]) -> Optional[PoolChoice]:
    """The pool's fine-tuning example: its best-rewarded path the positive (the first of
    those that tie, in the RL-Agent's order); None when every path got the same reward (all
    failed, or all won): no path is better, so nothing to learn from it."""
    if max(rewards) == min(rewards):
        return None
    return PoolChoice(question, tuple(pool), int(np.argmax(rewards)))


def distance(params: Params, other: Params) -> float:
    """The Euclidean distance between two parameter sets (all arrays as one vector)."""
    return float(np.sqrt(sum(float(((params[name] - other[name]) ** 2).sum()) for name in params)))
