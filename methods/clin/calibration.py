"""Calibrating CLIN's match threshold for an embedding model: the precision and recall of
`ActionMatcher.match` over a labelled set of action texts, at every threshold.

CLIN's code uses 0.9 with `bert-base-nli-mean-tokens` (how it was chosen is not
published); another model spreads its cosines differently. What this finds is our
heuristic on a set we generate, not CLIN's operating point. A labelled set pairs texts a model might write with what they mean: the
valid action a text paraphrases, or None for a near-miss that names no valid action here
(a matcher must reject it). At a threshold, a text is accepted when its best match is
exact or at least that similar; precision = accepted and right / accepted, recall =
accepted and right / texts that mean a valid action. `choose` takes the threshold with
the highest recall among those whose precision reaches the floor (the intent we read in
CLIN's: a match played without asking again should almost never be another action), or, when none does,
the threshold of highest precision.

The set for ScienceWorld is built by `tests/calibration/clin_threshold.py` (the numbers
are in this method's README)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from lifebench.methods.clin.matching import ActionMatcher


@dataclass(frozen=True)
class LabelledText:
    text: str                # what a model wrote
    label: Optional[str]     # the valid action it means; None: it means none of them
    state: int               # which of the set's states' valid actions it is matched against
    kind: str = ""           # how it was made (reordered, articles, synonym, near-miss, ...)


@dataclass(frozen=True)
class Scored:
    """One text's best match: the action and its similarity (1.0 when exact)."""
    item: LabelledText
    action: Optional[str]
    similarity: float
    exact: bool
    shortlist_kept_best: bool  # the word-overlap pre-filter kept the full search's best


@dataclass(frozen=True)
class CurvePoint:
    threshold: float
    precision: float
    recall: float
    accepted: int
    right: int


def score(items: Sequence[LabelledText], states: Sequence[Sequence[str]],
          matcher: ActionMatcher) -> list[Scored]:
    """Each text's best match among its state's valid actions, with the pre-filter check:
    the full search (every valid action embedded) against the matcher's shortlist."""
    full = ActionMatcher(matcher.embedder, matcher.threshold, matcher.guarded,
                         shortlist=max(len(s) for s in states))
    out = []
    for item in items:
        valid = states[item.state]
        exact = matcher.exact(item.text, valid)
        if exact is not None:
            out.append(Scored(item, exact, 1.0, True, True))
            continue
        best = matcher.ranked(item.text, valid, 1)
        unfiltered = full.ranked(item.text, valid, 1)
        action, similarity = best[0] if best else (None, 0.0)
        kept = not unfiltered or unfiltered[0][0] == action
        out.append(Scored(item, action, similarity, False, kept))
    return out


def curve(scored: Sequence[Scored], thresholds: Sequence[float]) -> list[CurvePoint]:
    positives = sum(s.item.label is not None for s in scored)
    points = []
    for threshold in thresholds:
        accepted = [s for s in scored if s.action is not None and (s.exact or s.similarity >= threshold)]
        right = sum(s.action == s.item.label for s in accepted)
        points.append(CurvePoint(threshold, right / len(accepted) if accepted else 1.0,
                                 right / positives if positives else 0.0, len(accepted), right))
    return points


def choose(points: Sequence[CurvePoint], min_precision: float) -> tuple[CurvePoint, bool]:
    """The point of highest recall whose precision is at least `min_precision` (ties: the
    higher precision, then the higher threshold), and True; when no threshold reaches the
    floor, the point of highest precision (ties: the higher recall), and False."""
    good = [p for p in points if p.precision >= min_precision]
    if good:
        return max(good, key=lambda p: (p.recall, p.precision, p.threshold)), True
    return max(points, key=lambda p: (p.precision, p.recall)), False
