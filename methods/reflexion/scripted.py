"""Reflexion's replies under the scripted model: ReAct's for acting, a one-sentence plan
for the reflection on a failed trial."""

from __future__ import annotations

from lifebench.api import ScriptedReply, ScriptedRequest

from lifebench.methods.react.scripted import actor_reply

REFLECTION_ROLE = "reflection"


def scripted_reply(request: ScriptedRequest) -> ScriptedReply:
    if request.role == REFLECTION_ROLE:
        return "I spent steps without progress; next time I will check the goal first and act on it directly."
    return actor_reply(request)
