"""The instruction graph (Section 4.2, Algorithm 1).

A node is a set of similar instructions; an edge (from the node of one instruction to the
node of the next on some path) records the tasks whose paths take it, with the questions
of those paths. An instruction joins the node holding its most similar instruction, found
among all nodes but the one its path just left (adjacent instructions never share a node),
unless that similarity is below delta; then it starts a new node. The search is exact
(every instruction's vector is compared): the paper's AKNN (HNSW) approximates the same
nearest neighbour, and the graphs here hold thousands of instructions at most.

A path's first instruction hangs from a start edge (source None), so every node a
traversal may start from has an edge whose tasks make its state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np

from lifebench.embeddings import similarity_scores

Embed = Callable[[Sequence[str]], np.ndarray]


@dataclass
class Edge:
    source: Optional[int]  # None: the start of a path
    target: int
    # task -> the questions, in insertion order, whose paths take this edge
    tasks: dict[str, list[str]] = field(default_factory=dict)

    def add(self, task: str, question: str) -> None:
        questions = self.tasks.setdefault(task, [])
        if question not in questions:
            questions.append(question)


@dataclass(frozen=True)
class StoredPath:
    """A successful path as it went into the graph."""

    task: str
    question: str
    instructions: tuple[str, ...]
    nodes: tuple[int, ...]


class InstructionGraph:
    def __init__(self, embed: Embed, delta: float) -> None:
        if not 0.0 <= delta <= 1.0:
            raise ValueError(f"delta must be within [0, 1], got {delta}")
        self.embed = embed
        self.delta = delta
        self.nodes: list[list[str]] = []
        self.edges: dict[tuple[Optional[int], int], Edge] = {}
        self.paths: list[StoredPath] = []
        self._vectors = np.zeros((0, 0))
        self._owner: list[int] = []  # node of each row of _vectors
        self._texts: list[str] = []
        self._task_questions: dict[str, list[str]] = {}  # Eq. 1's T_j: all of a task's questions

    # -- construction (Algorithm 1)
    def insert_path(self, instructions: Sequence[str], task: str, question: str) -> StoredPath:
        instructions = [i for i in instructions if i.strip()]
        placed: list[int] = []
        previous: Optional[int] = None
        first_path = not self.paths
        for k, instruction in enumerate(instructions):
            if first_path and k < 2:
                node = self._new_node(instruction)  # lines 7-10: the first two make nodes
            else:
                node = self._place(instruction, exclude=previous)
            self._edge(previous, node).add(task, question)
            placed.append(node)
            previous = node
        stored = StoredPath(task, question, tuple(instructions), tuple(placed))
        self.paths.append(stored)
        questions = self._task_questions.setdefault(task, [])
        if question not in questions:
            questions.append(question)
        return stored

    def _place(self, instruction: str, exclude: Optional[int]) -> int:
        nearest, similarity = self.nearest_node(instruction, exclude)
        if nearest is None or similarity < self.delta:
            return self._new_node(instruction)  # lines 12-15
        self._add_instruction(nearest, instruction)  # lines 16-24
        return nearest

    def nearest_node(self, instruction: str, exclude: Optional[int] = None) -> tuple[Optional[int], float]:
        """The node holding the instruction most similar to `instruction` (not counting
        node `exclude`), with that cosine similarity (1.0 for the same text)."""
        if not self._owner:
            return None, -1.0
        owner = np.asarray(self._owner)
        allowed = owner != exclude if exclude is not None else np.ones(len(owner), dtype=bool)
        if not allowed.any():
            return None, -1.0
        same = [i for i, text in enumerate(self._texts) if text == instruction and allowed[i]]
        if same:
            return self._owner[same[0]], 1.0
        scores = similarity_scores(self._vectors, self.embed([instruction])[0])
        scores[~allowed] = -np.inf
        best = int(np.argmax(scores))
        return self._owner[best], float(min(1.0, scores[best]))

    def _new_node(self, instruction: str) -> int:
        self.nodes.append([])
        self._add_instruction(len(self.nodes) - 1, instruction)
        return len(self.nodes) - 1

    def _add_instruction(self, node: int, instruction: str) -> None:
        if instruction in self.nodes[node]:
            return
        self.nodes[node].append(instruction)
        vector = self.embed([instruction])
        self._vectors = vector if not self._owner else np.vstack([self._vectors, vector])
        self._owner.append(node)
        self._texts.append(instruction)

    def _edge(self, source: Optional[int], target: int) -> Edge:
        key = (source, target)
        if key not in self.edges:
            self.edges[key] = Edge(source, target)
        return self.edges[key]

    # -- reading
    def instruction_vectors(self) -> tuple[np.ndarray, list[int]]:
        """Every instruction's vector and the node it belongs to."""
        return self._vectors, list(self._owner)

    def out_edges(self, node: int) -> list[Edge]:
        return [edge for (source, _), edge in self.edges.items() if source == node]

    def in_edges(self, node: int) -> list[Edge]:
        return [edge for (_, target), edge in self.edges.items() if target == node]

    def task_questions(self, task: str) -> list[str]:
        """The questions of `task` whose paths are in the graph, in insertion order."""
        return list(self._task_questions.get(task, ()))

    def edge_task_sets(self) -> dict[tuple[Optional[int], int], set[str]]:
        return {key: set(edge.tasks) for key, edge in self.edges.items()}

    # -- saving
    def to_json(self) -> dict[str, Any]:
        """The paths in insertion order: replaying them rebuilds the same graph."""
        return {"delta": self.delta,
                "paths": [{"task": p.task, "question": p.question,
                           "instructions": list(p.instructions)} for p in self.paths]}

    @classmethod
    def from_json(cls, data: dict[str, Any], embed: Embed) -> "InstructionGraph":
        graph = cls(embed, float(data["delta"]))
        for path in data["paths"]:
            graph.insert_path(path["instructions"], path["task"], path["question"])
        return graph
