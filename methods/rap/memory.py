"""RAP's memory: successful episodes as typed records, their retrieval by sentence-embedding
similarity, and the window of steps of a retrieved episode that an executor is shown.

An entry holds the task (the part of the episode's first observation that states it,
`Benchmark.task_text`), its category (the benchmark's task family, e.g. ALFWorld's task
type; empty where there is none), the overall plan and the steps (action, observation, and
the thought the agent had written before the action, where one was written).

Scores (as RAP's ALFWorld code computes them): the sum of the cosine similarities of the
query's task, category and plan to the entry's, a part left out when the query has none
(the plan, before it is written; the category, on benchmarks without families); with a
retrieval key, plus the best similarity of the key to one of the entry's actions (an
`action` key) or observations (a `search` key). The window around the best-matching step
(the first step without a key) reaches `window` steps back and `window - 1` forward.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Optional, Sequence

import numpy as np

from lifebench.embeddings import Embedder, top_k

from lifebench.methods.rap import prompts

STATE_VERSION = 1
KEY_KINDS = ("search", "action")
_KEY = re.compile(r"^\W*(search|action)\s*:\s*(.+?)\s*$", re.I | re.M)
# A plan derived from a support rollout names at most this many of its actions.
PLAN_ACTIONS = 30


@dataclass(frozen=True)
class MemoryStep:
    action: str
    observation: str
    thought: str = ""  # what the agent wrote before the action ("" for none, the oracle's)


@dataclass(frozen=True)
class Experience:
    """One successful episode."""

    entry_id: str        # "support:<split>:<instance>" or "own:<episode index>:<instance>"
    source: str          # "support" (a support split's win: the oracle's or ReAct's) or "own"
    instance_id: str
    task: str
    category: str
    plan: str
    steps: tuple[MemoryStep, ...]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Experience":
        return cls(**{**data, "steps": tuple(MemoryStep(**step) for step in data["steps"])})


@dataclass(frozen=True)
class RetrievalKey:
    kind: str   # "search": matched to observations; "action": matched to actions
    text: str


@dataclass(frozen=True)
class Window:
    """The steps [start, end) of a retrieved entry, as the executor is shown them."""

    entry: Experience
    start: int
    end: int
    score: float

    def render(self, number: int) -> str:
        lines = []
        if self.start > 0 or self.end < len(self.entry.steps):
            lines.append(prompts.EXAMPLE_CUT.format(first=self.start + 1, last=self.end,
                                                    total=len(self.entry.steps)))
        for step in self.entry.steps[self.start:self.end]:
            if step.thought:
                lines.append(f"Thought: {step.thought}")
            lines += [f"Action: {step.action}", f"Observation: {step.observation}"]
        return prompts.EXAMPLE.format(number=number, task=self.entry.task, plan=self.entry.plan,
                                      steps="\n".join(lines))


def parse_key(reply: str) -> Optional[RetrievalKey]:
    """The key of a key writer's reply ("search: X" or "action: Y"), or None."""
    found = _KEY.search(reply)
    if not found:
        return None
    return RetrievalKey(found.group(1).lower(), found.group(2).rstrip("."))


def derived_plan(actions: Sequence[str]) -> str:
    """The plan of a support rollout, written without an LLM: its actions in order."""
    shown = list(actions[:PLAN_ACTIONS])
    more = ", ..." if len(actions) > PLAN_ACTIONS else ""
    if not shown:
        return ""
    return f"To solve the task, {', then '.join(shown)}{more}."


def kept_steps(transitions: Iterable[tuple[str, str]], thoughts: Sequence[str],
               dropped: Sequence[str]) -> tuple[MemoryStep, ...]:
    """The steps an entry keeps: those whose observation is not one of `dropped` (the
    env's answer to an action that did nothing: RAP's code leaves them out)."""
    steps = []
    for i, (action, observation) in enumerate(transitions):
        if observation.strip() in dropped:
            continue
        steps.append(MemoryStep(action, observation, thoughts[i] if i < len(thoughts) else ""))
    return tuple(steps)


def spread(items: Sequence[Any], family: Any, limit: Optional[int]) -> list[Any]:
    """At most `limit` items, taken a family at a time in turn (the first of every family,
    then the second, ...), each family's in their given order; all when `limit` is None."""
    if limit is None or limit >= len(items):
        return list(items)
    groups: dict[Any, list[Any]] = {}
    for item in items:
        groups.setdefault(family(item), []).append(item)
    out: list[Any] = []
    depth = 0
    while len(out) < limit:
        for group in groups.values():
            if depth < len(group) and len(out) < limit:
                out.append(group[depth])
        depth += 1
    return out


class ExperienceMemory:
    """The entries, oldest first, and their retrieval."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.entries: list[Experience] = []

    def __len__(self) -> int:
        return len(self.entries)

    def add(self, entry: Experience) -> None:
        """Adds an entry; one with the id of a stored entry replaces it."""
        self.entries = [e for e in self.entries if e.entry_id != entry.entry_id] + [entry]

    def state(self) -> dict[str, Any]:
        return {"version": STATE_VERSION, "entries": [e.to_dict() for e in self.entries]}

    def load_state(self, state: dict[str, Any]) -> None:
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"RAP memory state of version {state.get('version')!r}; "
                             f"this version reads {STATE_VERSION}")
        self.entries = [Experience.from_dict(e) for e in state["entries"]]

    # -- retrieval

    def scores(self, task: str, category: str, plan: str,
               candidates: Sequence[Experience]) -> np.ndarray:
        """The sum of the similarities of task, category and plan (each one the query has)."""
        total = np.zeros(len(candidates), dtype=np.float32)
        for query, field in ((task, "task"), (category, "category"), (plan, "plan")):
            if not query or not candidates:
                continue
            texts = [getattr(e, field) for e in candidates]
            similarity = self.embedder.similarities(query, texts)
            total += np.where([bool(t) for t in texts], similarity, 0.0).astype(np.float32)
        return total

    def candidates(self, exclude_support_of: Optional[str]) -> list[Experience]:
        """The entries an episode may retrieve: never the oracle's rollout of its own
        instance (that would be the answer); its own earlier successes may be."""
        return [e for e in self.entries
                if not (e.source == "support" and e.instance_id == exclude_support_of)]

    def plan_examples(self, task: str, category: str, k: int,
                      exclude_support_of: Optional[str] = None) -> list[Experience]:
        """The `k` entries most similar by task and category, best first."""
        pool = self.candidates(exclude_support_of)
        scores = self.scores(task, category, "", pool)
        return [pool[i] for i in top_k(scores, k)]

    def retrieve(self, task: str, category: str, plan: str, key: Optional[RetrievalKey],
                 k: int, window: int, exclude_support_of: Optional[str] = None) -> list[Window]:
        """The `k` best entries by task, category, plan (and key), each cut to `window`
        steps before its best-matching step and `window` from it on, best first."""
        pool = self.candidates(exclude_support_of)
        scores = self.scores(task, category, plan, pool)
        centres = np.zeros(len(pool), dtype=np.int64)
        if key is not None and key.text:
            for i, entry in enumerate(pool):
                texts = [s.observation if key.kind == "search" else s.action for s in entry.steps]
                if texts:
                    similarity = self.embedder.similarities(key.text, texts)
                    centres[i] = int(top_k(similarity, 1)[0])
                    scores[i] += float(similarity[centres[i]])
        out = []
        for i in top_k(scores, k):
            entry, centre = pool[i], int(centres[i])
            start, end = max(0, centre - window), min(len(entry.steps), centre + window)
            out.append(Window(entry, start, end, float(scores[i])))
        return out
