"""How a server counts tokens, in each server family's dialect: one reader for all of them.

Tokenizer endpoints, tried in this order on the server's root (the base URL without `/v1`);
the first that answers a count is kept for the process:

| dialect | request | answer |
| --- | --- | --- |
| vLLM, SGLang | `POST /tokenize` `{"model", "prompt", "add_special_tokens": false}` | `{"count": N}` |
| llama.cpp's `llama-server` | `POST /tokenize` `{"content", "add_special": false}` | `{"tokens": [...]}` |
| llama-cpp-python's server | `POST /extras/tokenize/count` `{"model", "input"}` | `{"count": N}` |

The chat template's own tokens (the role markers around each message, the assistant's
opening, a default system prompt some templates add when the first message is not a system
one) are learned once per endpoint where the server renders its template
(`POST /apply-template` `{"messages"}` -> `{"prompt"}`: llama-server, and lifebench's
embedded server): three small conversations rendered and counted give a `Framing`. A server
without it keeps the default framing, 8 tokens a message, which covers the common templates.

Everything a server sends here is bounded (the transport's deadline and size) and checked: a
count that is not a non-negative integer, or a framing out of its bounds, is no answer.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Callable, Optional

from lifebench.api.untrusted import parse_json
from lifebench.llm.transport import TransportFailure, TransportTimeout, endpoint

MAX_TOKENIZE_ANSWER = 8 << 20  # a long text's token list (llama-server answers the ids)
DEFAULT_PER_MESSAGE = 8
# what one message's framing may plausibly cost: a rendering outside this is not believed
_MAX_PER_MESSAGE = 64
_MAX_FIXED = 4096


@dataclass(frozen=True)
class Framing:
    """Tokens a chat template adds to a prompt: `per_message` around each message, `fixed`
    once (the assistant's opening), and `without_system` more when the first message is not
    a system one (a default system prompt)."""

    per_message: int = DEFAULT_PER_MESSAGE
    fixed: int = 0
    without_system: int = 0

    def tokens(self, messages: list[dict[str, Any]]) -> int:
        first_is_system = bool(messages) and messages[0].get("role") == "system"
        return (self.per_message * len(messages) + self.fixed
                + (0 if first_is_system else self.without_system))

    def encoded(self) -> str:
        return f"{self.per_message},{self.fixed},{self.without_system}"

    @classmethod
    def decoded(cls, text: Optional[str]) -> "Framing":
        """The framing `encoded` wrote (a run's manifest); the default for none or nonsense."""
        try:
            per_message, fixed, without_system = (int(v) for v in str(text).split(","))
        except (TypeError, ValueError):
            return DEFAULT_FRAMING
        found = cls(per_message, fixed, without_system)
        return found if _plausible(found) else DEFAULT_FRAMING

    def manifest(self) -> dict[str, int]:
        return {"per_message": self.per_message, "fixed": self.fixed,
                "without_system": self.without_system}

    @classmethod
    def from_manifest(cls, found: dict[str, Any]) -> "Framing":
        """The framing `manifest` wrote; the default for anything else."""
        return cls.decoded(",".join(str(found.get(k)) for k in ("per_message", "fixed",
                                                                 "without_system")))


DEFAULT_FRAMING = Framing()


def _plausible(framing: Framing) -> bool:
    return (0 <= framing.per_message <= _MAX_PER_MESSAGE and 0 <= framing.fixed <= _MAX_FIXED
            and 0 <= framing.without_system <= _MAX_FIXED)


def server_root(base_url: str) -> str:
    """The server's root: its OpenAI routes' base URL without `/v1`."""
    root = base_url.rstrip("/")
    return root[:-3] if root.endswith("/v1") else root


def _count(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _vllm(data: Any) -> Optional[int]:
    return _count(data.get("count")) if isinstance(data, dict) else None


def _llama_server(data: Any) -> Optional[int]:
    tokens = data.get("tokens") if isinstance(data, dict) else None
    return len(tokens) if isinstance(tokens, list) and "count" not in data else None


# (the path its source is named by, the request body, the answer's reader)
_DIALECTS: tuple[tuple[str, Callable[[str, str], dict[str, Any]], Callable[[Any], Optional[int]]], ...] = (
    ("/tokenize", lambda model, text: {"model": model, "prompt": text, "add_special_tokens": False}, _vllm),
    ("/tokenize", lambda model, text: {"content": text, "add_special": False}, _llama_server),
    ("/extras/tokenize/count", lambda model, text: {"model": model, "input": text}, _vllm),
)


class ServerTokenizer:
    """The server's token count of a text (`__call__`: None when it has no tokenizer
    endpoint); `source` names the endpoint that counts (its path), once one answered."""

    def __init__(self, base_url: str, model: str, timeout_s: float, key: str) -> None:
        self.model = model
        self._server = endpoint(server_root(base_url), min(timeout_s, 30.0), MAX_TOKENIZE_ANSWER)
        self._headers = {"Content-Type": "application/json", "Accept": "application/json",
                         "Authorization": f"Bearer {key or 'no-key'}"}  # behind the same key
        self._dialect: Optional[int] = None  # index into _DIALECTS once one answered
        self.source = ""

    def _ask(self, index: int, text: str) -> tuple[Optional[int], bool]:
        """(the count, or None; whether the server answered at all)."""
        path, body, read = _DIALECTS[index]
        try:
            answer = self._server.post(path, json.dumps(body(self.model, text)).encode(), self._headers)
        except (TransportFailure, TransportTimeout):
            return None, False
        try:
            return (read(parse_json(answer.body)) if answer.status == 200 else None), True
        except ValueError:
            return None, True

    def __call__(self, text: str) -> Optional[int]:
        if self._dialect is not None:
            return self._ask(self._dialect, text)[0]
        for index in range(len(_DIALECTS)):
            counted, answered = self._ask(index, text)
            if counted is not None:
                self._dialect, self.source = index, _DIALECTS[index][0]
                return counted
            if not answered:  # no answer in time: asking it another way would cost as long
                return None
        return None

    def render(self, messages: list[dict[str, str]]) -> Optional[str]:
        """The prompt the server's chat template makes of `messages`, where it says."""
        try:
            answer = self._server.post("/apply-template", json.dumps({"messages": messages}).encode(),
                                       self._headers)
            prompt = parse_json(answer.body).get("prompt") if answer.status == 200 else None
        except (TransportFailure, TransportTimeout, ValueError, AttributeError):
            return None
        return prompt if isinstance(prompt, str) else None


# three small conversations: with a system message (2 and 4 messages) and without one
_WORDS = ("Alpha.", "Bravo.", "Charlie.", "Delta.")


def learn_framing(tokenizer: ServerTokenizer) -> Optional[Framing]:
    """The template's framing, from the server's own rendering and count of three small
    conversations; None where it does not render its template (or counts nothing). One token
    a message is added for the joins where a message's first or last token may merge."""
    a, b, c, d = _WORDS
    two = [{"role": "system", "content": a}, {"role": "user", "content": b}]
    four = two + [{"role": "assistant", "content": c}, {"role": "user", "content": d}]
    alone = [{"role": "user", "content": b}]
    counts = []
    for conversation in (two, four, alone):
        prompt = tokenizer.render(conversation)
        counted = tokenizer(prompt) if prompt else None
        if counted is None:
            return None
        counts.append(counted)
    words = [tokenizer(w) for w in _WORDS]
    if any(w is None for w in words):
        return None
    t2, t4, t1 = counts
    wa, wb, wc, wd = words  # type: ignore[misc]
    per_message = math.ceil((t4 - t2 - wc - wd) / 2)
    fixed = t2 - wa - wb - 2 * per_message
    without_system = t1 - wb - per_message - fixed
    found = Framing(per_message + 1, max(0, fixed), max(0, without_system))
    return found if _plausible(found) and per_message >= 0 else None
