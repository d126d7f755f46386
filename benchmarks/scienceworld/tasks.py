"""ScienceWorld's tasks: ids, names and topics from the package's own table (tasks.json),
and the 18-task protocol of the CLIN and STEP papers (see splits/scienceworld/README.md
for the evidence behind each mapping)."""

from __future__ import annotations

SHORT_BUDGET = 37
LONG_BUDGET = 70

# The CLIN/STEP 18-task table: task id -> short or long (budget 37 or 70 actions).
STEP18 = {
    "2-1": "short", "2-2": "short", "4-1": "short", "4-2": "short", "6-1": "short",
    "6-2": "short", "7-1": "short", "7-2": "short", "8-2": "short",
    "1-1": "long", "1-3": "long", "5-1": "long", "5-2": "long", "8-1": "long",
    "9-1": "long", "9-2": "long", "10-1": "long", "10-2": "long",
}


def package_tasks() -> list[dict]:
    """The package's task table: task_id, topic, task (paper name), task_name."""
    from scienceworld.constants import TASKS

    return [dict(t) for t in TASKS]


def task_id_of(name: str) -> str:
    for task in package_tasks():
        if task["task_name"] == name:
            return task["task_id"]
    raise KeyError(name)
