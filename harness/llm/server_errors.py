"""What an OpenAI-compatible server's refusal says, whichever server sent it.

Servers shape their error bodies differently: OpenAI, llama.cpp and recent vLLM nest the
message (`{"error": {"message": ...}}`), older vLLM and SGLang put it at the top level
(`{"object": "error", "message": ...}`), Ollama's native API gives a string
(`{"error": "..."}`), FastAPI-based proxies a `detail`. `error_line` makes one readable line
of any of them (a message's first line: a server's traceback stays out); the classifiers below say what the refusal is about, from the wording
those servers use (checked against their sources and documented answers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

from lifebench.api.untrusted import parse_json

MAX_LINE = 300



@dataclass(frozen=True)
class ContextRefusal:
    """One server's way of saying a prompt is over the model's window: the statuses it
    sends it with, a wording it uses, the pattern that recognises it, and where the wording
    comes from."""

    server: str
    statuses: tuple[int, ...]
    example: str
    pattern: str
    source: str


# Every major server's wording of a prompt over the window, each recognised as
# `context_overflow` (the method's failure, never retried), whatever status carries it.
CONTEXT_REFUSALS: tuple[ContextRefusal, ...] = (
    ContextRefusal("OpenAI", (400,),
                   "This model's maximum context length is 8192 tokens. However, your messages "
                   "resulted in 9000 tokens. Please reduce the length of the messages.",
                   r"max(?:imum)? context length", "OpenAI API error docs, code context_length_exceeded"),
    ContextRefusal("OpenAI-style code", (400,), "context_length_exceeded",
                   r"context[ _]length[ _]exceeded", "OpenAI API `error.code` (also LiteLLM, Azure)"),
    ContextRefusal("vLLM", (400,),
                   "This model's maximum context length is 8192 tokens. However, you requested "
                   "9000 output tokens and your prompt contains at least 100 input tokens",
                   r"max(?:imum)? context length", "vllm-project/vllm PR #36197 (2026), serving_engine"),
    ContextRefusal("SGLang", (400,),
                   "The input (9000 tokens) is longer than the model's context length (8192 tokens).",
                   r"longer than the model'?s? context", "sgl-project/sglang tokenizer_manager"),
    ContextRefusal("llama.cpp (llama-server)", (400,),
                   "the request exceeds the available context size, try increasing it",
                   r"exceeds? (?:the )?(?:available )?context(?: size| length| window)?|exceed_context_size",
                   "ggml-org/llama.cpp tools/server: exceed_context_size_error"),
    ContextRefusal("llama.cpp (older llama-server)", (500,), "Context size has been exceeded.",
                   r"context size has been exceeded", "ggml-org/llama.cpp server, before b4500"),
    ContextRefusal("llama-cpp-python", (400,),
                   "Requested tokens (9000) exceed context window of 8192",
                   r"exceeds? (?:the )?context window", "llama-cpp-python llama.py (its server "
                   "reformats it as OpenAI's)"),
    ContextRefusal("TGI (prompt and completion)", (422,),
                   "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. "
                   "Given: 4000 `inputs` tokens and 200 `max_new_tokens`",
                   r"[`'\"]?inputs?[`'\"]? tokens? \+ [`'\"]?max_new_tokens[`'\"]? must be <=",
                   "huggingface/text-generation-inference router/src/validation.rs"),
    ContextRefusal("TGI (prompt alone)", (422,),
                   "Input validation error: `inputs` must have less than 4096 tokens. Given: 5000",
                   r"[`'\"]?inputs?[`'\"]? must have less than \d+ tokens",
                   "huggingface/text-generation-inference router/src/validation.rs"),
    ContextRefusal("LM Studio", (400, 200),
                   "Trying to keep the first 15857 tokens when context the overflows. However, the "
                   "model is loaded with context length of only 8192 tokens, which is not enough.",
                   r"when context the overflows|loaded with context length of only",
                   "lmstudio-ai/lmstudio-bug-tracker #237, #546 (a 200 with an error: #2322)"),
    ContextRefusal("Ollama (when it refuses)", (400, 500),
                   "prompt too long; exceeded max context length by 12 tokens",
                   r"prompt (?:is )?too long|exceeded max context length",
                   "ollama/ollama runner; by default Ollama truncates the prompt silently (200)"),
    ContextRefusal("Ollama (truncate off)", (400,),
                   "input length exceeds maximum context length",
                   r"input length .*exceeds", "ollama/ollama api, `truncate: false`"),
    ContextRefusal("Anthropic-compatible", (400,), "prompt is too long: 210000 tokens > 200000 maximum",
                   r"prompt (?:is )?too long", "Anthropic API invalid_request_error"),
    ContextRefusal("Mistral", (400,),
                   "Prompt contains 40000 tokens and 0 draft tokens, too large for model with "
                   "32768 maximum context length",
                   r"too large for model with \d+ maximum context length", "Mistral La Plateforme API"),
    ContextRefusal("generic", (400, 413, 422),
                   "Input is too long", r"input is too long|too many (?:input )?tokens|context window "
                   r"(?:is )?(?:full|exceeded)", "FastAPI-based proxies, LiteLLM, gateways"),
)
_CONTEXT_OVERFLOW = re.compile("|".join(f"(?:{r.pattern})" for r in CONTEXT_REFUSALS), re.I)
# Statuses a context refusal comes with, besides the 4xx refusals: llama.cpp's 500, LM
# Studio's 200 carrying an error object.
OVERFLOW_STATUSES = frozenset(s for r in CONTEXT_REFUSALS for s in r.statuses)
# A field the server does not take: "Unsupported parameter: 'seed'", "extra fields not
# permitted ... seed", "Unrecognized request argument supplied: seed", "unknown field".
_REJECTS = r"(?:unsupported|unrecognized|unknown|not (?:supported|permitted|allowed)|extra|invalid)"
_TOOLS_OFF = re.compile(r"tool[ _]choice.*(?:requires|enable-auto-tool-choice)|"
                        r"does not support tools|tools? (?:are|is) not supported|"
                        r"enable-auto-tool-choice", re.I)


def error_line(body: bytes) -> str:
    """One line, at most MAX_LINE characters, of what an error body says."""
    try:
        data = parse_json(body)
    except ValueError:
        data = None
    message = _message_of(data)
    if message is None:
        text = body.decode("utf-8", "replace")
        message = re.sub(r"<[^>]{0,200}>", " ", text) if "<" in text else text  # an HTML page
        lines = [" ".join(line.split()) for line in message.splitlines()]
        message = " ".join(line for line in lines if line)  # a page: its text on one line
    first = next((line.strip() for line in str(message).splitlines() if line.strip()), "")
    return (" ".join(first.split()) or "no message")[:MAX_LINE]


def _message_of(data: Any) -> Optional[str]:
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    if isinstance(error, dict):
        found = error.get("message") or error.get("msg")
        if found:
            return str(found)
    if isinstance(error, str) and error:
        return error
    for name in ("message", "detail"):  # vLLM and SGLang top level; FastAPI
        value = data.get(name)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, list) and value:  # FastAPI's validation errors
            first = value[0]
            return str(first.get("msg") if isinstance(first, dict) else first)
    return None


def is_context_overflow(message: str) -> bool:
    """The refusal says the prompt (with the completion's room) is over the model's window."""
    return bool(_CONTEXT_OVERFLOW.search(message))


def rejects_field(message: str, name: str) -> bool:
    """The refusal names request field `name` as one the server does not take."""
    quoted = rf"['\"`]?{re.escape(name)}['\"`]?"
    return bool(re.search(rf"{_REJECTS}[^.]*\b{quoted}(?![\w])", message, re.I)
                or re.search(rf"\b{quoted}\b[^.]*{_REJECTS}", message, re.I))


def rejects_tools(message: str) -> bool:
    """The refusal says the server does not do tool calling (vLLM without
    `--enable-auto-tool-choice`, a model whose template has no tools)."""
    return bool(_TOOLS_OFF.search(message)) or rejects_field(message, "tools")


def wants_max_completion_tokens(message: str) -> bool:
    """The endpoint refuses `max_tokens` and names `max_completion_tokens` instead (OpenAI's
    reasoning models)."""
    return "max_completion_tokens" in message and rejects_field(message, "max_tokens")
