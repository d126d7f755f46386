"""STEP's replies under the scripted model (`lifebench.api.scripted`): every role answers
in the form its prompt asks for, so that each parser takes the first reply.

- `planner` / `refiner`: the next subtask is the scripted player's next action (read from
  the recent turns only, before the prompt's own text), with the learnings that name it.
- `actor`: the scripted player's action for the recent turns, in the Executor's form.
- `subtask_check`: complete once the last action played is the one the subtask names.
- `rules`: approves (the scripted player plays the oracle, which breaks no rule).
- `chooser`: the listed action that is the proposal itself, else the nearest (0).
- `summary`: CLIN's numbered learnings from the trace (the actions it played, and one
  "DOES NOT CONTRIBUTE" rule, so the next trial's rule check runs).
- `strategy`: a numbered list of the actions that raised the score (else the first played).
"""

from __future__ import annotations

import re
from typing import Optional

from lifebench.api import ScriptedReply, ScriptedRequest
from lifebench.methods.clin import prompts as clin_prompts
from lifebench.methods.step import prompts

STEPS_SHOWN = 5  # the learnings and strategy name at most this many actions


def _head(template: str, slot: str) -> str:
    """The constant text of `template` before `{slot}`."""
    return template.split("{" + slot + "}", 1)[0]


def _between(template: str, first: str, second: str) -> str:
    """The constant text of `template` between `{first}` and `{second}`."""
    return template.split("{" + first + "}", 1)[1].split("{" + second + "}", 1)[0]


PLAN_MARK = _head(prompts.PLAN, "task")                  # "Your task: "
REFINE_MARK = _head(prompts.REFINE, "task")
EXECUTE_MARK = _head(prompts.EXECUTE, "subtask")        # "Your current subtask: "
REJECTED = re.compile(re.escape(_head(prompts.REJECTED, "action")) + ".*?"
                      + re.escape(_between(prompts.REJECTED, "action", "feedback")), re.S)
CHECK_SUBTASK = re.compile(re.escape(_head(prompts.SUBTASK_CHECK, "subtask")) + "(.*?)"
                           + re.escape(_between(prompts.SUBTASK_CHECK, "subtask", "state")
                                       .split("\n", 1)[0]), re.S)
CHOICE_ACTION = re.compile(
    re.escape(_head(prompts.ACTION_CHOICE, "action")) + "(.*?)"
    + re.escape(_between(prompts.ACTION_CHOICE, "action", "rationale")), re.S)
CHOICES_FROM = _between(prompts.ACTION_CHOICE, "rationale", "choices")
CHOICES_TO = prompts.ACTION_CHOICE.split("{choices}", 1)[1]
LEARNINGS_MARK = _head(prompts.LEARNINGS, "learnings")
TURN_ACTION = _head(prompts.TURN, "action")            # "You did: "
TURN_ANSWER = _between(prompts.TURN, "action", "observation")  # "\nThe world answered: "
# the line before the trace: "CURRENT TRACE" (the summariser's), "TRACE" (the strategy's)
TRACE_MARK = _head(clin_prompts.SUMMARY, "trace").rstrip("\n").rsplit("\n", 1)[-1]
REPORT_MARK = _between(clin_prompts.SUMMARY, "trace", "report").strip()
STRATEGY_TRACE_MARK = _head(prompts.STRATEGY_WRITE, "trace").rstrip("\n").rsplit("\n", 1)[-1]
REWARDED_MARK = _between(prompts.STRATEGY_WRITE, "trace", "rewarded").strip()
STRATEGY_REPORT_MARK = _between(prompts.STRATEGY_WRITE, "rewarded", "report").strip()
_ACTION_LINE = re.compile(r"^Action: (.*)$", re.M)


def scripted_reply(request: ScriptedRequest) -> Optional[ScriptedReply]:
    role = request.role
    if role == "actor":
        return _actor(request)
    if role == "planner":
        return _planner(request)
    if role == "refiner":
        return _refiner(request)
    if role == "subtask_check":
        return _subtask_check(request)
    if role == "rules":
        return ("Approved: 1\nFeedback: none, the action is what the subtask needs and no "
                "rule is about it.")
    if role == "chooser":
        return _chooser(request)
    if role == "summary":
        return _summary(request.last)
    if role == "strategy":
        return _strategy(request.last)
    return None


# -- acting roles: the scripted player reads only the recent turns

def _recent(user: str, mark: str) -> str:
    """The history the method put before the prompt proper (which starts with `mark`)."""
    at = user.rfind(mark)
    return user[:at] if at >= 0 else user


def _next_action(request: ScriptedRequest, mark: str) -> str:
    recent = _recent(request.last, mark)
    return request.act(recent.strip() or request.last)


def _cited(user: str, action: str) -> list[int]:
    """The numbers of the learnings shown in `user` that name `action`."""
    at = user.rfind(LEARNINGS_MARK)
    if at < 0 or not action:
        return []
    out = []
    block = user[at + len(LEARNINGS_MARK):].split("\n\n", 1)[0]  # the block ends at a blank line
    for line in block.splitlines():
        found = re.match(r"\s*(\d+)[.)]\s*(.+)", line)
        if found and f"'{action}'" in found.group(2):
            out.append(int(found.group(1)))
    return out


def _used(numbers: list[int]) -> str:
    return ", ".join(str(n) for n in numbers) if numbers else "none"


def _actor(request: ScriptedRequest) -> str:
    user = request.last
    recent = _recent(user, EXECUTE_MARK)
    feedback = REJECTED.search(recent)  # proposals rejected this step come after the turns
    if feedback:
        recent = recent[:feedback.start()]
    action = request.act(recent.strip() or user)
    return (f"Learnings used: {_used(_cited(user, action))}\n"
            f"Rationale: it is the next step the last observation allows for this subtask.\n"
            f"Action: {action}")


def _planner(request: ScriptedRequest) -> str:
    action = _next_action(request, PLAN_MARK)
    return (f"Learnings used: {_used(_cited(request.last, action))}\n"
            f"Rationale: the subtasks done so far moved the task on, and the last observation "
            f"allows this step now.\n"
            f"Subtask: {action}")


def _refiner(request: ScriptedRequest) -> str:
    user = request.last
    recent = _recent(user, REFINE_MARK)
    # The failed subtask's turns hold the latest observation; without any, the whole prompt.
    action = request.act(recent if TURN_ANSWER.strip() in recent else user)
    cited = _cited(user, action)
    learnings = f" (learnings {_used(cited)})" if cited else ""
    return ("Failure: the attempts did not bring the change the subtask needs yet.\n"
            f"Rationale: a smaller step that the last observation allows now{learnings}.\n"
            f"Subtask: {action}")


# -- the Evaluator

def _subtask_check(request: ScriptedRequest) -> str:
    user = request.last
    found = CHECK_SUBTASK.search(user)
    subtask = found.group(1).strip().lower() if found else ""
    history = _recent(user, _head(prompts.SUBTASK_CHECK, "subtask"))
    played = [line[len(TURN_ACTION):].strip().lower() for line in history.splitlines()
              if line.startswith(TURN_ACTION)]
    done = bool(played) and played[-1] == subtask
    why = ("the last action played is the one the subtask names" if done
           else "the action the subtask names has not been played last")
    return f"Rationale: {why}.\nComplete: {1 if done else 0}"


def _chooser(request: ScriptedRequest) -> str:
    user = request.last
    found = CHOICE_ACTION.search(user)
    proposal = " ".join(found.group(1).split()).lower() if found else ""
    block = user.split(CHOICES_FROM, 1)[-1].split(CHOICES_TO.split("\n")[1], 1)[0]
    choices = {}
    for line in block.splitlines():
        numbered = re.match(r"(\d+)\. (.*)$", line.strip())
        if numbered:
            choices.setdefault(" ".join(numbered.group(2).split()).lower(), int(numbered.group(1)))
    return f"Choice: {choices.get(proposal, 0)}"


# -- after the trial

def _section(text: str, mark: str, end: Optional[str] = None) -> str:
    at = text.find(mark)
    if at < 0:
        return ""
    body = text[at + len(mark):]
    if end is not None and end in body:
        body = body[:body.find(end)]
    return body.strip()


def _played(trace: str) -> list[str]:
    """The distinct actions of a trace, in the order first played."""
    out: list[str] = []
    for action in _ACTION_LINE.findall(trace):
        if action.strip() and action.strip() not in out:
            out.append(action.strip())
    return out


def _summary(user: str) -> str:
    trace = _section(user, TRACE_MARK, REPORT_MARK)
    report = _section(user, REPORT_MARK)
    played = _played(trace)[:STEPS_SHOWN]
    lines = [f"Doing '{action}' SHOULD BE NECESSARY to make progress on the task."
             for action in played]
    solved = "task completed" in report and "not completed" not in report
    lines.append("Playing these actions in the same order MAY CONTRIBUTE to completing the task."
                 if solved else
                 "Going further along the same actions MAY BE NECESSARY to complete the task.")
    lines.append("Repeating an action whose answer changed nothing DOES NOT CONTRIBUTE to the "
                 "task.")
    return "\n".join(f"{i}. {line}" for i, line in enumerate(lines, 1))


def _strategy(user: str) -> str:
    rewarded = [line[2:].strip() for line in
                _section(user, REWARDED_MARK, STRATEGY_REPORT_MARK).splitlines()
                if line.startswith("- ")]
    trace = _section(user, STRATEGY_TRACE_MARK, REWARDED_MARK)
    kept = rewarded or _played(trace)
    items = [f"{i}. {action}: it moved the task on in the last attempt."
             for i, action in enumerate(kept[:STEPS_SHOWN], 1)]
    items = items or ["1. look around first: nothing was played last time."]
    return "STRATEGY\n" + "\n".join(items)
