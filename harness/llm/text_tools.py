"""Tool calling as text, for servers that do not do it natively (`--llm-tool-protocol text`).

The same tools a method offers are described in the system prompt, and the model is asked to
answer with one JSON object `{"tool": NAME, "arguments": {...}}`. The conversation's earlier
calls and their results are written the same way, so the model sees its own protocol. A
reply with no readable call has no tool calls: the method treats it as it treats a native
reply without one (an invalid call). The protocol is part of each stream's identity
(`LLMConfig.answer_settings`): its records are never pooled with native tool calling's.
"""

from __future__ import annotations

import json
from typing import Any, Optional, Sequence

from lifebench.api.llm import ToolCall
from lifebench.api.untrusted import parse_json

def describe_tools(tools: Sequence[dict[str, Any]]) -> str:
    lines = ["You can call these tools. To call one, answer with a single JSON object and "
             "nothing else: {\"tool\": \"<name>\", \"arguments\": {<the arguments>}}.", "Tools:"]
    for tool in tools:
        function = tool.get("function") or {}
        parameters = json.dumps(function.get("parameters") or {}, sort_keys=True)
        lines.append(f"- {function.get('name', '')}: {function.get('description', '')} "
                     f"Arguments (JSON schema): {parameters}")
    return "\n".join(lines)


def as_text_messages(messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """`messages` for a server without tool calling: the tools described in the system
    message, earlier calls as their JSON, tool results as user messages."""
    out: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # tool_call_id -> the tool's name
    for message in messages:
        role = message.get("role")
        if role == "assistant" and message.get("tool_calls"):
            calls = []
            for call in message["tool_calls"]:
                function = call.get("function") or {}
                names[str(call.get("id"))] = function.get("name", "")
                try:
                    arguments = json.loads(function.get("arguments") or "{}")
                except ValueError:
                    arguments = function.get("arguments")
                calls.append(json.dumps({"tool": function.get("name", ""), "arguments": arguments},
                                        sort_keys=True))
            text = "\n".join(filter(None, [message.get("content") or ""] + calls))
            out.append({"role": "assistant", "content": text})
        elif role == "tool":
            name = names.get(str(message.get("tool_call_id")), "the tool")
            out.append({"role": "user", "content": f"Result of {name}: {message.get('content') or ''}"})
        else:
            out.append({k: v for k, v in message.items() if k in ("role", "content", "name")})
    description = describe_tools(tools)
    if out and out[0].get("role") == "system":
        out[0] = {**out[0], "content": f"{out[0].get('content') or ''}\n\n{description}"}
    else:
        out.insert(0, {"role": "system", "content": description})
    return out


def read_tool_call(text: str) -> Optional[ToolCall]:
    """The call in a text-protocol reply (a fenced or bare JSON object with "tool"), or None.
    Linear in the reply's length: fences are split, not searched by pattern."""
    fenced = text.split("```")[1:-1:2]  # the insides of complete fences
    candidates = [block[4:] if block.startswith("json") else block for block in fenced]
    candidates = [block.strip() for block in candidates if block.strip().startswith("{")]
    start, end = text.find("{"), text.rfind("}")
    if start >= 0 and end > start:
        candidates.append(text[start:end + 1])
    for candidate in candidates:
        try:
            data = parse_json(candidate)
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("tool"), str):
            arguments = data.get("arguments")
            return ToolCall(data["tool"], arguments if isinstance(arguments, dict) else {})
    return None
