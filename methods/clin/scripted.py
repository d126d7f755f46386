"""CLIN's replies under the scripted model (`lifebench.api.scripted`), one per role.

- `actor` (the executor): the reply form its prompt asks for (`Learnings used:`,
  `Rationale:`, `Action:`), the action being the scripted player's for the prompt without
  the request and the state before it (`Where you are now:` / `What you carry:`, which
  repeat what `look` shows and could be taken for an older observation, and the world's
  vocabulary); the learnings used are those that name that action.
- `summary`: a numbered list in CLIN's causal forms, from the trial's trace and report:
  the first action is necessary to start; the last one, to finish when the task was
  completed, else it does not contribute; earlier learnings not repeated are kept.
"""

from __future__ import annotations

import re
import string
from typing import Any, Optional, Sequence

from lifebench.api import ScriptedReply, ScriptedRequest
from lifebench.methods.clin import prompts

_MAX_LEARNINGS = 6
_ACTION_LINE = re.compile(r"(?m)^Action: (.*\S)\s*$")
_ITEM = re.compile(r"^\s*\d+[.)]\s*(.*\S)\s*$")
_TURN = prompts.TURN.split("{observation}", 1)[0]
_OMITTED = re.compile(re.escape(prompts.OMITTED).replace(re.escape("{n}"), r"\d+") + r"\s*$")
_LEARNINGS = prompts.LEARNINGS.split("{learnings}", 1)[0]
_REQUEST = prompts.NEXT.split("{state}", 1)[1].split("\n", 1)[0]  # "Choose the next action. ..."
# what the state before the request starts with: where you are, what you carry, the vocabulary
_STATE_BLOCKS = tuple(template.split("{", 1)[0] for template in
                      (prompts.STATE, prompts.INVENTORY, prompts.VOCABULARY))
# a retry's feedback, after the request of the message it is added to
_NO_MATCH = re.compile(r"\s*" + re.escape(prompts.NO_MATCH).replace(re.escape("{action}"), ".*?")
                       + r"\s*$", re.S)


def scripted_reply(request: ScriptedRequest) -> Optional[ScriptedReply]:
    if request.role == "actor":
        return _executor(request)
    if request.role == "summary":
        return _summary(request)
    return None


def fields(template: str, text: str) -> Optional[dict[str, str]]:
    """The values a `str.format` template was filled with to give `text` (None if it was
    not made from it). A field used twice must hold the same value."""
    pattern, seen = [], set()
    for literal, name, _, _ in string.Formatter().parse(template):
        pattern.append(re.escape(literal))
        if name is None:
            continue
        pattern.append(f"(?P={name})" if name in seen else f"(?P<{name}>.*?)")
        seen.add(name)
    found = re.fullmatch("".join(pattern), text.strip(), re.S)
    return {k: v.strip() for k, v in found.groupdict().items()} if found else None


def _items(numbered: str) -> list[str]:
    return [m.group(1) for m in map(_ITEM.match, numbered.splitlines()) if m]


# -- the executor


def _observed(texts: Sequence[str]) -> tuple[str, str]:
    """(The prompt's text up to the current observation, that observation): the last
    message loses the instruction and the free state block that follow the observation,
    and, when it is the episode's first, the learnings after it."""
    if not texts:
        return "", ""
    last = texts[-1]
    request = last.rfind(_REQUEST)
    if request >= 0:
        last = last[:request]
        blocks = [at for at in map(last.rfind, _STATE_BLOCKS) if at >= 0]
        last = last[:min(blocks)] if blocks else last
    last = last.split("\n\n" + _LEARNINGS, 1)[0].rstrip()
    at = last.rfind(_TURN)  # a turn names the action played before what the world answered
    observation = last[at + len(_TURN):] if at >= 0 else last
    observation = _OMITTED.sub("", observation).strip()
    return "\n".join([*texts[:-1], last]), observation


def _action(request: ScriptedRequest) -> str:
    """The scripted player's action. After a "matches nothing" feedback (the request
    shows only the latest), the action for the current observation shown once more: the
    oracle's next visit of the same observation (a history window may hide earlier ones)."""
    texts = [str(m.get("content") or "") for m in request.messages]
    rejected = bool(texts) and _NO_MATCH.search(texts[-1]) is not None
    if rejected:
        texts[-1] = _NO_MATCH.sub("", texts[-1])
    text, observation = _observed(texts)
    if rejected and observation:
        text += f"\n{observation}"
    return " ".join(request.act(text).split())


def _learnings(request: ScriptedRequest) -> list[str]:
    """The numbered learnings the first message shows after the task (up to a blank line)."""
    for message in request.messages:
        content = str(message.get("content") or "")
        if message.get("role") == "user" and _LEARNINGS in content:
            return _items(content.split(_LEARNINGS, 1)[1].split("\n\n", 1)[0])
    return []


def _executor(request: ScriptedRequest) -> str:
    action = _action(request)
    used = [str(i + 1) for i, learning in enumerate(_learnings(request))
            if action and f'"{action.lower()}"' in learning.lower()]
    rationale = (f"learning{'s' if len(used) > 1 else ''} {', '.join(used)} "
                 f"name{'' if len(used) > 1 else 's'} this action for the task."
                 if used else "it is the next step towards the task from the last observation.")
    return (f"Learnings used: {', '.join(used) or 'none'}\n"
            f"Rationale: {rationale[0].upper()}{rationale[1:]}\n"
            f"Action: {action}")


# -- the summariser


def _summary(request: ScriptedRequest) -> str:
    found = fields(prompts.SUMMARY, request.last) or {}
    actions = _ACTION_LINE.findall(found.get("trace", ""))
    report = found.get("report", "").lower()
    completed = "task completed" in report
    learnings = []
    if actions:
        learnings.append(f'Doing "{actions[0]}" first SHOULD BE NECESSARY to start the task.')
        if completed:
            learnings.append(f'Doing "{actions[-1]}" last SHOULD BE NECESSARY to complete the task.')
        elif len(actions) > 1 or "critical mistake" in report:
            learnings.append(f'Ending with "{actions[-1]}" DOES NOT CONTRIBUTE to completing the task.')
    else:
        learnings.append("Looking around before acting MAY CONTRIBUTE to finding what the task needs.")
    # the latest earlier attempt's learnings that this one does not restate
    attempts = re.split(r"(?m)^ATTEMPT \d+\s*$", found.get("previous", ""))
    last_attempt = attempts[-1] if len(attempts) > 1 else ""
    earlier = _items(last_attempt.split("REPORT:", 1)[0])
    learnings += [e for e in earlier if e not in learnings]
    return "\n".join(f"{i + 1}. {text}" for i, text in enumerate(learnings[:_MAX_LEARNINGS]))
