"""AutoContext's replies under the scripted model (`lifebench.api.scripted`).

The scripted explorer walks the benchmark oracle's winning path, one action per iteration,
so that every part of the build does its real work:

- the Planner's Observations TODO probes the newest state with the benchmark's no-op
  (`S -> look`), its Action Rules TODO tries the oracle's next action from there
  (`["S -> go north"]`), and its promotion makes the node that action reached the next
  state; it answers None / [] once the episode has ended (or the oracle only has the no-op
  left), which ends the loop ("no gaps left");
- the Extractor proposes one Observations entry per run segment (the path it took, in
  backticks, and what it showed) and one Action Rules entry per action not in the rules
  yet; the check accepts each edit; applying appends the accepted entries to the section;
- agent mode (Crafter): one sub-task, the sub-agent plays the scripted action, the summary
  says what the last observation showed.

The promotion prompt has no trajectory: the path it promotes is the last one the
Observations section records (a forest line cannot be split into action and result
reliably, since actions may hold ": ").
"""

from __future__ import annotations

import json
import re
from typing import Optional

from lifebench.api import ScriptedReply, ScriptedRequest

from lifebench.methods.autocontext import prompts
from lifebench.methods.autocontext.actor import key_result
from lifebench.methods.autocontext.forest import FAILED, INIT_STATE, normalise_action, state_name

_KEY_CHARS = 300  # AutoContextConfig.key_result_chars: how the forest shows a result
_ENTRY_CHARS = 200
_SUBTASK = "stay where you are for a while and note what comes into view"
_HEADER = re.compile(r"^\[from state ([^\]\n]+)\] ?", re.M)
_STEP = re.compile(r"^> (.*)$", re.M)
_PATH = re.compile(r"`([^`\n]+?->[^`\n]+?)`")
_AGENT_LABEL = re.compile(r'^agent\("(.*)"\)$')


# --- reading the prompts ---------------------------------------------------------------
def _title(template: str) -> str:
    return template.splitlines()[0]


def _literals(template: str, name: str) -> tuple[str, str]:
    """The template's fixed text just before and just after the field `{name}`."""
    at = template.index("{" + name + "}")
    before, after = template[:at], template[at + len(name) + 2:]
    before = before[before.rfind("}") + 1:]
    after = after[: after.find("{")] if "{" in after else after
    return (before.replace("{{", "{").replace("}}", "}"),
            after.replace("{{", "{").replace("}}", "}"))


def _field(text: str, template: str, name: str) -> str:
    """The value the prompt `text` (made from `template`) has in field `name`."""
    before, after = _literals(template, name)
    start = text.find(before)
    if start < 0:
        return ""
    start += len(before)
    end = text.find(after, start) if after else len(text)
    return text[start:] if end < 0 else text[start:end]


def _trajectory(text: str, template: str) -> str:
    """The recent trajectory of a Planner prompt ("" when it shows none)."""
    before, _ = _literals(prompts.RECENT_TRAJECTORY, "trajectory")
    start = text.find(before)
    if start < 0:
        return ""
    start += len(before)
    end = text.find(_literals(template, "trajectory")[1], start)
    body = text[start:] if end < 0 else text[start:end]
    return body[:-1] if body.endswith("\n") else body


def _segments(trajectory: str) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(state, start observation, [(action, observation), ...]) of each segment; a
    segment whose start the prompt cut off has the state ""."""
    heads = list(_HEADER.finditer(trajectory))
    pieces = [(head.group(1).strip(), head.end(),
               heads[i + 1].start() if i + 1 < len(heads) else len(trajectory))
              for i, head in enumerate(heads)]
    cut_end = heads[0].start() if heads else len(trajectory)
    if _STEP.search(trajectory[:cut_end]):
        pieces.insert(0, ("", 0, cut_end))
    out = []
    for state, start, end in pieces:
        parts = _STEP.split(trajectory[start:end].rstrip("\n"))
        steps = [(parts[j].strip(), parts[j + 1].strip()) for j in range(1, len(parts) - 1, 2)]
        out.append((state, parts[0].strip(), steps))
    return out


def _last_observation(trajectory: str) -> str:
    segments = _segments(trajectory)
    if not segments:
        return trajectory.strip()
    _, start, steps = segments[-1]
    return steps[-1][1] if steps else start


class _Forest:
    """The rendered TODO forest of a prompt: its states, each with its lines."""

    def __init__(self, text: str) -> None:
        self.blocks: list[tuple[str, list[str]]] = []
        for line in text.splitlines():
            if line.startswith("- "):
                self.blocks.append((line[2:].split(":", 1)[0].strip(), []))
            elif line.strip() and self.blocks:
                self.blocks[-1][1].append(line)
        self.text = text

    @property
    def newest(self) -> str:
        return self.blocks[-1][0] if self.blocks else INIT_STATE

    def child(self, state: str, action: str) -> Optional[str]:
        """The result shown for `action` right under `state` ("TODO" when planned), or None
        when the state has no such child."""
        wanted = normalise_action(action) + ": "
        for name, lines in self.blocks:
            if name != state:
                continue
            for line in lines:
                if line.startswith("  - ") and not line.startswith("   "):
                    body = normalise_action(line[4:])
                    if body.startswith(wanted):
                        return " ".join(line[4:].split())[len(wanted):]
        return None

    def children(self, state: str) -> list[str]:
        return [line[4:] for name, lines in self.blocks if name == state for line in lines
                if line.startswith("  - ") and not line.startswith("   ")]

    def seen(self, observation: str, noop: str) -> int:
        """How often the forest shows `observation` as the result of an action other than
        the no-op (or as the initial state): how often the oracle walk has met it."""
        shown = key_result(observation, _KEY_CHARS)
        count = 0
        for line in self.text.splitlines():
            stripped = line.strip()
            if line.startswith("- "):
                count += stripped.startswith(f"- {INIT_STATE}: ") and stripped.endswith(shown)
            elif not normalise_action(stripped[2:]).startswith(normalise_action(noop) + ": "):
                count += stripped.endswith(": " + shown) or (": " + shown + " [") in stripped
        return count


def _short(text: str, limit: int = _ENTRY_CHARS) -> str:
    return key_result(text, limit)


# --- the Planner -----------------------------------------------------------------------
def _next_action(request: ScriptedRequest, forest: _Forest, trajectory: str) -> str:
    """The oracle's action after the trajectory's last observation, met as often as the
    forest shows it (the book's k-th action for its k-th visit)."""
    last = _last_observation(trajectory)
    if not last:
        return request.act(trajectory)
    times = max(1, forest.seen(last, request.act("")))
    return request.act("\n".join([last] * times))


def _walk(request: ScriptedRequest, template: str) -> tuple[str, _Forest, Optional[str], str]:
    """(the newest state, the forest, the oracle's next action there or None when the walk
    is over, the no-op)."""
    text = request.content(0)
    forest = _Forest(_field(text, template, "forest"))
    noop = request.act("")
    trajectory = _trajectory(text, template)
    action = _next_action(request, forest, trajectory)
    steps = [s for _, _, seg in _segments(trajectory) for s in seg]
    over = (normalise_action(action) == normalise_action(noop) and bool(steps)
            and normalise_action(steps[-1][0]) == normalise_action(noop))
    return forest.newest, forest, None if over else action, noop


def _agent_mode(text: str) -> bool:
    return prompts.FOREST_DEFINITION_AGENT in text


def _agent_todo(forest: _Forest, state: str) -> Optional[str]:
    """Agent mode: one sub-task from the newest state, none once a sub-task has run."""
    if any(not line.rstrip().endswith(": TODO") for _, lines in forest.blocks for line in lines):
        return None
    return f'{state} -> agent("{_SUBTASK}")'


def _plan_observations(request: ScriptedRequest) -> str:
    text = request.content(0)
    if _agent_mode(text):
        forest = _Forest(_field(text, prompts.PLAN_OBSERVATIONS, "forest"))
        todo = _agent_todo(forest, forest.newest)
        thought = "Nothing has been seen from the start yet." if todo else \
            "The sub-task from the start has been run; nothing more to try."
    else:
        state, forest, action, noop = _walk(request, prompts.PLAN_OBSERVATIONS)
        todo = None
        if action is not None:
            if forest.child(state, noop) is None:
                todo = f"{state} -> {noop}"
            elif forest.child(state, action) is None:
                todo = f"{state} -> {action}"
        thought = (f"State {state} has not been looked at yet." if todo else
                   "The walk has reached its end; nothing is missing.")
    return (f"<thought>\n{thought}\n</thought>\n<missing_observations>\n"
            f"{'what can be seen from the newest state' if todo else 'None'}\n"
            f"</missing_observations>\n<todo>\n{todo or 'None'}\n</todo>")


def _plan_rules(request: ScriptedRequest) -> str:
    paths: list[str] = []
    if not _agent_mode(request.content(0)):
        state, forest, action, _ = _walk(request, prompts.PLAN_RULES)
        if action is not None and forest.child(state, action) is None:
            paths.append(f"{state} -> {action}")
    thought = (f"Try the next action from {paths[0].split(' -> ')[0]}." if paths
               else "Nothing new is worth trying.")
    return f"{thought}\n```json\n{json.dumps(paths)}\n```"


def _loop_control(request: ScriptedRequest) -> str:
    """Keep exploring while the Planner would still propose a TODO: the newest state's
    probe or the walk's next action (in agent mode, the sub-task not yet run)."""
    text = request.content(0)
    if _agent_mode(text):
        forest = _Forest(_field(text, prompts.LOOP_CONTROL, "forest"))
        more = _agent_todo(forest, forest.newest) is not None
    else:  # what the Planner would propose next: the probe or the walk's next action
        state, forest, action, noop = _walk(request, prompts.LOOP_CONTROL)
        more = action is not None and (forest.child(state, noop) is None
                                       or forest.child(state, action) is None)
    gap = "the next step of the walk has not been tried" if more else "none"
    return f"Remaining gap: {gap}.\n<continue>{'yes' if more else 'no'}</continue>"


def _promote(request: ScriptedRequest) -> str:
    text = request.content(0)
    forest = _Forest(_field(text, prompts.PROMOTE_STATE, "forest"))
    path = None
    if _agent_mode(text):
        for state, _ in forest.blocks:
            for child in forest.children(state):
                label = child.split("): ", 1)[0] + ")"
                if _AGENT_LABEL.match(label):
                    path = (state, label, child[len(label) + 2:])
    else:
        found = _PATH.findall(_field(text, prompts.PROMOTE_STATE, "knowledge"))
        if found:
            state, _, action = found[-1].partition("->")
            result = forest.child(state.strip(), action.strip())
            if result is not None:
                path = (state.strip(), action.strip(), result)
    if path is None:
        return "None"
    state, action, result = path
    if result == "TODO" or result.startswith(FAILED) or "[reach " in result:
        return "None"
    label = _AGENT_LABEL.match(action)
    name = f"s{len(forest.blocks)}_{state_name(label.group(1) if label else action)[:32]}"
    name = name.rstrip("_")
    return "```json\n" + json.dumps({
        "target_missing_observation": "what can be seen after this step",
        "selected_path": f"{state} -> {action}", "new_state_name": name,
        "state_summary": _short(result)}, indent=1) + "\n```"


# --- the Actor (agent mode) ------------------------------------------------------------
def _subagent(request: ScriptedRequest) -> str:
    action = request.act(request.last)
    return (f"<thought>\nI do the next thing the sub-task needs.\n</thought>\n"
            f"<action>\n{action}\n</action>")


def _summarise(request: ScriptedRequest) -> str:
    text = request.content(0)
    played = _field(text, prompts.SUMMARISE_SUBTASK, "trajectory")
    steps = _STEP.findall(played)
    if not steps:
        return "<key_result>\nNo action was played.\n</key_result>\n<achieved>\nno\n</achieved>"
    last = _STEP.split(played)[-1].strip()
    return (f"<key_result>\nThe sub-agent played {steps[-1].strip()} last, which showed: "
            f"{_short(last, 160)}\n</key_result>\n<achieved>\nyes\n</achieved>")


# --- the Extractor ---------------------------------------------------------------------
def _observation_entries(trajectory: str) -> list[str]:
    entries = []
    for state, start, steps in _segments(trajectory):
        if not state:  # its start was cut off: no path to name
            if steps:
                entries.append(f"- after {steps[-1][0]}: {_short(steps[-1][1])}")
        elif not steps:
            entries.append(f"- at `{state}`: {_short(start)}")
        elif len(steps) == 1:
            entries.append(f"- after `{state} -> {steps[0][0]}`: {_short(steps[0][1])}")
        else:
            entries.append(f"- from `{state}`, after {len(steps)} actions: {_short(steps[-1][1])}")
    return entries


def _modifications(bodies: list[str]) -> str:
    if not bodies:
        return ("<thought>\nThe trajectory adds nothing.\n</thought>\n"
                "<modification1>\nNone\n</modification1>")
    blocks = "\n".join(f"<modification{i}>\nAdd:\n{b}\n</modification{i}>"
                       for i, b in enumerate(bodies, 1))
    return f"<thought>\nThe trajectory shows {len(bodies)} new thing(s).\n</thought>\n{blocks}"


def _extract_observations(request: ScriptedRequest) -> str:
    trajectory = _field(request.content(0), prompts.EXTRACT_OBSERVATIONS, "trajectory")
    return _modifications(_observation_entries(trajectory))


def _extract_rules(request: ScriptedRequest) -> str:
    text = request.content(0)
    known = _field(text, prompts.EXTRACT_RULES, "knowledge")
    have = {normalise_action(a) for a in re.findall(r"^- action: (.*)$", known, re.M)}
    bodies = []
    for state, _, steps in _segments(_field(text, prompts.EXTRACT_RULES, "trajectory")):
        for action, observation in steps:
            if normalise_action(action) in have:
                continue
            have.add(normalise_action(action))
            bodies.append(f"- action: {action}\n"
                          f"  - requirements: none seen (tried from {state or 'a state'})\n"
                          f"  - key_result: {_short(observation, 150)}\n"
                          f"  - note: seen once while exploring")
    return _modifications(bodies)


def _check(request: ScriptedRequest) -> str:
    return ("<thought>\nThe trajectory shows this.\n</thought>\n<decision>\nAccept\n</decision>\n"
            "<content>\nNone\n</content>")


def _appended(section: str, entries: list[str]) -> str:
    kept = "" if section.strip() == prompts.EMPTY_SECTION else section.strip()
    return "\n".join(part for part in [kept, *entries] if part)


def _apply(request: ScriptedRequest) -> str:
    text = request.content(0)
    section = _field(text, prompts.APPLY_EDITS, "knowledge")
    changes = _field(text, prompts.APPLY_EDITS, "modifications")
    entries = [re.sub(r"^\s*add:\s*", "", change, flags=re.I).strip()
               for change in re.split(r"(?m)^\d+\. ", changes) if change.strip()]
    return (f"<thought>\n{len(entries)} change(s) to add.\n</thought>\n"
            f"<knowledge>\n{_appended(section, entries)}\n</knowledge>")


def _naive(request: ScriptedRequest) -> str:
    text = request.content(0)
    notes = _field(text, prompts.NAIVE_UPDATE, "knowledge")
    entries = _observation_entries(_field(text, prompts.NAIVE_UPDATE, "trajectory"))
    return f"<knowledge>\n{_appended(notes, entries)}\n</knowledge>"


_BY_TITLE = (
    (_title(prompts.PLAN_OBSERVATIONS), _plan_observations),
    (_title(prompts.PLAN_RULES), _plan_rules),
    (_title(prompts.PROMOTE_STATE), _promote),
    (_title(prompts.LOOP_CONTROL), _loop_control),
    (_title(prompts.SUMMARISE_SUBTASK), _summarise),
    (_title(prompts.SUBAGENT), _subagent),
    (_title(prompts.EXTRACT_OBSERVATIONS), _extract_observations),
    (_title(prompts.EXTRACT_RULES), _extract_rules),
    (_title(prompts.CHECK_EDIT), _check),
    (_title(prompts.APPLY_EDITS), _apply),
    (_title(prompts.NAIVE_UPDATE), _naive),
)


def scripted_reply(request: ScriptedRequest) -> Optional[ScriptedReply]:
    """The reply to one of the build's requests, by the title line its prompt opens with
    (the sub-agent's is its system message)."""
    first = request.content(0)
    for title, reply in _BY_TITLE:
        if first.startswith(title):
            return reply(request)
    return None
