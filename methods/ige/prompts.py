"""IGE's prompts: lifebench's own wording (the authors' TextWorld prompts were read for what
they ask, never copied). Two roles, each a single turn (a system and one user message, as
the authors' TextWorld calls): `select` picks the archive state to return to and states to
drop; `explore` picks one action."""

from __future__ import annotations

from typing import Optional, Sequence

from lifebench.api import Prompt, PromptPart, fixed
from lifebench.api import history as history_part

from lifebench.methods.ige.archive import Entry

STRATEGY = """\
You will work on this task by exploring it in the style of Go-Explore. A record (the
archive) keeps the distinct states you have reached, each with the shortest sequence of
actions found to reach it. You alternate two kinds of turns:
1. Choosing a state: pick the archive state to go back to, the one from which progress
   looks most likely, and name states not worth keeping.
2. Exploring: from that state, pick actions one at a time, favouring actions that have
   not been tried there yet.
Going back to a state replays the actions that lead to it. Keep answers short and use
exactly the reply format each turn asks for."""

SELECT_HEAD = "Choose the state to continue exploring from."

SELECT_RULES_SCORED = """\
Picture the map and what the task still needs. Prefer a state that has the highest score
among the archive's states and still has actions nobody tried from it; weigh what is still
missing and which places are unexplored, not how related a state's name sounds to the task.
Give your reason in one or two sentences, then a line of the form
Choose > NUMBER
Then name the highest score in the archive, and list states whose score is strictly lower
and that are no longer useful (never a state with the highest score), as a line of the form
Remove > [NUMBER, NUMBER]
or `Remove > []` to keep them all."""

SELECT_RULES = """\
Picture the map and what the task still needs. Prefer a state that made the most progress
towards the task and still has actions nobody tried from it; weigh what is still missing
and which places are unexplored, not how related a state's name sounds to the task.
Give your reason in one or two sentences, then a line of the form
Choose > NUMBER
Then list states that are no longer useful (for example one that another state in the same
place supersedes, having done more there), as a line of the form
Remove > [NUMBER, NUMBER]
or `Remove > []` to keep them all."""

EXPLORE_HEAD = "Act in the environment to make progress on the task."

EXPLORE_RULES = """\
Pick an action that is possible now and has not been tried from this state, unless
repeating one is truly needed. Think in a sentence or two, then end with one line of the
form
> ACTION
holding exactly one action."""


def _cut(text: str, limit: int) -> str:
    text = text.strip()
    return text if limit <= 0 or len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _listing(actions: Sequence[str]) -> str:
    return "[" + ", ".join(actions) + "]"


def system(manual: str) -> str:
    return f"{manual.strip()}\n\n{STRATEGY}"


def entry_block(index: int, entry: Entry, tried: Sequence[str], lost: Sequence[str],
                note: Optional[str], limit: int) -> str:
    cell = entry.cell
    lines = [f"State {index}: {len(entry.trace)} actions from the start"
             + (f", score {cell.score:g}" if cell.score is not None else "")]
    if note is not None:
        lines.append(f"  {note}")
    place = None
    if cell.location is not None:
        # the description as seen on arrival where the place was named along the path
        place = entry.trace.place_text if entry.trace.place_text and \
            cell.location == entry.trace.place else cell.location
        lines.append(f"  Place: {_cut(place, limit)}")
    if cell.inventory is not None:
        lines.append(f"  Carrying: {_cut(cell.inventory, limit)}")
    if entry.trace.observation.strip() != (place or "").strip():
        lines.append(f"  Last seen: {_cut(entry.trace.observation, limit)}")
    lines.append(f"  Tried from here: {_listing(tried)}")
    if lost:
        lines.append(f"  These ended the game (lost) from here: {_listing(lost)}")
    return "\n".join(lines)


def select(task: str, facts: Optional[str], blocks: Sequence[str], scored: bool) -> Prompt:
    """The Select prompt; its archive's states but the newest are history the context
    window may drop, oldest first (each keeps its number, so a choice still names one)."""
    parts = [SELECT_HEAD, f"The task: {task.strip()}"]
    if facts:
        parts.append(facts.strip())
    head = "\n\n".join(parts) + f"\n\nThe archive ({len(blocks)} states):\n"
    listing = [history_part(block + "\n") for block in blocks[:-1]]
    listing += [fixed(blocks[-1])] if blocks else []
    rules = "\n\n" + (SELECT_RULES_SCORED if scored else SELECT_RULES)
    return Prompt([fixed(head), *listing, fixed(rules)])


def explore(history: Sequence[PromptPart], tried: Sequence[str], lost: Sequence[str],
            listed: Optional[Sequence[str]], possible: Optional[int]) -> Prompt:
    """The Explore prompt; its path's earlier steps are history the context window may
    drop (lifebench.api.prompt). `possible` None: nothing is said of the admissible
    commands (the authors' prompt)."""
    parts = [f"Already tried from the current state: {_listing(tried)}"]
    if lost:
        parts.append(f"These lost the game from the current state before: {_listing(lost)}")
    if listed is not None:
        parts.append("Actions possible now:\n" + "\n".join(listed))
    elif possible is not None:
        parts.append(f"{possible} actions are possible now (too many to list): write one in "
                     f"the syntax the manual gives.")
    parts.append(EXPLORE_RULES)
    head = f"{EXPLORE_HEAD}\n\nThe path from the start to the current state:\n"
    return Prompt([fixed(head), *history, fixed("\n\n" + "\n\n".join(parts))])


def history(first: str, steps: Sequence[tuple[str, str]], keep: int) -> list[PromptPart]:
    """The path as text parts: the first observation, then each action and what it showed
    (the last `keep` steps, all when `keep` is 0); the steps but the last are history."""
    lines = [(f"Start: {first.strip()}", False)]
    shown = steps if keep <= 0 else steps[-keep:]
    if len(shown) < len(steps):
        lines.append((f"({len(steps) - len(shown)} earlier steps not shown)", False))
    for number, (action, observation) in enumerate(shown, start=1):
        lines.append((f"> {action}\n{observation.strip()}", number < len(shown)))
    lines.append(("(the last observation above is the current state)", False))
    return [(history_part if dropped else fixed)(text + ("\n" if i < len(lines) - 1 else ""))
            for i, (text, dropped) in enumerate(lines)]
