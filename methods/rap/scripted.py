"""RAP's replies under the scripted model (`lifebench.api.scripted`): every role answers in
the form its prompt asks for, so that each parser takes the first reply.

- `planner`: an overall plan that begins "To solve the task," and starts from the scripted
  player's first action for the new task.
- `actor`: the scripted player's action for the episode's own part of the prompt (the task
  and the turns; never the retrieved examples, which hold other episodes' observations),
  with a thought whenever the action starts a new sub-goal (its verb differs from the last
  action's), so that the Reasoner writes a retrieval key.
- `retrieval_key`: from the thought, `search: <place>` for a move towards something,
  else `action: <verb>`.
- `support` (`support_paths=agent`): the plain ReAct episodes on support instances get
  ReAct's scripted reply.
"""

from __future__ import annotations

import re
from typing import Optional

from lifebench.api import ScriptedReply, ScriptedRequest
from lifebench.methods.rap import prompts
from lifebench.methods.react import scripted as react_scripted


def _head(template: str, slot: str) -> str:
    """The constant text of `template` before `{slot}`."""
    return template.split("{" + slot + "}", 1)[0]


PLAN_MARK = _head(prompts.PLAN_REQUEST, "observation")
TASK_MARK = _head(prompts.TASK, "observation")
THOUGHT_MARK = _head(prompts.KEY_REQUEST, "thought").split("\n")[-1]  # "Thought: "
THOUGHT_END = prompts.KEY_REQUEST.split("{thought}", 1)[1]
# what the actor's thought says, and the key writer reads back
THOUGHT = "This starts a new sub-goal: next I {action}."
THOUGHT_ACTION = re.compile(re.escape(THOUGHT.split("{action}")[0]) + "(.*)"
                            + re.escape(THOUGHT.split("{action}")[1]) + "$")
_LAST_ACTION = re.compile(r"^\s*action\s*:\s*(.+?)\s*$", re.I | re.M)
# a move towards a named place is a search for it ("go north" is not)
MOVES = ("go to ", "move to ", "walk to ", "teleport to ")


def scripted_reply(request: ScriptedRequest) -> Optional[ScriptedReply]:
    if request.role == "planner":
        return _plan(request)
    if request.role == "actor":
        return _act(request)
    if request.role == "retrieval_key":
        return _key(request.last)
    if request.role == "support":
        return react_scripted.actor_reply(request)
    return None


def _plan(request: ScriptedRequest) -> str:
    user = request.last
    at = user.rfind(PLAN_MARK)
    first = request.act(user[at:] if at >= 0 else user)
    guide = ("following the remembered plans" if prompts.NO_PLAN_EXAMPLES not in user
             else "acting from the manual")
    return (f"To solve the task, begin with \"{first}\", then reach its sub-goals one at a time, "
            f"{guide}, until the task is done.")


def _own_part(request: ScriptedRequest) -> str:
    """The actor prompt's own episode: the task as first shown and the turns since."""
    messages = request.messages
    context = str(messages[1].get("content") or "") if len(messages) > 1 else ""
    at = context.rfind(TASK_MARK)
    parts = [context[at:] if at >= 0 else context]
    parts += [str(m.get("content") or "") for m in messages[2:]]
    return "\n\n".join(parts)


def _verb(action: str) -> str:
    """The action's first word, letters only ("move" of "move: from [I17] to [A1]")."""
    found = re.match(r"\s*([a-z]+)", action.lower())
    return found.group(1) if found else ""


def _act(request: ScriptedRequest) -> str:
    action = request.act(_own_part(request))
    replies = [str(m.get("content") or "") for m in request.messages[2:]
               if m.get("role") == "assistant"]
    previous = _LAST_ACTION.findall(replies[-1]) if replies else []
    if previous and _verb(previous[-1]) == _verb(action):
        return f"Action: {action}"  # the same sub-goal goes on: no new thought
    return f"Thought: {THOUGHT.format(action=action)}\nAction: {action}"


def _key(user: str) -> str:
    at = user.rfind(THOUGHT_MARK)
    thought = user[at + len(THOUGHT_MARK):] if at >= 0 else user
    thought = thought.split(THOUGHT_END, 1)[0].strip()
    found = THOUGHT_ACTION.search(thought)
    action = found.group(1).strip() if found else thought
    for move in MOVES:
        if action.lower().startswith(move) and action[len(move):].strip():
            return f"search: {action[len(move):].strip()}"
    return f"action: {_verb(action) or 'look'}"
