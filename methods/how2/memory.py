"""How²'s memory (Algorithm 1's store): a mutable map from a query to a set of entries.

Lookup is by exact string match on the query (after trimming and lower-casing, so that
`Oak_Planks ` and `oak_planks` are one query). An entry is stored under the query that
caused it and under each of its tags; the same text is stored once per key.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


def normalise(query: str) -> str:
    return " ".join(str(query).split()).lower()


@dataclass(frozen=True)
class Entry:
    text: str                 # what the actor is given (the answer, or its abstraction)
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
