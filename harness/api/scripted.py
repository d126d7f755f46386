"""The scripted model: a deterministic stand-in for an LLM, for the regression check and
for planning a grid's cost (`lifebench.testing.fakeserver --policy scripted`).

The server cannot know a method's prompt formats, so each method answers for itself: its
class's `scripted_reply(request)` returns the well-formed reply its own prompt asks for,
for every role it sends (actor, planner, reflection, builder, extractor, ...). For acting
roles it wraps `request.act(...)`, the scripted player's action: the benchmark oracle's
next action when the prompt shows the state that action is for, else the benchmark's
no-op. A method that declares nothing gets a generic reply (a tool call of the first tool
offered, or the action as plain text).

The client tells the server which call it makes through request headers
(`X-Lifebench-Role`, `-Method`, `-Benchmark`, `-Split`, `-Instance`, `-Step`); they never enter a
request's body or its cache key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

from lifebench.api.llm import ToolCall

# What a scripted reply is: text content, or one tool call.
ScriptedReply = Union[str, ToolCall]


@dataclass(frozen=True)
class ScriptedRequest:
    """One chat request, as the scripted model sees it."""

    role: str  # the role the call is accounted under (`ChatModel.chat(role=...)`)
    messages: tuple[dict[str, Any], ...]
    tools: tuple[dict[str, Any], ...]
    benchmark: str
    # The scripted player's action for a prompt text (the last observation in it decides).
    act: Callable[[str], str]

    def content(self, index: int) -> str:
        """Message `index`'s text ("" for none)."""
        try:
            return str(self.messages[index].get("content") or "")
        except IndexError:
            return ""

    @property
    def system(self) -> str:
        return self.content(0) if self.messages and self.messages[0].get("role") == "system" else ""

    @property
    def last(self) -> str:
        return self.content(-1)

    @property
    def text(self) -> str:
        """Every message's text, in order."""
        return "\n".join(str(m.get("content") or "") for m in self.messages)

    def action(self) -> str:
        """The scripted player's action for the whole prompt."""
        return self.act(self.text)

    def tool_names(self) -> list[str]:
        return [str((t.get("function") or {}).get("name", "")) for t in self.tools
                if isinstance(t, dict)]


def generic_reply(request: ScriptedRequest) -> ScriptedReply:
    """The reply for a method that declares none: the action, as text or as a call of the
    first offered tool whose parameters take one string."""
    action = request.action()
    for tool in request.tools:
        function = tool.get("function") or {}
        properties = ((function.get("parameters") or {}).get("properties") or {})
        strings = [name for name, schema in properties.items()
                   if isinstance(schema, dict) and schema.get("type") == "string"]
        if len(strings) == 1:
            return ToolCall(str(function.get("name", "")), {strings[0]: action})
    return action


ScriptedReplier = Callable[[ScriptedRequest], Optional[ScriptedReply]]
