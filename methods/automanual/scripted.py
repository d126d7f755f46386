"""AutoManual's replies under the scripted model (`lifebench.api.scripted`).

- The Planner (`build_planner` while building, `planner` when tested) answers in its
  prompt's four parts with code of one checked section: it plays the scripted player's
  next command through the real agent API (ALFWorld's named methods when the system
  message offers them, `agent.act` elsewhere), prints the answer and asserts there was one.
  The printed answer comes back in the feedback as the environment wrote it, so the next
  reply acts on the observations of this task: the first one and each printed answer (the
  player's k-th action for an observation seen k times). One command per code reply, so
  a task finishes when its oracle walk is no longer than the code replies allowed.
- Its conclusions: after an indirect success, the mistakes and one clean piece of code that
  replays every command the task took; after a failure, a short reflection without code.
- The Builder writes a Success Process rule (code example) for a success, updates the
  Corrected Error rule "go on from the current situation" after an indirect one (writes it
  the first time), and writes an Unresolved Error rule for a failure.
- The consolidator merges two rules of the same type (not Success Process / Helper ones),
  else deletes the oldest learnt Success Process rule, else the oldest learnt rule.
- The Formulator sorts the rules into three categories (the environment, finishing tasks,
  mistakes) in a Markdown manual of rule id lines.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any, Optional

from lifebench.api import ScriptedReply, ScriptedRequest

from lifebench.methods.automanual import prompts
from lifebench.methods.automanual.api import ALFWORLD
from lifebench.methods.automanual.building import (BUILD_PLANNER, BUILDER, CONSOLIDATOR,
                                                   FORMULATOR, PLANNER)
from lifebench.methods.automanual.rules import SUCCESS_ONLY
from lifebench.methods.automanual.trial import split_reply

_TASK_CHARS = 120
_MERGED_CHARS = 600  # a merged rule text longer than this: the older rule is deleted instead
_RULE_LINE = re.compile(r"^rule_(\d+) \(([^)\n]+)\): (.*)$", re.M)
_PLAYED = re.compile(r"^observation = (agent\.\w+\(.*\))$", re.M)
CONTINUE_RULE = ("When a code reply ends before the task is finished, the next code reply "
                 "goes on from the current situation")


def _head(template: str) -> str:
    """A template's fixed opening, up to its first field."""
    return template.split("{", 1)[0]


def _after_field(template: str, name: str) -> str:
    """A template's fixed text right after the field `{name}` (to its next field)."""
    rest = template.split("{" + name + "}", 1)[1]
    return rest.split("{", 1)[0]


def _user_messages(request: ScriptedRequest) -> list[str]:
    return [str(m.get("content") or "") for m in request.messages if m.get("role") == "user"]


def _assistant_messages(request: ScriptedRequest) -> list[str]:
    return [str(m.get("content") or "") for m in request.messages if m.get("role") == "assistant"]


# --- the Planner -----------------------------------------------------------------------
def _first_observation(request: ScriptedRequest) -> str:
    users = _user_messages(request)
    first = users[0] if users else ""
    marker = _after_field(prompts.PLANNER_FIRST, "skill")
    return first.split(marker, 1)[1] if marker in first else first


def _seen(request: ScriptedRequest) -> str:
    """The task's observations as the environment wrote them, in order: the first one and
    each answer the code printed."""
    marker = _head(prompts.FEEDBACK_PRINTED)
    header = _head(prompts.FEEDBACK_HEADER)
    parts = [_first_observation(request)]
    for text in _user_messages(request)[1:]:
        if text.startswith(header) and marker in text:
            parts.append(text.rsplit(marker, 1)[1])
    return "\n".join(parts)


def _call(command: str, system: str) -> str:
    """The agent call that plays `command`: ALFWorld's named method when the agent has it
    and it gives back the very command, else `agent.act`."""
    if "agent.go_to(" in system:
        for method in ALFWORLD.methods:
            if method.name == "act":
                continue
            pattern = re.escape(method.template)
            for i in range(len(method.params)):
                pattern = pattern.replace(re.escape("{%d}" % i), "(.+?)")
            match = re.fullmatch(pattern, command.strip())
            if match is None:
                continue
            args = match.groups()
            try:
                if ALFWORLD.command(method.name, args) == command.strip():
                    return f"agent.{method.name}({', '.join(repr(a) for a in args)})"
            except ValueError:
                continue
    return f"agent.act({command!r})"


def _section(step: int, call: str, command: str) -> str:
    return (f"# [Step {step}] {command}\n"
            f"observation = {call}\n"
            f"print(observation)\n"
            f"assert observation.strip(), {('no answer to ' + command)!r}")


def _plan(request: ScriptedRequest) -> str:
    """A code reply: the next command, played, printed and checked."""
    command = request.act(_seen(request)).strip()
    call = _call(command, request.system)
    step = len(_assistant_messages(request)) + 1
    code = _section(step, call, command)
    if step == 1:
        opening = ("1. Understanding: the task is in the first observation; I act on what it "
                   "shows and check each answer.")
    else:
        opening = ("Analysis: the last command was answered and nothing went wrong; the task is "
                   "not finished yet.\n1. Understanding: I go on from the current situation.")
    return (f"{opening}\n2. Rules: none apply yet.\n3. Plan: {command}, then read its answer.\n"
            f"4. Code:\n```python\n{code}\n```")


def _played(request: ScriptedRequest) -> list[str]:
    """The agent calls the task's code replies made, in order."""
    return [call for reply in _assistant_messages(request)
            for call in _PLAYED.findall(split_reply(reply)[1])]


def _command_of(call: str) -> str:
    """The command an agent call of ours plays."""
    try:
        node = ast.parse(call, mode="eval").body
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        args = tuple(str(ast.literal_eval(a)) for a in node.args)
        if node.func.attr == "act":
            return args[0]
        return ALFWORLD.command(node.func.attr, args)
    except (AssertionError, SyntaxError, ValueError, IndexError):
        return call


def _clean_code(calls: list[str]) -> str:
    return "\n\n".join(_section(i, call, _command_of(call)) for i, call in enumerate(calls, 1))


def _indirect_summary(request: ScriptedRequest) -> str:
    calls = _played(request)
    return (f"Mistakes: each code reply played a single command and stopped, so the task took "
            f"{len(calls)} replies. What fixed it: every next reply went on from the current "
            f"situation.\nClean code, every command in one reply, each answer checked:\n"
            f"```python\n{_clean_code(calls)}\n```")


def _failure_reflection(request: ScriptedRequest) -> str:
    calls = _played(request)
    return (f"The task failed because my code replies played one command each, {len(calls)} "
            f"in all, and that was not enough to reach the goal. My code did not go against "
            f"the rules, but it assumed the task was shorter than it is. Next time, plan the "
            f"whole task and play several checked commands in each code reply.")


# --- the Builder -----------------------------------------------------------------------
def _rules(text: str) -> list[tuple[int, str, str]]:
    """(number, type, text) of each rule a listing shows."""
    return [(int(n), kind.strip(), body.strip()) for n, kind, body in _RULE_LINE.findall(text)]


def _seeded(text: str) -> set[int]:
    """The rules of a listing with validation records that are the benchmark's seed rules."""
    heads = list(_RULE_LINE.finditer(text))
    out = set()
    for i, head in enumerate(heads):
        block = text[head.end(): heads[i + 1].start() if i + 1 < len(heads) else len(text)]
        if re.search(r"^Validation record: seed$", block, re.M):
            out.add(int(head.group(1)))
    return out


def _transcript_task(trajectory: str) -> str:
    first = trajectory.split("\n\n--- Planner reply", 1)[0]
    first = first.split("\n", 1)[1] if "\n" in first else first
    found = re.search(r"your task is to:?\s*(.+)", first, re.I)
    line = found.group(1) if found else next((x for x in first.splitlines() if x.strip()), "")
    line = " ".join(line.split())
    return line if len(line) <= _TASK_CHARS else line[: _TASK_CHARS - 3] + "..."


def _transcript_calls(trajectory: str) -> list[str]:
    replies = re.split(r"^--- Planner reply \d+:\n", trajectory, flags=re.M)[1:]
    replies = [re.split(r"\n--- Result of code|\n\nOutcome: ", reply, maxsplit=1)[0]
               for reply in replies]
    return [call for reply in replies for call in _PLAYED.findall(split_reply(reply)[1])]


def _operations(analysis: str, operations: list[dict[str, Any]]) -> str:
    return f"{analysis}\n```json\n{json.dumps(operations, indent=1)}\n```"


def _builder(request: ScriptedRequest) -> str:
    existing = _rules(request.system)
    text = request.last
    trajectory = text.split("\n\n", 1)[1] if "\n\n" in text else text
    task = _transcript_task(trajectory)
    calls = _transcript_calls(trajectory)
    commands = "; ".join(_command_of(c) for c in calls) or "no command"
    epoch = text.split(":", 1)[0]
    if text.startswith(epoch + _after_field(prompts.BUILDER_FAILURE, "epoch").split("\n")[0]):
        end = re.search(r"^Outcome: FAILURE \((.*)\)\.$", trajectory, re.M)
        rule = (f"When the task is \"{task}\": the commands {commands} did not finish it "
                f"({end.group(1) if end else 'it failed'}).")
        return _operations(
            "Walk-through: each command was answered; the decisive error is that the code "
            "replies ran out before the goal. Case 1, imperfect rules: no rule covers this task.",
            [{"op": "write_rule", "type": "Unresolved Error", "rule": rule,
              "example": "\n".join(calls)}])
    operations: list[dict[str, Any]] = []
    process = (f"When the task is \"{task}\": play {commands}, in this order, checking each "
               f"answer.")
    same = [n for n, kind, body in existing
            if kind == "Success Process" and body.startswith(f"When the task is \"{task}\"")]
    if same:
        operations.append({"op": "update_rule", "rule_id": f"rule_{same[0]}", "rule": process,
                            "example": _clean_code(calls)})
    else:
        operations.append({"op": "write_rule", "type": "Success Process", "rule": process,
                           "example": _clean_code(calls)})
    if text.startswith(epoch + _after_field(prompts.BUILDER_INDIRECT, "epoch").split("{")[0]):
        fix = [n for n, kind, body in existing
               if kind == "Corrected Error" and body.startswith(CONTINUE_RULE)]
        rule = f"{CONTINUE_RULE}: that is how a task of {len(calls)} commands was finished."
        operations.append({"op": "update_rule", "rule_id": f"rule_{fix[0]}", "rule": rule}
                          if fix else {"op": "write_rule", "type": "Corrected Error",
                                       "rule": rule, "example": ""})
        analysis = ("Case 1, imperfect rules: the rules had no Success Process for this task; "
                    "the code that worked becomes one, and going on from the current situation "
                    "was the fix.")
    else:
        analysis = ("Potential rules: the Success Process of this task, code kept intact. "
                    "Check difference: " + ("it updates the rule of the same task."
                                            if same else "no current rule covers this task."))
    return _operations(analysis, operations)


def _consolidator(request: ScriptedRequest) -> str:
    rules = _rules(request.system)
    by_type: dict[str, list[tuple[int, str]]] = {}
    for number, kind, body in rules:
        by_type.setdefault(kind, []).append((number, body))
    for kind, items in by_type.items():
        if kind not in SUCCESS_ONLY and len(items) >= 2:
            (keep, first), (drop, second) = items[0], items[1]
            merged = f"{first} Also: {second}"
            if len(merged) > _MERGED_CHARS:  # long enough: the older one goes
                return _operations(f"rule_{keep} and rule_{drop} are both {kind} rules; "
                                   f"rule_{keep} is the older: delete it.",
                                   [{"op": "delete_rule", "rule_id": f"rule_{keep}"}])
            return _operations(
                f"rule_{keep} and rule_{drop} are both {kind} rules: merge them.",
                [{"op": "update_rule", "rule_id": f"rule_{keep}", "rule": merged},
                 {"op": "delete_rule", "rule_id": f"rule_{drop}"}])
    seeded = _seeded(request.system)
    learnt = [n for n, kind, _ in rules if kind == "Success Process" and n not in seeded] \
        or [n for n, _, _ in rules if n not in seeded] or [n for n, _, _ in rules]
    if not learnt:
        return _operations("There is nothing to merge or delete.", [])
    return _operations(f"rule_{learnt[0]} is the oldest; the newer rules cover more: delete it.",
                       [{"op": "delete_rule", "rule_id": f"rule_{learnt[0]}"}])


_CATEGORIES = (
    ("How the environment behaves", ("Special Phenomena/Mechanism",),
     "What the environment does in answer to the agent's commands."),
    ("Finishing tasks", ("Success Process", "Useful Helper Method"),
     "Steps and code that finished tasks of a kind."),
    ("Mistakes to avoid", ("Corrected Error", "Unresolved Error"),
     "What went wrong before, and what fixed it where a fix is known."),
)


def _formulator(request: ScriptedRequest) -> str:
    rules = _rules(request.system)
    sections, names = [], []
    for title, kinds, intro in _CATEGORIES:
        ids = [n for n, kind, _ in rules if kind in kinds]
        if ids:
            names.append(title)
            sections.append(f"## {title}\n{intro}\n" + "\n".join(f"- **rule_{n}**" for n in ids))
    other = [n for n, kind, _ in rules if not any(kind in k for _, k, _ in _CATEGORIES)]
    if other:
        names.append("Other")
        sections.append("## Other\nRules of no other category.\n"
                        + "\n".join(f"- **rule_{n}**" for n in other))
    manual = "\n\n".join(["Read the categories in order before you write code."] + sections)
    return (f"1. General understanding: {len(rules)} rules about commands that finish tasks "
            f"and mistakes to avoid.\n2. Categories: {', '.join(names) or 'none'}.\n"
            f"3. The manual:\n```markdown\n{manual}\n```")


def scripted_reply(request: ScriptedRequest) -> Optional[ScriptedReply]:
    """The reply to one of AutoManual's requests, by its role (and, for the Planner's
    conversation, by what its last message asks)."""
    if request.role in (BUILD_PLANNER, PLANNER):
        last = request.last
        if last.startswith(_head(prompts.INDIRECT_SUMMARY)):
            return _indirect_summary(request)
        if last.startswith(_head(prompts.FAILURE_REFLECTION)):
            return _failure_reflection(request)
        return _plan(request)
    if request.role == BUILDER:
        return _builder(request)
    if request.role == CONSOLIDATOR:
        return _consolidator(request)
    if request.role == FORMULATOR:
        return _formulator(request)
    return None
