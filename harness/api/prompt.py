"""What of a method's prompt may be left out when it outgrows the model's context window.

The LLM layer fits every prompt to the window by one policy (`lifebench.llm.window`): it
keeps the fixed parts (system prompt, instructions, examples, memory) and the latest
observation, and leaves out the oldest history items first, putting a one-line marker
where they were. A method says which parts are history in one of two ways:

- a chat history, one message per turn: mark its messages with `mark_history` (all but
  the latest observation; messages of one turn share an item number and go together, so
  roles still alternate);
- a history inside one message (a transcript in a user prompt): build that message's
  content as a `Prompt` of parts, its history items marked with `history(...)`.

Unmarked content is fixed. The marks never reach the server.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

# A message's history item number (messages with the same number are left out together).
HISTORY_KEY = "lifebench_history"


@dataclass(frozen=True)
class PromptPart:
    text: str
    history: bool = False  # an item the window may drop, oldest first


def fixed(text: str) -> PromptPart:
    return PromptPart(text)


def history(text: str) -> PromptPart:
    return PromptPart(text, history=True)


class Prompt(str):
    """Message content as its parts: the text is the parts joined (as they are, no
    separator added); `parts` tells the window which of them are history items."""

    parts: tuple[PromptPart, ...]

    def __new__(cls, parts: Iterable[PromptPart]) -> "Prompt":
        parts = tuple(p for p in parts if p.text)
        text = super().__new__(cls, "".join(p.text for p in parts))
        text.parts = parts
        return text


def mark_history(messages: Sequence[dict[str, Any]], per_item: int = 2,
                 keep_last: int = 1) -> list[dict[str, Any]]:
    """`messages` (a chat history whose last message is the latest observation) with every
    message but the last `keep_last` marked as history, `per_item` consecutive messages to
    an item (a turn: its observation and the reply to it, so roles still alternate when
    items are left out)."""
    cut = max(0, len(messages) - keep_last)
    out = [{**m, HISTORY_KEY: i // per_item} for i, m in enumerate(messages[:cut])]
    return out + list(messages[cut:])


def mark_groups(groups: Sequence[Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The messages of `groups` (turns of any length: a tool call and its result, a reply
    and its feedback), each group but the last one history item."""
    out: list[dict[str, Any]] = []
    for number, group in enumerate(groups):
        last = number == len(groups) - 1
        out += [dict(m) if last else {**m, HISTORY_KEY: number} for m in group]
    return out


def split_history(text: str, boundary: str) -> Prompt:
    """`text` cut before each match of the regex `boundary` (a step of a trajectory, a
    turn of a transcript): the first piece (where it starts) and the last (the latest)
    kept, the pieces between them history, dropped oldest first; the text unchanged."""
    pieces = re.split(f"(?={boundary})", text)
    steps = pieces[1:]
    return Prompt([fixed(pieces[0]), *(history(p) for p in steps[:-1]), *(fixed(p) for p in steps[-1:])])


def filled(template: str, field: str, parts: Sequence[PromptPart], **values: Any) -> Prompt:
    """`template.format(field=<the parts' text>, **values)` as a Prompt: the template's own
    text and the other values are fixed, `parts` keep their marks."""
    sentinel = "\x00lifebench-parts\x00"
    head, found, tail = template.format(**{field: sentinel}, **values).partition(sentinel)
    if not found:
        raise ValueError(f"the template has no {{{field}}}")
    return Prompt([PromptPart(head), *parts, PromptPart(tail)])
