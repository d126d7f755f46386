"""ReAct's replies under the scripted model (`lifebench.api.scripted`): a thought and the
scripted player's action, in the format `parse_reply` reads."""

from __future__ import annotations

from lifebench.api import ScriptedReply, ScriptedRequest


def actor_reply(request: ScriptedRequest) -> ScriptedReply:
    """A thought line and an action line, whatever the acting role is called."""
    return f"Thought: the next step towards the goal.\nAction: {request.action()}"
