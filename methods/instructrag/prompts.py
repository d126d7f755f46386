"""InstructRAG's prompt parts (Section 4.4, "Prompt Structure"): the task description and
the instruction definitions come from the benchmark's manual and the episode; the planning
path is the one the ML-Agent chose; the demonstrations are ReAct's examples. Lifebench's own
wording throughout."""

from __future__ import annotations

from typing import Sequence

PATH = """\
An action sequence that solved similar tasks before (it was put together from earlier
successful episodes and may not fit this task exactly):
{path}
Use it as a guide. Check your understanding of the task as you go and change course when
what you observe, or what the task asks, differs from it."""

NO_PATH = "No earlier action sequence is available for this task."


def path_block(path: Sequence[str]) -> str:
    if not path:
        return NO_PATH
    return PATH.format(path=" -> ".join(path))


def path_text(path: Sequence[str]) -> str:
    """A path as the ML-Agent's path encoder reads it."""
    return " -> ".join(path)
