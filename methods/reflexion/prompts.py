"""Reflexion's prompts: lifebench's own wording."""

REFLECT = """\
You tried the task below and did not succeed. Read your attempt, find what went wrong,
and write a short plan for the next attempt: two or three sentences naming the mistake
and what to do instead. Write only the reflection.

Task and attempt:
{attempt}"""

MEMORY = """\
You have tried this task before and failed. Your reflections on those attempts, oldest
first:
{reflections}
Use them in this attempt."""
