"""How²'s replies under the scripted model (`lifebench.api.scripted`), one per role.

- `actor`: on its first call of an episode (no tool call made yet) and when `read_memory`
  is offered, it reads the memory for the task's goal (Plancraft: the target item; else
  the task the first observation states); afterwards it plays the scripted player's
  action through the matching tool (`move`/`smelt`/`impossible` on Plancraft, with the
  slots unbracketed; `act` elsewhere; `think` for Plancraft's no-op, or a memory read
  when `think` is off).
- `ask`: a how-to question about the query, in the agent's words.
- `relevance`: "yes" when the entry was written for the query that is read (its RECIPE;
  for a raw answer, its first line names the query or the task), else "no".
- `parse`: the four sections from the teacher's answer: RECIPE the query, PROCEDURE the
  answer's steps (Plancraft: inventory slots named by the items they hold), REQUIREMENTS
  and RELATED ITEMS the items the steps take (Plancraft), as the prompt asks.
- `teacher` (the harness's non-executable teacher, sent under this method's client): the
  planner's output retold as one paragraph of steps.
"""

from __future__ import annotations

import json
import re
import string
from typing import Any, Optional

from lifebench.api import ScriptedReply, ScriptedRequest, ToolCall
from lifebench.methods.how2 import prompts
from lifebench.methods.how2.memory import sections

_INVENTORY_LINE = re.compile(
    r"(?m)^(?P<lead>\s*-\s+)(?P<item>\S+)\s+(?P<slot>0|[A-C][1-3]|I(?:[1-9]|[12][0-9]|3[0-6]))"
    r"(?P<tail>\s+quantity\s+(?P<quantity>\d+))")
_INVENTORY_SLOT = re.compile(r"\bI(?:[1-9]|[12][0-9]|3[0-6])\b")
_PLANCRAFT_ACTION = re.compile(
    r"^(?P<kind>move|smelt):\s*from\s*\[?(?P<src>[^\]\s]+)\]?\s*to\s*\[?(?P<dst>[^\]\s]+)\]?"
    r"\s*with\s*quantity\s*(?P<quantity>\d+)", re.I)
_TARGET = re.compile(r"Craft an item of type:\s*(\S+)")
_TASK = re.compile(r"[Yy]our task is to:?\s*(.+?)(?:\.\s|\.$|\n|$)")
_NUMBERED = re.compile(r"^\s*\d+(?:\.\d+)*\.?\s+(.*\S)\s*$")


def scripted_reply(request: ScriptedRequest) -> Optional[ScriptedReply]:
    replies = {"actor": _actor, "ask": _ask, "relevance": _relevance, "parse": _parse,
               "teacher": _teacher}
    reply = replies.get(request.role)
    return reply(request) if reply is not None else None


# -- helpers


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


def _plancraft(request: ScriptedRequest) -> bool:
    return request.benchmark == "plancraft" or prompts.PLANCRAFT_SYSTEM in request.system


def _bracketed(text: str) -> str:
    """How²'s Plancraft text with the inventory's slots bracketed again, as the env (and
    so the scripted player's book) writes them."""
    return _INVENTORY_LINE.sub(lambda m: f"{m['lead']}{m['item']} [{m['slot']}]{m['tail']}", text)


def _slots(context: str) -> dict[str, str]:
    """Slot -> the item it holds, from a Plancraft context."""
    return {m["slot"]: m["item"] for m in _INVENTORY_LINE.finditer(context)}


def _goal(request: ScriptedRequest) -> str:
    """What the first observation says the task is."""
    first = next((str(m.get("content") or "") for m in request.messages
                  if m.get("role") == "user"), "")
    found = _TARGET.search(first) or _TASK.search(first)
    if found:
        return found.group(1).strip()
    line = next((line.strip() for line in first.splitlines() if line.strip()), "the task")
    if len(line) > 80:  # the sentences that fit, else the words
        ends = [m.end() for m in re.finditer(r"[.!?](?=\s|$)", line[:81])]
        line = line[:ends[-1]] if ends else line[:80].rsplit(" ", 1)[0]
    return line.rstrip(" .")


def _tool(request: ScriptedRequest, name: str) -> Optional[dict[str, Any]]:
    return next((t.get("function") or {} for t in request.tools
                 if (t.get("function") or {}).get("name") == name), None)


def _argument(function: dict[str, Any]) -> str:
    properties = (function.get("parameters") or {}).get("properties") or {}
    return next(iter(properties), "query")


def _called(request: ScriptedRequest) -> bool:
    return any(m.get("role") == "assistant" and m.get("tool_calls") for m in request.messages)


# -- roles


def _actor(request: ScriptedRequest) -> ScriptedReply:
    memory = _tool(request, "read_memory")
    if memory is not None and not _called(request):
        return ToolCall("read_memory", {_argument(memory): _goal(request)})
    if not _plancraft(request):
        return ToolCall("act", {"command": request.action()})
    action = request.act(_bracketed(request.text)).strip()
    move = _PLANCRAFT_ACTION.match(action)
    if move:
        return ToolCall(move["kind"].lower(), {"slot_from": move["src"], "slot_to": move["dst"],
                                               "quantity": int(move["quantity"])})
    kind, _, rest = action.partition(":")
    if kind.strip().lower() == "impossible":
        return ToolCall("impossible", {"reason": rest.strip() or "the target cannot be crafted"})
    # the no-op (a `think:` action): a thought; without the think tool, a memory read
    # (How² plays the no-op itself after `max_non_env` of them)
    if memory is not None and _tool(request, "think") is None:
        return ToolCall("read_memory", {_argument(memory): _goal(request)})
    return ToolCall("think", {"thought": rest.strip() or "Nothing to move yet."})


def _ask(request: ScriptedRequest) -> str:
    found = fields(prompts.ASK, request.last) or {}
    recipe = found.get("recipe") or "the task"
    if _plancraft(request):
        return f"How do I craft {recipe} from the items in my inventory?"
    if recipe[:1].islower():  # a task stated as a verb phrase
        return f"How do I {recipe} from where I am now?"
    return f"How do I complete the task from where I am now ({recipe})?"


def _relevance(request: ScriptedRequest) -> str:
    found = fields(prompts.RELEVANCE, request.last) or {}
    query, memory = _norm(found.get("recipe", "")), found.get("memory", "")
    recipe = sections(memory).get("RECIPE", "").splitlines()
    if recipe:  # a parsed entry: relevant when it was written for this query
        return "yes" if _norm(recipe[0]) == query else "no"
    first = _norm(memory.strip().splitlines()[0] if memory.strip() else "")
    named = bool(query) and re.search(rf"(?<![\w]){re.escape(query)}(?![\w])", first)
    return "yes" if named or "the task" in first else "no"


def _parse(request: ScriptedRequest) -> str:
    found = fields(prompts.PARSE, request.last) or {}
    recipe = found.get("recipe") or "the task"
    answer, context = found.get("answer", ""), found.get("context", "")
    steps = [m.group(1) for m in map(_NUMBERED.match, answer.splitlines()) if m]
    if not steps:  # a paragraph (the non-executable teacher): its sentences
        steps = [s.strip() for s in re.split(r"(?<=\.)\s+", answer.strip()) if s.strip()]
    items: list[str] = []
    if _plancraft(request):
        held = _slots(context)
        named = [held.get(slot, "") for step in steps for slot in _INVENTORY_SLOT.findall(step)]
        named += [item for item in held.values()
                  if any(re.search(rf"\b{re.escape(item)}\b", step) for step in steps)]
        items = list(dict.fromkeys(i for i in named if i and i != recipe))
        steps = [_INVENTORY_SLOT.sub(lambda m: held.get(m.group(0), "a free inventory slot"), s)
                 for s in steps]
    procedure = "\n".join(f"{i + 1}. {step}" for i, step in enumerate(steps)) or "1. (none given)"
    return (f"RECIPE: {recipe}\n"
            f"REQUIREMENTS: {', '.join(items) if items else 'nothing beyond what the steps use'}\n"
            f"PROCEDURE:\n{procedure}\n"
            f"RELATED ITEMS: {json.dumps(items)}")


def _teacher(request: ScriptedRequest) -> str:
    plan = _between(request.last, "# Planner output", "# Question")
    if plan.startswith("No plan"):
        goal = re.search(r"possible to (.+?) from", plan)
        return (f"It is not possible to {goal.group(1) if goal else 'do this'} with what you "
                "have now: declare it impossible.")
    goals: list[tuple[str, list[str]]] = []
    for line in plan.splitlines():
        numbered = re.match(r"^\s*(\d+(?:\.\d+)*)\.\s+(.*\S)", line)
        if not numbered:
            continue
        what = numbered.group(2).rstrip(".")
        if "." not in numbered.group(1):
            goals.append((what, []))
        elif goals:
            goals[-1][1].append(what)
    sentences = [f"{goal}: first {', then '.join(steps)}." if steps else f"{goal}."
                 for goal, steps in goals]
    return " ".join(sentences) or "Carry on with the remaining steps of the task, in order."


def _between(text: str, start: str, end: str) -> str:
    at = text.find(start)
    if at < 0:
        return ""
    rest = text[at + len(start):]
    stop = rest.find(end)
    return (rest if stop < 0 else rest[:stop]).strip()


def _norm(text: str) -> str:
    return " ".join(text.split()).lower().strip(" .\"'`")
