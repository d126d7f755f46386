"""InstructRAG's replies under the scripted model (`lifebench.api.scripted`).

Every call InstructRAG makes is one turn of its ReAct executor, whatever stage it serves
(role `actor` in the scored episodes, `train`, `few_shot` and `support` in `prepare`), so
every reply is a thought line and an action line, the format ReAct's `parse_reply` reads.
The action:

- scored episodes (`actor`): the scripted player's action for the episode's own part of
  the prompt (the messages after the path block): the few-shot examples before it are
  other instances' transcripts, whose observations would be miscounted as this episode's;
- plain ReAct's support episodes (`support`, `support_paths=agent`): ReAct's own reply
  (they are `lifebench.methods.react.react_rollout`'s episodes, as RAP's are);
- training and few-shot episodes (`train`, `few_shot`): these play instances the scripted
  player has no oracle walk for (the client names no instance while `prepare` runs), so the
  reply follows the path the ML-Agent put in the prompt, one instruction a turn, while the
  turns so far are that path's start; after it (or off it) the scripted player's action.
  The episode's reward then measures the retrieved path, and the meta-training learns from
  rewards that differ between paths.
"""

from __future__ import annotations

import re
from typing import Any, Optional, Sequence

from lifebench.api import ScriptedReply, ScriptedRequest

from lifebench.methods.instructrag.prompts import NO_PATH, PATH
from lifebench.methods.react import scripted as react_scripted

# The roles whose episodes follow the prompt's path (see the module docstring): the package's
# TRAIN_ROLE and FEW_SHOT_ROLE, named here as the package imports this module.
PATH_ROLES = frozenset({"train", "few_shot"})

_PATH_HEAD, _PATH_TAIL = PATH.split("{path}")
_PATH_SEPARATOR = " -> "  # prompts.path_block's
_ACTION = re.compile(r"^\s*action\s*:\s*(.+?)\s*$", re.I | re.M)

THOUGHT = "Thought: this step follows the plan towards the goal."


def scripted_reply(request: ScriptedRequest) -> Optional[ScriptedReply]:
    if request.role == "support":
        return react_scripted.actor_reply(request)
    episode = _episode(request.messages)
    action = None
    if request.role in PATH_ROLES:
        action = _path_step(request.messages)
    if action is None:
        action = request.act(_text(episode)) if episode else request.action()
    return f"{THOUGHT}\nAction: {action}"


def _path_index(messages: Sequence[dict[str, Any]]) -> Optional[int]:
    """The index of the path block's message (the last one), or None."""
    found = None
    for index, message in enumerate(messages):
        content = str(message.get("content") or "")
        if message.get("role") == "user" and (content == NO_PATH or content.startswith(_PATH_HEAD)):
            found = index
    return found


def _episode(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages of the episode itself: after the path block and its acknowledgement."""
    at = _path_index(messages)
    return [] if at is None else list(messages[at + 2:])


def _path(messages: Sequence[dict[str, Any]]) -> tuple[str, ...]:
    at = _path_index(messages)
    if at is None:
        return ()
    content = str(messages[at].get("content") or "")
    if content == NO_PATH or not content.endswith(_PATH_TAIL):
        return ()
    body = content[len(_PATH_HEAD): len(content) - len(_PATH_TAIL)]
    return tuple(step.strip() for step in body.split(_PATH_SEPARATOR))


def _path_step(messages: Sequence[dict[str, Any]]) -> Optional[str]:
    """The path's next instruction, when the episode's actions so far are its start."""
    path = _path(messages)
    played = [found[-1] for m in _episode(messages) if m.get("role") == "assistant"
              for found in [_ACTION.findall(str(m.get("content") or ""))] if found]
    if len(played) < len(path) and tuple(played) == path[: len(played)]:
        return path[len(played)]
    return None


def _text(messages: Sequence[dict[str, Any]]) -> str:
    return "\n".join(str(m.get("content") or "") for m in messages)
