"""Archive cells: which states of an episode IGE counts as the same.

A cell is (location, inventory, score), as the authors' TextWorld cooking key (room
description, inventory, points); a part the environment does not reveal is left out (None).
Each part is read from the cheapest source the env offers, decided once per episode:

- location: the room's description from the env's free `query("look")` (ScienceWorld: the
  full text, as the authors keyed on TextWorld's description). Without it (TextWorld,
  ALFWorld, whose `look` costs a step) the place last named along the path (TextWorld's
  room header `-= Kitchen =-`, ALFWorld's "You arrive at desk 1" or, at the start, the
  middle of the room) together with a fingerprint of the admissible commands there, which
  stand in for the description: they change when a container is opened or an object is
  taken or put, as the description would. An env that answers `query("state")` has its
  whole state there (Plancraft), kept as the inventory part, and no location.
- inventory: the env's free `query("inventory")` (ScienceWorld); else its free
  `query("state")` (Plancraft: the crafting grid and inventory); else `observation.data
  ["inventory"]` (Crafter); else the objects the admissible commands say are carried
  (TextWorld: `drop X`; ALFWorld: `move X to Y` / `put X in/on Y`), "nothing" when none.
- score: `observation.data["score"]` where the env shows it (TextWorld's points); no other
  benchmark shows the method a score (ALFWorld's and Plancraft's are success only,
  ScienceWorld's is hidden from the agent).

Nothing here costs a step: queries and admissible commands are free.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

# Places named by observations: (pattern, how the match names the place).
_PLACES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (re.compile(r"^-= (.+?) =-\s*$", re.M), lambda m: m.group(1).strip()),          # TextWorld
    (re.compile(r"\bYou arrive at (?:the )?(.+?)\.", re.I), lambda m: m.group(1).strip()),  # ALFWorld
    (re.compile(r"\bYou are in the middle of a room\b", re.I), lambda m: "the middle of the room"),
)

# Admissible commands that name a carried object.
_CARRIED = (re.compile(r"^drop (.+)$"),                     # TextWorld
            re.compile(r"^move (.+?) to \S"),               # ALFWorld (textworld 1.6 grammar)
            re.compile(r"^put (.+?) (?:in/on|in|on) \S"))    # ALFWorld (older grammar)


def place_in(text: str) -> Optional[str]:
    """The place an observation names (the last one it names), or None."""
    found: Optional[tuple[int, str]] = None
    for pattern, name in _PLACES:
        for match in pattern.finditer(text):
            if found is None or match.start() >= found[0]:
                found = (match.start(), name(match))
    return found[1] if found else None


def carried(valid: Sequence[str]) -> Optional[str]:
    """What the admissible commands say is carried, or None when they name nothing."""
    items = sorted({m.group(1).strip() for a in valid for p in _CARRIED
                    if (m := p.match(a.strip()))})
    return "; ".join(items) if items else None


def _normal(text: str) -> str:
    return "\n".join(" ".join(line.split()) for line in text.strip().splitlines() if line.strip())


def _inventory_data(data: Any) -> str:
    """A canonical text of `observation.data["inventory"]` (a dict of items or slots)."""
    if isinstance(data, dict):
        parts = []
        for name, value in sorted(data.items(), key=lambda kv: str(kv[0])):
            if isinstance(value, dict):
                kind, qty = value.get("type"), value.get("quantity")
                parts.append(f"{kind} x{qty} at {name}")
            elif value:
                parts.append(f"{name}: {value}")
        return ", ".join(parts) or "nothing"
    return str(data)


@dataclass(frozen=True)
class Cell:
    location: Optional[str]   # shown to the model
    inventory: Optional[str]
    score: Optional[float]
    # what else tells states of one place apart (the admissible commands' fingerprint)
    detail: Optional[str] = None

    @property
    def key(self) -> tuple[Optional[str], Optional[str], Optional[str], Optional[float]]:
        return (self.location, self.detail, self.inventory, self.score)


def fingerprint(actions: Sequence[str]) -> str:
    text = "\n".join(sorted(" ".join(a.split()) for a in actions))
    return hashlib.sha1(text.encode()).hexdigest()[:16]


class CellReader:
    """Reads the cell of the current state of one episode (see the module docstring)."""

    def __init__(self, query: Callable[[str], str], valid_actions: Callable[[], list[str]]) -> None:
        self.query = query
        self.valid_actions = valid_actions
        self.look = self._answers("look")
        self.inventory_query = self._answers("inventory")
        self.state_query = not self.inventory_query and self._answers("state")

    def _answers(self, name: str) -> bool:
        try:
            self.query(name)
        except ValueError:
            return False
        return True

    def sources(self) -> dict[str, str]:
        """Where each part of the cell comes from (for the record)."""
        if self.look:
            location = "query(look)"
        elif self.state_query:
            location = "none"
        else:
            location = "observed place + admissible commands"
        if self.inventory_query:
            inventory = "query(inventory)"
        elif self.state_query:
            inventory = "query(state)"
        else:
            inventory = "observation data, else admissible commands"
        return {"location": location, "inventory": inventory}

    def read(self, observation: Any, place: Optional[str]) -> Cell:
        """The cell of the current state; `place` is the last place named along the path."""
        detail = None
        if self.look:
            location: Optional[str] = _normal(self.query("look"))
        elif self.state_query:
            location = None
        else:
            location, detail = place, fingerprint(self.valid_actions())
        return Cell(location, self._inventory(observation), self._score(observation), detail)

    def _inventory(self, observation: Any) -> Optional[str]:
        if self.inventory_query:
            return _normal(self.query("inventory"))
        if self.state_query:
            return _normal(self.query("state"))
        data = getattr(observation, "data", None) or {}
        if "inventory" in data:
            return _inventory_data(data["inventory"])
        return carried(self.valid_actions()) or "nothing"

    @staticmethod
    def _score(observation: Any) -> Optional[float]:
        data = getattr(observation, "data", None) or {}
        score = data.get("score")
        return float(score) if isinstance(score, (int, float)) else None
