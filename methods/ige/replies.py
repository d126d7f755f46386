"""Reading the model's replies: the state choice (`Choose > N`, `Remove > [..]`) and the
action (`> ACTION`), and matching free action text to an admissible command.

Matching: an exact match (case, spaces, articles and a final period aside) is taken; else,
among the admissible commands whose words contain the text's words or are contained in
them ("take knife" -> "take knife from counter"; never "go west" -> "go east"), the one
most similar by `difflib` at or above a cutoff; else the text is played as written, and the env's own parser answers it (the authors sent the model's free
text to TextWorld unmatched). Actions the benchmark guards (ScienceWorld's `focus on`,
which ends the task when wrong) are candidates only for a text that names the guard, and
such a text that matches none of them becomes the benchmark's no-op. A bare number passes
through (it answers the env's "which one did you mean?").
"""

from __future__ import annotations

import difflib
import re
from typing import Optional, Sequence

_CHOOSE = re.compile(r"choose\s*>\s*\[?\s*(?:state\s*)?(\d+)", re.I)
_REMOVE = re.compile(r"remove\s*>\s*\[([^\]]*)\]", re.I)
_ACTION = re.compile(r"^\s*>\s*(.+?)\s*$", re.M)


def parse_choice(text: str, count: int) -> tuple[Optional[int], list[int]]:
    """(chosen index or None when missing or out of range, indexes to remove)."""
    chosen = [int(m) for m in _CHOOSE.findall(text)]
    choice = chosen[-1] if chosen and 0 <= chosen[-1] < count else None
    removals: list[int] = []
    found = _REMOVE.findall(text)
    if found:
        removals = [int(n) for n in re.findall(r"\d+", found[-1]) if int(n) < count]
    return choice, removals


def marked_action(text: str) -> Optional[str]:
    """The action of a reply's last `> ACTION` line; None when it has none."""
    found = _ACTION.findall(text)
    return _bare(found[-1]) if found else None


def parse_action(text: str) -> str:
    """The action of a reply: its last `> ACTION` line; else a one-line reply; else its
    last line."""
    marked = marked_action(text)
    if marked is not None:
        return marked
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return _bare(lines[-1]) if lines else ""


def _bare(action: str) -> str:
    """An action without an "Action:" label and the quotes around it."""
    action = re.sub(r"^(?:action\s*:\s*)", "", action, flags=re.I)
    return action.strip().strip("`\"'").strip()


_ARTICLES = frozenset({"a", "an", "the"})
_WORD = re.compile(r"[a-z0-9]+")


def normalise(text: str) -> str:
    words = text.strip().rstrip(".").lower().split()
    return " ".join(w for w in words if w not in _ARTICLES)


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text)) - _ARTICLES


def match_action(text: str, valid: Sequence[str], guarded: Sequence[str], noop: str,
                 cutoff: float) -> tuple[str, str]:
    """(action to play, how it was found: exact | number | close | unmatched | noop)."""
    said = normalise(text)
    if not said:
        return noop, "noop"
    if said.isdigit():
        return said, "number"
    table = {normalise(a): a for a in valid}
    if said in table:
        return table[said], "exact"
    guards = tuple(g.lower() for g in guarded)
    guard = next((g for g in guards if said.startswith(g)), None)
    if guard is not None:
        pool = [n for n in table if n.startswith(guard)]
    else:
        pool = [n for n in table if not (guards and n.startswith(guards))]
    mine = _words(said)
    related = [n for n in pool if mine and ((w := _words(n)) and (mine <= w or w <= mine))]
    scored = sorted(((difflib.SequenceMatcher(None, said, n).ratio(), -i, n)
                     for i, n in enumerate(related)), reverse=True)
    if scored and scored[0][0] >= cutoff:
        return table[scored[0][2]], "close"
    if guard is not None:
        return noop, "noop"
    return text.strip(), "unmatched"
