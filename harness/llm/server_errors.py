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
from typing import Any, Optional

from lifebench.api.untrusted import parse_json

MAX_LINE = 300

# A prompt longer than the model's window, in the words of OpenAI, vLLM, SGLang, llama.cpp,
# Ollama, TGI and LiteLLM.
_CONTEXT_OVERFLOW = re.compile(
    r"max(?:imum)? context length|context[ _]length[ _]exceeded|exceeds? (?:the )?(?:available )?"
    r"context(?: size| length| window)?|exceed_context_size|longer than the model'?s? context"
    r"|context window (?:is )?(?:full|exceeded)|prompt (?:is )?too long|input is too long"
    r"|too many (?:input )?tokens|input length .* exceeds|inputs? tokens? .*must be <=", re.I)
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
