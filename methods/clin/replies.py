"""Reading the fields of a model's reply ("Name: value" lines), as CLIN's and STEP's
prompts ask for them, and counting the replies not written as asked.

A field is read tolerantly: the name in any case and spacing, markdown around the name or
the value (`**Subtask:** find the bowl`, `- *Action*: look`, `### Approved: 1`), quotes
around the value, the value on the next line. The last such line of a reply is its field.
A reply is in the form asked when that line is the plain `Name: value`; otherwise it is a
format failure, read tolerantly when it could be, else the caller's fallback: as in the
authors' code, a reply not in the form asked never ends a trial."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Optional

_LEAD = r"[ \t>#*_`~+-]*"   # headings, quotes, bullets and emphasis before a name
_EMPHASIS = "*_`~"
_QUOTES = "\"'"
_FIELD_LIKE = re.compile(rf"^{_LEAD}[A-Za-z][A-Za-z _-]{{0,40}}[*_`~ \t]*:")


@dataclass(frozen=True)
class Field:
    value: str       # "" when the reply has no such field
    found: bool      # the reply has the field (as asked or read tolerantly)
    as_asked: bool   # written `Name: value`, nothing around it


def _unwrapped(text: str) -> str:
    text = text.strip().strip(_EMPHASIS).strip()
    if len(text) > 1 and text[0] == text[-1] and text[0] in _QUOTES:
        text = text[1:-1].strip()
    return text


def _name(name: str) -> str:
    return r"[ \t_]+".join(re.escape(word) for word in name.split())


def read_field(reply: str, name: str) -> Field:
    """The reply's last `name` field, read tolerantly, and whether it was written as asked."""
    # greedy captures, stripped after: a lazy one before trailing spaces is quadratic
    tolerant = re.compile(rf"^{_LEAD}{_name(name)}[*_`~ \t]*:[*_`~]*(.*)$", re.I | re.M)
    found = list(tolerant.finditer(reply))
    if not found:
        return Field("", False, False)
    last = found[-1]
    value = _unwrapped(last.group(1))
    if not value:  # the value may follow on the next line
        following = [line for line in reply[last.end():].splitlines() if line.strip()]
        if following and not _FIELD_LIKE.match(following[0]):
            value = _unwrapped(following[0])
        return Field(value, bool(value), False)
    plain = re.fullmatch(rf"[ \t]*{re.escape(name)}[ \t]*:(.*)", last.group(0), re.I)
    return Field(value, True, plain is not None and plain.group(1).strip() == value)


def field(reply: str, name: str) -> Optional[str]:
    """The value of the reply's last `name` field (None when it has none)."""
    found = read_field(reply, name)
    return found.value if found.found else None


def last_line(reply: str) -> str:
    """The reply's last non-empty line, unwrapped: what a reply without its field meant."""
    lines = [line for line in reply.splitlines() if line.strip()]
    return _unwrapped(lines[-1].lstrip(" \t>#+-")) if lines else ""


class FormatCounts:
    """Per role, the replies not in the form asked (`format_failures`: read tolerantly or
    not at all) and, of those, the ones whose field could not be read, so that the
    caller's fallback was used (`format_fallbacks`), for the episode's record."""

    def __init__(self) -> None:
        self.failures: Counter[str] = Counter()
        self.fallbacks: Counter[str] = Counter()

    def note(self, role: str, found: Field) -> Field:
        if not found.as_asked:
            self.failures[role] += 1
        if not found.found:
            self.fallbacks[role] += 1
        return found

    def extra(self) -> dict[str, Any]:
        return {"format_failures": dict(self.failures), "format_fallbacks": dict(self.fallbacks)}
