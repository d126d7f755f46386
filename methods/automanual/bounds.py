"""How much of what a plan produces reaches a prompt, a trajectory and a record: each cut
says how much it left out, so the Planner knows it did not see everything."""

from __future__ import annotations

MAX_FEEDBACK_CHARS = 4_000   # of an error or a print
MAX_ACTION_CHARS = 2_000     # of an action's text: the call as written and the command played
MAX_RUN_CHARS = 16_000       # of everything one plan run puts into one prompt


def cut(text: str, limit: int) -> str:
    """`text`'s first `limit` characters, with a marker when there were more."""
    if len(text) <= limit:
        return text
    return text[:limit] + f" ... ({len(text) - limit} more characters cut)"


def shorten(text: str, limit: int) -> str:
    """`text` within `limit` characters: its start and its end, the middle cut."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - limit} characters left out ...]\n{text[len(text) - tail:]}"
