"""Fitting a prompt to the model's context window: one policy for every method.

The prompt's tokens plus the completion's cap must fit the window. When they do not, the
oldest history items (`lifebench.api.prompt`) are left out, one at a time, until they do;
the system prompt, the instructions, the examples and the latest observation stay, and a
one-line marker says how many items were left out. A prompt that still does not fit is
sent as it is: the server's refusal then ends the episode as `context_overflow`.

Tokens are counted by the server's tokenizer where it offers one (vLLM's and SGLang's
`/tokenize`; each distinct text is asked once), else estimated at 3 characters a token,
which overestimates English text and code for the tokenizers of current open models (about
4 characters a token), so an estimated fit errs on the side of fitting. The chat template's
own tokens are the endpoint's `Framing` (`lifebench.llm.server_tokens`: learned from the
server's rendering of its template where it has one, else 8 tokens a message), and 2% of the
window (at least 16 tokens) is kept free.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from lifebench.api.prompt import HISTORY_KEY, Prompt, PromptPart
from lifebench.llm.server_tokens import DEFAULT_FRAMING, Framing

CHARS_PER_TOKEN = 3
MARKER = "[{n} earlier {items} left out here to fit the model's context window]\n"
_COUNTS_KEPT = 65536


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


class TokenCounter:
    """Tokens of texts: `tokenize` (the server's count of one text, or None when it has no
    tokenizer endpoint) asked once per distinct text, else the estimate."""

    def __init__(self, tokenize: Optional[Callable[[str], Optional[int]]] = None) -> None:
        self._tokenize = tokenize
        self._counts: "OrderedDict[bytes, int]" = OrderedDict()
        self._lock = threading.Lock()
        self.asked = 0  # texts the server counted

    def __call__(self, text: str) -> int:
        if not text:
            return 0
        if self._tokenize is None:
            return estimate_tokens(text)
        # (a lone surrogate must not fail the key: the prompt is made encodable when sent)
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self._lock:
            if key in self._counts:
                self._counts.move_to_end(key)
                return self._counts[key]
        counted = self._tokenize(text)
        if counted is None:  # no tokenizer there after all: estimate from now on
            self._tokenize = None
            return estimate_tokens(text)
        with self._lock:
            self.asked += 1
            self._counts[key] = counted
            if len(self._counts) > _COUNTS_KEPT:
                self._counts.popitem(last=False)
        return counted


@dataclass(frozen=True)
class Fitted:
    messages: list[dict[str, Any]]  # as sent: marks removed, items left out
    left_out: int  # history items left out
    tokens: int  # the prompt's counted tokens, as sent (0 when no window was given)


def _message_tokens(message: dict[str, Any], count: Callable[[str], int], framing: Framing) -> int:
    content = message.get("content")
    if isinstance(content, Prompt):
        tokens = sum(count(p.text) for p in content.parts)
    else:
        tokens = count(content if isinstance(content, str) else json.dumps(content or ""))
    for call in message.get("tool_calls") or ():
        tokens += count(json.dumps(call.get("function") if isinstance(call, dict) else call))
    return tokens + framing.per_message


def fit_messages(messages: Sequence[dict[str, Any]], window: Optional[int], cap: Optional[int],
                 count: Callable[[str], int], framing: Framing = DEFAULT_FRAMING) -> Fitted:
    """`messages` fitted to `window` tokens with room for `cap` completion tokens (no window:
    only the marks removed)."""
    if window is None:
        return Fitted(_plain(messages), 0, 0)
    sizes = [_message_tokens(m, count, framing) for m in messages]
    # the template's tokens outside the messages (the first message is never left out)
    total = sum(sizes) + framing.tokens(list(messages)) - framing.per_message * len(messages)
    budget = window - (cap or 0) - max(16, window // 50)
    if total <= budget:
        return Fitted(_plain(messages), 0, total)
    # the history items, oldest first: a message group (by its mark) or a part of a Prompt
    items: list[tuple[str, Any, int]] = []
    groups: dict[Any, list[int]] = {}
    for i, message in enumerate(messages):
        if HISTORY_KEY in message:
            mark = message[HISTORY_KEY]
            if mark not in groups:
                groups[mark] = []
                items.append(("messages", mark, 0))
            groups[mark].append(i)
        content = message.get("content")
        if isinstance(content, Prompt):
            items += [("part", (i, k), count(p.text)) for k, p in enumerate(content.parts) if p.history]
    dropped_messages: dict[int, Any] = {}  # message index -> its item's mark
    dropped_parts: set[tuple[int, int]] = set()
    left_out = 0
    for kind, where, tokens in items:  # message groups and parts in the prompt's order
        if total <= budget:
            break
        if kind == "messages":
            indices = groups[where]
            total -= sum(sizes[i] for i in indices)
            dropped_messages.update((i, where) for i in indices)
        else:
            total -= tokens
            dropped_parts.add(where)
        left_out += 1
    built = _build(messages, dropped_messages, dropped_parts)
    return Fitted(built, left_out, sum(_message_tokens(m, count, framing) for m in built)
                  + framing.tokens(built) - framing.per_message * len(built))


def _plain(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as sent: no marks, a Prompt's text as a plain str."""
    out = []
    for m in messages:
        if HISTORY_KEY in m or type(m.get("content")) is Prompt:
            m = {k: (str(v) if k == "content" and v is not None else v)
                 for k, v in m.items() if k != HISTORY_KEY}
        out.append(m)
    return out


def _marker(n: int) -> str:
    return MARKER.format(n=n, items="item was" if n == 1 else "items were")


def _build(messages: Sequence[dict[str, Any]], dropped_messages: dict[int, Any],
           dropped_parts: set[tuple[int, int]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    pending: set[Any] = set()  # items left out whose marker waits for the next user message
    for i, message in enumerate(messages):
        if i in dropped_messages:
            pending.add(dropped_messages[i])
            continue
        message = {k: v for k, v in message.items() if k != HISTORY_KEY}
        content = message.get("content")
        if isinstance(content, Prompt):
            parts, run = [], 0
            for k, part in enumerate(content.parts):
                if (i, k) in dropped_parts:
                    run += 1
                    continue
                if run:
                    parts.append(PromptPart(_marker(run)))
                    run = 0
                parts.append(part)
            if run:
                parts.append(PromptPart(_marker(run)))
            message["content"] = "".join(p.text for p in parts)
        if pending and message.get("role") == "user":
            message["content"] = _marker(len(pending)) + str(message.get("content") or "")
            pending = set()
        out.append(message)
    if pending:  # no user message after them (tool results): said after the last one before
        before = [m for m in out if m.get("role") == "user"]
        if before:
            before[-1]["content"] = str(before[-1].get("content") or "") + "\n" + _marker(len(pending)).rstrip()
    return out
