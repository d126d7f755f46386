"""How²'s memory (Algorithm 1's store): a mutable map from a query to a set of entries.

Lookup is by exact string match on the query (after trimming and lower-casing, so that
`Oak_Planks ` and `oak_planks` are one query). An entry is stored under the query that
caused it and under each of its tags; the same text is stored once per key.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from lifebench.api.untrusted import literal

_SECTIONS = ("RECIPE", "REQUIREMENTS", "PROCEDURE", "RELATED ITEMS")
_HEADING = re.compile(r"^\W*(" + "|".join(_SECTIONS) + r")[\s*_]*:[\s*_]*", re.I | re.M)


def normalise(query: str) -> str:
    return " ".join(str(query).split()).lower()


def sections(text: str) -> dict[str, str]:
    """The parse role's sections (RECIPE, REQUIREMENTS, PROCEDURE, RELATED ITEMS), by name."""
    found = list(_HEADING.finditer(text))
    return {m.group(1).upper(): text[m.end(): found[i + 1].start() if i + 1 < len(found) else len(text)].strip()
            for i, m in enumerate(found)}


def listed(text: str) -> list[str]:
    """A list written as a python list, or one item per line or comma."""
    try:
        value = literal(text)
        if isinstance(value, (list, tuple)):
            return [str(v) for v in value]
    except (ValueError, SyntaxError):
        pass
    return [item.strip(" -*'\"[]`") for item in re.split(r"[,\n]", text) if item.strip(" -*'\"[]`")]


def parsed_entry(reply: str) -> tuple[str, tuple[str, ...]]:
    """The parse role's reply as a memory entry and its tags: the RECIPE name and the
    RELATED ITEMS (Algorithm 1, line 12)."""
    text = reply.strip()
    found = sections(text)
    recipe = found.get("RECIPE", "").splitlines()[0] if found.get("RECIPE") else ""
    tags = [recipe, *listed(found.get("RELATED ITEMS", ""))]
    return text, tuple(dict.fromkeys(t for t in (normalise(x) for x in tags) if t))


@dataclass(frozen=True)
class Entry:
    text: str                 # what the actor is given (the parsed entry, or the answer)
    question: str             # the how-to question that was asked
    query: str                # the read_memory query that caused it
    tags: tuple[str, ...] = ()
    episode_index: int = -1   # when it was learnt


@dataclass
class Memory:
    entries: dict[str, list[Entry]] = field(default_factory=dict)

    def lookup(self, query: str) -> list[Entry]:
        return list(self.entries.get(normalise(query), []))

    def store(self, entry: Entry) -> list[str]:
        """Store `entry` under its query and every tag; returns the keys it was added to."""
        added = []
        for key in dict.fromkeys([normalise(entry.query), *(normalise(t) for t in entry.tags)]):
            if not key:
                continue
            bucket = self.entries.setdefault(key, [])
            if all(e.text != entry.text for e in bucket):
                bucket.append(entry)
                added.append(key)
        return added

    def __len__(self) -> int:
        return len({e.text for bucket in self.entries.values() for e in bucket})

    def to_json(self) -> dict[str, Any]:
        return {key: [asdict(e) for e in bucket] for key, bucket in self.entries.items()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Memory":
        return cls({key: [Entry(**{**e, "tags": tuple(e.get("tags", ()))}) for e in bucket]
                    for key, bucket in data.items()})
