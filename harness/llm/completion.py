"""What a chat completion must look like before lifebench reads it, and how each shape that
servers send is read: a server's answer and a cached row alike come from outside the
process (a proxy's error page, a hand-edited or corrupted cache file), so each is checked
here, and a bad one is a malformed answer (asked once more, then the method's unreadable
reply) or a cache miss, never an exception in the middle of an episode.

The shapes read (each seen from real servers or proxies):
- `content` a string, or null with `tool_calls`;
- `content` a list of parts (`{"type": "text", "text": ...}`; reasoning parts, `reasoning`
  or `thinking`, kept as reasoning; a `refusal` part as the refusal);
- tool-call `arguments` a JSON string, or already an object (Ollama's native format);
- `refusal` (OpenAI's structured refusal): no answer, the refusal's text kept;
- several `choices`: the first is read.
An empty `choices` is malformed. A 200 that carries an `error` object instead of a completion
(LM Studio, some gateways) is an in-band error (`in_band_error`): the server's failure, not
the model's reply.

End-of-turn tokens a server leaves at the end of a reply (a stop list that misses the
model's own: `<|im_end|>`, `</s>`, `<|eot_id|>`, `<end_of_turn>`, ...) are stripped, with the
whitespace around them, before any method reads the reply (`strip_end_tokens`); the answer
as the server sent it is what the run keeps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

# The end-of-turn and end-of-text tokens of the common open models' templates: ChatML (Qwen,
# SmolLM), Llama 2 and Mistral, Llama 3, Gemma, Phi-3, GPT-2-style tokenizers, DeepSeek,
# gpt-oss.
END_OF_TURN_TOKENS = ("<|im_end|>", "</s>", "<|eot_id|>", "<|end_of_text|>", "<end_of_turn>",
                      "<eos>", "<|end|>", "<|endoftext|>", "<｜end▁of▁sentence｜>", "<|return|>")
_TRAILING_END = re.compile("(?:\\s*(?:" + "|".join(map(re.escape, END_OF_TURN_TOKENS)) + "))+\\s*$")

_TEXT_PARTS = ("text", "output_text")
_REASONING_PARTS = ("reasoning", "thinking", "reasoning_content")


def strip_end_tokens(text: str) -> tuple[str, int]:
    """`text` without its trailing run of end-of-turn tokens (and the whitespace among them),
    and how many tokens were stripped."""
    found = _TRAILING_END.search(text)
    if found is None:
        return text, 0
    run = found.group(0)
    return text[:found.start()].rstrip(), sum(run.count(token) for token in END_OF_TURN_TOKENS)


def in_band_error(data: Any) -> Optional[str]:
    """The message of a 200 that carries an `error` instead of a completion; None else."""
    if not isinstance(data, dict) or "error" not in data or data.get("choices"):
        return None
    error = data["error"]
    message = error.get("message") if isinstance(error, dict) else error
    return str(message)[:300] if message else "an error with no message"


def completion_problem(data: Any) -> Optional[str]:
    """What is wrong with `data` as an OpenAI chat completion; None when it can be read."""
    if not isinstance(data, dict):
        return "not a JSON object"
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        return "no choices"
    choice = choices[0]
    if not isinstance(choice, dict):
        return "its choice is not an object"
    message = choice.get("message")
    if message is None:
        message = {}
    if not isinstance(message, dict):
        return "its message is not an object"
    problem = _content_problem(message.get("content"))
    if problem:
        return problem
    refusal = message.get("refusal")
    if refusal is not None and not isinstance(refusal, str):
        return "its refusal is not text"
    calls = message.get("tool_calls")
    if calls is not None:
        if not isinstance(calls, list):
            return "its tool_calls are not a list"
        for call in calls:
            function = call.get("function") if isinstance(call, dict) else None
            arguments = function.get("arguments") if isinstance(function, dict) else None
            if not isinstance(function, dict) or not isinstance(function.get("name", ""), str) \
                    or not (arguments is None or isinstance(arguments, (str, dict))):
                return "a tool call is not a function with a name and JSON arguments"
    usage = data.get("usage")
    if usage is not None:
        if not isinstance(usage, dict):
            return "its usage is not an object"
        for name in ("prompt_tokens", "completion_tokens"):
            value = usage.get(name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 0):
                return f"its usage's {name} is not a count"
    return None


def _content_problem(content: Any) -> Optional[str]:
    if content is None or isinstance(content, str):
        return None
    if not isinstance(content, list):
        return "its content is not text"
    for part in content:
        if not isinstance(part, dict) or not isinstance(part.get("type", ""), str):
            return "its content is a list of something other than parts"
        text = _part_text(part)
        if text is not None and not isinstance(text, str):
            return "a part of its content is not text"
    return None


def _part_text(part: dict[str, Any]) -> Any:
    """A part's text: `text`, or the field named by its type (`thinking`, `refusal`)."""
    return part.get("text", part.get(str(part.get("type"))))


@dataclass(frozen=True)
class ReadMessage:
    """The first choice's message as lifebench reads it."""

    message: dict[str, Any]  # with `content` as one string (its text parts joined)
    part_reasoning: str  # reasoning that came as content parts
    refusal: str  # the model's refusal, where it refused
    choices: int  # how many choices the server sent


def read_message(data: dict[str, Any]) -> ReadMessage:
    """The first choice's message of a completion that `completion_problem` passed, with a
    list of content parts joined into text (reasoning and refusal parts set apart)."""
    choices = data["choices"]
    message = dict(choices[0].get("message") or {})
    reasoning: list[str] = []
    refusal = message.get("refusal") or ""
    content = message.get("content")
    if isinstance(content, list):
        texts = []
        for part in content:
            kind, text = str(part.get("type", "text")), _part_text(part)
            if not isinstance(text, str):
                continue  # an image or audio part: nothing a text agent reads
            if kind in _REASONING_PARTS:
                reasoning.append(text)
            elif kind == "refusal":
                refusal = refusal or text
            elif kind in _TEXT_PARTS or "text" in part:
                texts.append(text)
        message["content"] = "".join(texts) if texts else None
    return ReadMessage(message, "\n\n".join(reasoning), refusal, len(choices))
