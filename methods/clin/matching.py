"""Free-form action text to one of the env's valid actions, as CLIN does it: an exact
match is taken at once; otherwise the valid actions sharing the most words with the text
are ranked by sentence-embedding cosine similarity, and the best is accepted above a
threshold (CLIN: 0.9). Below it the caller gives the model feedback and asks again.

Actions the benchmark guards (`Benchmark.guarded_actions`, e.g. ScienceWorld's `focus on`,
which ends the task when wrong) are candidates only when the text names the guard itself,
and then the only candidates (CLIN's rule for focus). A bare number is passed through: it
answers the env's "which one did you mean?" question."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Sequence

from lifebench.embeddings import Embedder, similarity_scores

_WORD = re.compile(r"[a-z0-9]+")
# Words too common to tell actions apart when pre-ranking by shared words.
_COMMON = frozenset({"a", "an", "the", "to", "in", "on", "of", "with", "at", "into", "from",
                     "and", "or", "for", "by", "it", "is", "i", "you", "my"})


def words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _COMMON}


@dataclass(frozen=True)
class Match:
    action: Optional[str]   # the valid action chosen (None: nothing to choose from)
    similarity: float       # cosine similarity of text and action (1.0 for an exact match)
    accepted: bool          # at or above the threshold, exact, or a number


def normalise(text: str) -> str:
    return " ".join(text.strip().strip(".").lower().split())


class ActionMatcher:
    def __init__(self, embedder: Embedder, threshold: float, guarded: Sequence[str] = (),
                 shortlist: int = 200) -> None:
        self.embedder = embedder
        self.threshold = threshold
        self.guarded = tuple(g.lower() for g in guarded)
        self.shortlist = shortlist  # candidates embedded after the shared-words pre-ranking

    def candidates(self, text: str, valid: Sequence[str]) -> list[str]:
        asked = next((g for g in self.guarded if g in text), None)
        if asked:
            return [a for a in valid if a.lower().startswith(asked)]
        return [a for a in valid if not a.lower().startswith(self.guarded)] if self.guarded else list(valid)

    def exact(self, text: str, valid: Sequence[str]) -> Optional[str]:
        """The valid action the text names exactly (a bare number as it is), or None."""
        text = normalise(text)
        if text.isdigit():
            return text
        return {normalise(a): a for a in valid}.get(text)

    def ranked(self, text: str, valid: Sequence[str], k: int) -> list[tuple[str, float]]:
        """The `k` candidates nearest to the text, best first, with their similarities."""
        text = normalise(text)
        pool = self.candidates(text, valid)
        if not pool:
            return []
        if len(pool) > self.shortlist:  # embedding thousands of actions per step is wasted
            mine = words(text)
            pool = sorted(pool, key=lambda a: -len(mine & words(a)))[: self.shortlist]
        vectors = self.embedder.embed([text, *pool])
        similarities = similarity_scores(vectors[1:], vectors[0])
        order = sorted(range(len(pool)), key=lambda i: -float(similarities[i]))[:k]
        return [(pool[i], float(similarities[i])) for i in order]

    def match(self, text: str, valid: Sequence[str]) -> Match:
        named = self.exact(text, valid)
        if named is not None:
            return Match(named, 1.0, True)
        best = self.ranked(text, valid, 1)
        if not best:
            return Match(None, 0.0, False)
        action, similarity = best[0]
        return Match(action, similarity, similarity >= self.threshold)
