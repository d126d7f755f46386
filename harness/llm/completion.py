"""What a chat completion must look like before lifebench reads it: a server's answer and a
cached row alike come from outside the process (a proxy's error page, a hand-edited or
corrupted cache file), so each is checked here, and a bad one is a malformed answer (asked
again) or a cache miss, never an exception in the middle of an episode."""

from __future__ import annotations

from typing import Any, Optional


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
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        return "its content is not text"
    calls = message.get("tool_calls")
    if calls is not None:
        if not isinstance(calls, list):
            return "its tool_calls are not a list"
        for call in calls:
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict) or not isinstance(function.get("name", ""), str) \
                    or not isinstance(function.get("arguments") or "", str):
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
