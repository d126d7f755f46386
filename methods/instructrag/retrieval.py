"""The RL-Agent's decision environment (Section 4.3): a depth-first traversal of the
instruction graph from the nodes most similar to the question. At each visited node the
agent includes it (its instruction most similar to the question joins the path and the
search goes on to the nodes it leads to) or excludes it (the path so far is formed and the
search backtracks to another branch). Traversal stops once K distinct paths are formed.

The state of a visit (Eq. 1) is three cosine similarities to the question: the node's most
similar instruction; the most similar task on the edge the traversal came by (a task's
vector is the mean of all its questions' in the graph, the edge only says which tasks are
there); the most similar question of that task.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from lifebench.embeddings import similarity_scores
from lifebench.methods.instructrag.graph import Edge, InstructionGraph

# The traversal's bounds: paths are not longer than this, and one retrieval makes at most
# this many decisions (the graph may hold cycles: I1 -> I2 -> I4 -> I2 is a path).
MAX_PATH_LENGTH = 40
MAX_DECISIONS = 400
START_NODES = 5  # the most similar nodes a traversal may start from

Decide = Callable[[np.ndarray], int]  # state -> 0 (exclude) or 1 (include)


@dataclass
class Retrieval:
    """What one traversal produced: the paths and every decision made on the way."""

    paths: list[tuple[str, ...]] = field(default_factory=list)
    states: list[np.ndarray] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)


def _cos(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    # the embedder's vectors are unit length
    return similarity_scores(vectors, query)


class Traversal:
    """One question's walk over the graph. `leave_out`: a question whose own path is in the
    graph (a warm-start question) is left out of its task's questions, so that its states
    look like a query question's."""

    def __init__(self, graph: InstructionGraph, question: str, leave_out: str = "") -> None:
        self.graph = graph
        self.q = graph.embed([question])[0]
        self.leave_out = leave_out
        vectors, owners = graph.instruction_vectors()
        self._sims = _cos(vectors, self.q) if len(owners) else np.zeros(0)
        self._owners = np.asarray(owners)
        self._tasks: dict[str, tuple[float, float]] = {}

    def node_similarity(self, node: int) -> tuple[float, str]:
        rows = np.flatnonzero(self._owners == node)
        best = rows[int(np.argmax(self._sims[rows]))]
        return float(self._sims[best]), self.graph.nodes[node][list(rows).index(best)]

    def task_features(self, task: str) -> tuple[float, float]:
        """(the task's similarity, its most similar question's), or (-1, -1) when it has
        no question but the one left out."""
        if task not in self._tasks:
            questions = [q for q in self.graph.task_questions(task) if q != self.leave_out]
            found = (-1.0, -1.0)
            if questions:
                vectors = self.graph.embed(questions)
                task_vector = vectors.mean(axis=0)
                norm = np.linalg.norm(task_vector)
                found = (float(task_vector @ self.q / norm) if norm > 0 else 0.0,
                         float(_cos(vectors, self.q).max()))
            self._tasks[task] = found
        return self._tasks[task]

    def edge_features(self, edges: list[Edge]) -> tuple[float, float]:
        """(most similar task, most similar question of that task) over `edges`' tasks."""
        best = (-1.0, -1.0)
        for edge in edges:
            for task in edge.tasks:
                found = self.task_features(task)
                if found[0] > best[0]:
                    best = found
        return best

    def state(self, node: int, edges: list[Edge]) -> np.ndarray:
        instruction_sim, _ = self.node_similarity(node)
        task_sim, question_sim = self.edge_features(edges)
        return np.array([instruction_sim, task_sim, question_sim])

    def start_nodes(self) -> list[int]:
        order: list[int] = []
        for row in np.argsort(-self._sims, kind="stable"):
            node = int(self._owners[row])
            if node not in order:
                order.append(node)
            if len(order) == START_NODES:
                break
        return order

    def run(self, decide: Decide, k: int) -> Retrieval:
        result = Retrieval()
        budget = [MAX_DECISIONS]

        def form(prefix: list[str]) -> None:
            path = tuple(prefix)
            if path and path not in result.paths:
                result.paths.append(path)

        def visit(node: int, edges: list[Edge], prefix: list[str]) -> None:
            if len(result.paths) >= k or budget[0] <= 0:
                return
            budget[0] -= 1
            state = self.state(node, edges)
            action = int(decide(state))
            result.states.append(state)
            result.actions.append(action)
            if action == 0:
                form(prefix)
                return
            extended = prefix + [self.node_similarity(node)[1]]
            children = [edge for edge in self.graph.out_edges(node)]
            if not children or len(extended) >= MAX_PATH_LENGTH:
                form(extended)
                return
            children.sort(key=lambda e: -self.node_similarity(e.target)[0])
            for edge in children:
                visit(edge.target, [edge], extended)
                if len(result.paths) >= k or budget[0] <= 0:
                    return
            form(extended)

        for start in self.start_nodes():
            visit(start, self.graph.in_edges(start), [])
            if len(result.paths) >= k:
                break
        return result


def sampling_decider(probs: Callable[[np.ndarray], float], rng: random.Random) -> Decide:
    """Training: include with the policy's probability."""
    return lambda state: int(rng.random() < probs(state))


def greedy_decider(probs: Callable[[np.ndarray], float]) -> Decide:
    """Testing: the policy's more likely action."""
    return lambda state: int(probs(state) >= 0.5)


def threshold_decider(threshold: float) -> Decide:
    """Without the RL-Agent (Table 5): include a node when its best instruction is at
    least `threshold` similar to the question."""
    return lambda state: int(state[0] >= threshold)
