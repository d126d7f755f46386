"""IGE's archive: one entry per cell, holding the shortest path found to it.

Update rule (the authors' `add_or_update`): a state whose cell is new is added; a state of
a known cell replaces the entry when its path from reset is no longer than the stored one
(the shortest path wins, a tie goes to the newest), and is ignored otherwise, unless its
last action is one the benchmark forces an overwrite for (TextWorld cooking: look,
inventory, goal, anything with "examine" or "meal": the informative actions, so that
what they showed stays on the entry's path). A replaced entry keeps its place in the
order (the authors' OrderedDict). Actions tried are kept per cell, across replacements.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Hashable, Iterable, Optional

from lifebench.methods.ige.cells import Cell


@dataclass(frozen=True)
class Trace:
    """A path from reset: its actions and what each showed, and the place last named."""

    first: str                                   # the observation at reset
    steps: tuple[tuple[str, str], ...] = ()      # (action, observation)
    place: Optional[str] = None                  # last place named along the path
    place_text: Optional[str] = None             # the observation that named it

    @property
    def actions(self) -> tuple[str, ...]:
        return tuple(a for a, _ in self.steps)

    @property
    def observation(self) -> str:
        return self.steps[-1][1] if self.steps else self.first

    def __len__(self) -> int:
        return len(self.steps)

    def extended(self, action: str, observation: str, place: Optional[str]) -> "Trace":
        if place is None:
            return Trace(self.first, self.steps + ((action, observation),), self.place,
                         self.place_text)
        return Trace(self.first, self.steps + ((action, observation),), place, observation)


@dataclass
class Entry:
    cell: Cell
    trace: Trace
    snapshot: Any                 # what tools.snapshot() returned there
    found_at: int                 # the method's action count when it was stored

    @property
    def key(self) -> Hashable:
        return self.cell.key


# Outcomes of `Archive.offer`.
ADDED, REPLACED, FORCED, KEPT = "added", "replaced", "forced", "kept"


@dataclass
class Archive:
    entries: "OrderedDict[Hashable, Entry]" = field(default_factory=OrderedDict)
    tried: dict[Hashable, list[str]] = field(default_factory=dict)
    lost: dict[Hashable, list[str]] = field(default_factory=dict)  # actions that lost the game
    largest: int = 0
    removed: int = 0

    def __len__(self) -> int:
        return len(self.entries)

    def listed(self) -> list[Entry]:
        return list(self.entries.values())

    def wants(self, cell: Cell, length: int, forced: bool) -> str:
        """What `offer` would do with a state of `cell` reached in `length` actions."""
        old = self.entries.get(cell.key)
        if old is None:
            return ADDED
        if length <= len(old.trace):
            return REPLACED
        return FORCED if forced else KEPT

    def offer(self, entry: Entry, forced: bool = False) -> str:
        outcome = self.wants(entry.cell, len(entry.trace), forced)
        if outcome != KEPT:
            self.entries[entry.key] = entry  # an existing key keeps its place
            self.largest = max(self.largest, len(self.entries))
        return outcome

    def remove(self, indexes: Iterable[int], keep: Iterable[int] = ()) -> list[int]:
        """Remove the entries at `indexes` (of `listed()`), never those in `keep` and never
        the last one; returns the indexes removed."""
        listed = self.listed()
        protected = set(keep)
        done = []
        for index in sorted(set(indexes)):
            if 0 <= index < len(listed) and index not in protected and \
                    len(self.entries) > 1:
                del self.entries[listed[index].key]
                done.append(index)
        self.removed += len(done)
        return done

    def tried_at(self, key: Hashable) -> list[str]:
        return self.tried.get(key, [])

    def note_tried(self, key: Hashable, action: str) -> None:
        actions = self.tried.setdefault(key, [])
        if action not in actions:
            actions.append(action)

    def note_lost(self, key: Hashable, action: str) -> None:
        actions = self.lost.setdefault(key, [])
        if action not in actions:
            actions.append(action)

    def best_score(self) -> Optional[float]:
        scores = [e.cell.score for e in self.entries.values() if e.cell.score is not None]
        return max(scores) if scores else None


def forced_overwrite(benchmark: str, action: str) -> bool:
    """Whether a state reached by `action` replaces its cell's entry whatever its path
    length (the authors' TextWorld cooking cases)."""
    if benchmark != "textworld":
        return False
    text = " ".join(action.lower().split())
    return text in ("look", "inventory", "goal") or "examine" in text or "meal" in text
