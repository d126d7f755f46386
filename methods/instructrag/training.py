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
from lifebench.methods.instructrag.graph import Edge, InstructionGraph
from lifebench.methods.instructrag.nn import Adam, Params, add_scaled, zeros_like
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
                 rng: random.Random) -> None:
        self.graph = graph
        self.agents = agents
        self.switches = switches
        self.hyper = hyper
        self.rng = rng
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
        return matcher.choose(ml, self.graph.embed([question])[0],
                              self.graph.embed([path_text(p) for p in paths]))

    # -- support-set losses (inner loop and few-shot adaptation)
    def warm_start_grads(self, rl: Params, support: Sequence[Question]) -> Optional[Params]:
        states, labels = [], []
        for question in support:
            own = self._own_nodes(question)
            if not own:
                continue
            others = [n for n in range(len(self.graph.nodes)) if n not in own]
            traversal = Traversal(self.graph, question.text)
            picks = [(n, 1) for n in self.rng.sample(sorted(own), min(self.hyper.ws_nodes, len(own)))]
            picks += [(n, 0) for n in self.rng.sample(others, min(self.hyper.ws_nodes, len(others)))]
            for node, label in picks:
                edges = self.graph.in_edges(node)
                edge = [self.rng.choice(edges)] if edges else []
                states.append(traversal.state(node, self._strip(edge, question)))
                labels.append(label)
        if not states:
            return None
        self.last_warm_start = (np.vstack(states), np.array(labels))
        _, grads = policy.weighted_nll(rl, np.vstack(states), np.array(labels), np.ones(len(labels)))
        self.agents.counters.ws_steps += 1
        return grads

    def pretraining_grads(self, ml: Params, support: Sequence[Question]) -> Optional[Params]:
        pairs = [q for q in support if q.path]
        if len(pairs) < 2:
            return None
        questions = self.graph.embed([q.text for q in pairs])
        paths = self.graph.embed([path_text(q.path) for q in pairs])
        _, grads = matcher.pretraining_loss(ml, questions, paths, self.rng)
        self.agents.counters.pt_steps += 1
        return grads

    def adapt(self, rl: Params, ml: Params, support: Sequence[Question]) -> tuple[Params, Params]:
        """theta' = theta - alpha grad L_WS, eta' = eta - alpha grad L_PT, `inner_steps` times."""
        for _ in range(self.hyper.inner_steps):
            if self.switches.rl_agent and self.switches.warm_start:
                grads = self.warm_start_grads(rl, support)
                if grads is not None:
                    rl = add_scaled(rl, grads, -self.hyper.alpha)
            if self.switches.ml_agent and self.switches.pre_training:
                grads = self.pretraining_grads(ml, support)
                if grads is not None:
                    ml = add_scaled(ml, grads, -self.hyper.alpha)
        return rl, ml

    # -- query-set losses (outer loop), which play episodes
    def play_query(self, rl: Params, ml: Params, question: Question, evaluate: Evaluate,
                   others: Sequence[Question]) -> tuple[Optional[Params], Optional[Params], float]:
        """One query question: retrieve (sampling), choose, play; the PG and FT gradients at
        (rl, ml) and the reward of the chosen path."""
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
            _, pg = policy.weighted_nll(rl, np.vstack(retrieval.states),
                                        np.array(retrieval.actions), returns)
            self.agents.counters.pg_updates += 1
        ft = None
        if self.switches.ml_agent and self.switches.fine_tuning and retrieval.paths:
            pool = list(retrieval.paths)
            extra = [q.path for q in others if q.path and q.path not in pool and q.text != question.text]
            pool += self.rng.sample(extra, min(self.hyper.pool_extra, len(extra)))
            for candidate in pool:
                if candidate not in rewards:
                    rewards[candidate] = self._evaluate(evaluate, question, candidate)
            best = max(range(len(pool)), key=lambda i: (rewards[pool[i]], -i))
            _, ft = matcher.finetuning_loss(ml, self.graph.embed([question.text]),
                                            [self.graph.embed([path_text(p) for p in pool])], [best])
            self.agents.counters.ft_updates += 1
        return pg, ft, rewards[path]

    def _evaluate(self, evaluate: Evaluate, question: Question, path: tuple[str, ...]) -> float:
        self.agents.counters.evaluations += 1
        return evaluate(question, path)

    # -- Algorithm 2
    def meta_train(self, support: dict[str, list[Question]], query: dict[str, list[Question]],
                   evaluate: Evaluate, iterations: int, tasks_per_batch: int) -> list[float]:
        """Returns the mean reward of each iteration's query episodes."""
        tasks = sorted(t for t in query if query[t])
        history = []
        everyone = [q for qs in support.values() for q in qs]
        for _ in range(iterations):
            batch = self.rng.sample(tasks, min(tasks_per_batch, len(tasks)))
            rl_sum, ml_sum = zeros_like(self.agents.rl), zeros_like(self.agents.ml)
            rewards = []
            for task in batch:
                shots = self._sample(support.get(task, []))
                if self.switches.meta_learning:
                    rl, ml = self.adapt(self.agents.rl, self.agents.ml, shots)
                else:
                    rl, ml = self.agents.rl, self.agents.ml
                for question in self._sample(query[task]):
                    pg, ft, reward = self.play_query(rl, ml, question, evaluate, everyone)
                    rewards.append(reward)
                    if pg is not None:
                        rl_sum = add_scaled(rl_sum, pg, 1.0)
                    if ft is not None:
                        ml_sum = add_scaled(ml_sum, ft, 1.0)
                if not self.switches.meta_learning:
                    # without meta-learning the support losses train the shared agents directly
                    self._step_support(shots, rl_sum, ml_sum)
            self.agents.rl_opt.step(self.agents.rl, rl_sum)
            self.agents.ml_opt.step(self.agents.ml, ml_sum)
            history.append(float(np.mean(rewards)) if rewards else 0.0)
        return history

    def _step_support(self, shots: Sequence[Question], rl_sum: Params, ml_sum: Params) -> None:
        if self.switches.rl_agent and self.switches.warm_start:
            grads = self.warm_start_grads(self.agents.rl, shots)
            if grads is not None:
                for name in rl_sum:
                    rl_sum[name] += grads[name]
        if self.switches.ml_agent and self.switches.pre_training:
            grads = self.pretraining_grads(self.agents.ml, shots)
            if grads is not None:
                for name in ml_sum:
                    ml_sum[name] += grads[name]

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
            rl_grad, ml_grad = zeros_like(rl), zeros_like(ml)
            for question in shots:
                pg, ft, _ = self.play_query(self.agents.rl, self.agents.ml, question, evaluate, everyone)
                if pg is not None:
                    rl_grad = add_scaled(rl_grad, pg, 1.0)
                if ft is not None:
                    ml_grad = add_scaled(ml_grad, ft, 1.0)
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

    @staticmethod
    def _strip(edges: list[Edge], question: Question) -> list[Edge]:
        """The edges with the question itself left out of their task sets: a warm-start
        state must look like a query question's, whose own path is not in the graph."""
        out = []
        for edge in edges:
            copy = Edge(edge.source, edge.target)
            for task, questions in edge.tasks.items():
                kept = [q for q in questions if q != question.text]
                if kept:
                    copy.tasks[task] = kept
            out.append(copy)
        return out

