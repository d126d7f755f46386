"""A reasoning model's answer without its reasoning.

Served with a reasoning parser (vLLM `--reasoning-parser`, SGLang, llama.cpp
`--reasoning-format`, Ollama `think`), the reasoning arrives in its own field
(`reasoning_content`, or `reasoning`) and `content` is the answer. Served without one, it
arrives inside `content` between tags: `<think>…</think>` (DeepSeek-R1, Qwen3, QwQ),
`<thinking>`, `<reasoning>`, `<reflection>`, or `<|begin_of_thought|>…<|end_of_thought|>`.
Chat templates that open the tag in the prompt (R1's) leave only the closing tag in the
reply, and a reply cut at its token cap leaves the opening tag unclosed. In every case the
answer is what follows the reasoning, and the reasoning is kept beside it, never parsed as
an action.
"""

from __future__ import annotations

import re
from typing import Any

_TAGS = (("<think>", "</think>"), ("<thinking>", "</thinking>"), ("<reasoning>", "</reasoning>"),
         ("<reflection>", "</reflection>"), ("<|begin_of_thought|>", "<|end_of_thought|>"))
_FIELDS = ("reasoning_content", "reasoning")
_SPACE = re.compile(r"^\s+")
_BLANK = re.compile(r"\s*")


def split_reasoning(message: dict[str, Any], opened_in_prompt: bool = False,
                    cut: bool = False) -> tuple[str, str]:
    """(reasoning, answer) of a completion's message. `opened_in_prompt`: the endpoint's
    template opens the reasoning tag itself (seen before: a reply with a closing tag alone),
    so a reply `cut` at its cap before any closing tag is reasoning, all of it."""
    content = message.get("content")
    content = content if isinstance(content, str) else ""
    parts = [message[name] for name in _FIELDS if isinstance(message.get(name), str) and message[name]]
    if opened_in_prompt and cut and not any(closing in content.lower() for _, closing in _TAGS):
        return "\n\n".join(parts + [content.strip()]).strip(), ""
    reasoning, answer = split_tagged(content)
    if reasoning:
        parts.append(reasoning)
    return "\n\n".join(parts), answer


def closes_only(content: str) -> bool:
    """The reply closes a reasoning tag it never opened (the template opened it)."""
    lowered = content.lower()
    return any(closing in lowered and opening not in lowered for opening, closing in _TAGS)


def split_tagged(content: str) -> tuple[str, str]:
    """(reasoning, answer) of text that may hold reasoning between tags: every tagged block
    at its start, a block left open (all reasoning), or a closing tag alone (everything
    before it is reasoning). Linear in the text's length, however many blocks it holds."""
    lowered = content.lower()
    reasoning: list[str] = []
    at = 0
    while True:
        start = _BLANK.match(lowered, at).end()
        for opening, closing in _TAGS:
            if lowered.startswith(opening, start):
                end = lowered.find(closing, start + len(opening))
                if end < 0:  # never closed: cut at the token cap, or no answer at all
                    reasoning.append(content[start + len(opening):].strip())
                    return "\n\n".join(r for r in reasoning if r), ""
                reasoning.append(content[start + len(opening):end].strip())
                at = end + len(closing)
                break
        else:
            break
    rest = content[at:]
    if not reasoning:
        for opening, closing in _TAGS:  # the template opened the tag in the prompt
            end = lowered.find(closing)
            if end >= 0 and opening not in lowered[:end]:
                return rest[:end].strip(), _SPACE.sub("", rest[end + len(closing):])
    return "\n\n".join(r for r in reasoning if r), _SPACE.sub("", rest) if reasoning else rest
