"""ALFWorld's games on disk: where they are, and what each trial folder says about its task.

Layout (the one `ALFWORLD_DATA` has upstream): `json_2.1.1/<split>/<task folder>/<trial>/
game.tw-pddl`. The task folder's name is ALFRED's `<task type>-<object>-<movable
receptacle>-<receptacle>-<scene>`.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from lifebench.benchmarks.datadirs import find_data_dir

SPLITS = ("valid_unseen", "valid_seen", "valid_train")
GAME_FILE = "game.tw-pddl"
JSON_DIR = "json_2.1.1"

# ALFRED's task types and the short names tables use (ReAct's and Reflexion's six types).
TASK_TYPES = {
    "pick_and_place_simple": "pick",
    "pick_clean_then_place_in_recep": "clean",
    "pick_heat_then_place_in_recep": "heat",
    "pick_cool_then_place_in_recep": "cool",
    "look_at_obj_in_light": "examine",
    "pick_two_obj_and_place": "pick_two",
}


def _upstream_dirs() -> list[Path]:
    """Where alfworld itself looks: `$ALFWORLD_DATA`, else its default cache."""
    dirs = []
    if os.environ.get("ALFWORLD_DATA"):
        dirs.append(Path(os.environ["ALFWORLD_DATA"]).expanduser())
    dirs.append(Path("~/.cache/alfworld").expanduser())
    return dirs


def data_root(split: str) -> Path:
    """The folder holding `json_2.1.1/<split>`. Raises UserError naming the fix."""
    return find_data_dir(
        "alfworld", _upstream_dirs(), lambda p: (p / JSON_DIR / split).is_dir(),
        f"ALFWorld's games for {split!r} are needed: set LIFEBENCH_DATA to a folder holding "
        f"alfworld/{JSON_DIR}/, or ALFWORLD_DATA to alfworld's data folder, or run "
        f"`alfworld-download` (pip install alfworld)")


def split_dir(split: str) -> Path:
    return data_root(split) / JSON_DIR / split


def task_metadata(instance_id: str) -> dict[str, Any]:
    """What the task folder's name says: task type, object, receptacles, scene."""
    task_folder = instance_id.split("/", 1)[0]
    alfred_type, obj, movable, receptacle, scene = task_folder.split("-")
    return {"task_type": TASK_TYPES[alfred_type], "alfred_task_type": alfred_type,
            "object": obj, "movable_receptacle": None if movable == "None" else movable,
            "receptacle": receptacle, "scene": int(scene)}


def read_game(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def game_hash(game: dict[str, Any]) -> str:
    """Identity of a game: its PDDL domain, problem and grammar, not the file's other keys
    (a walkthrough may or may not be stored, depending on where the data came from)."""
    blob = json.dumps({k: game[k] for k in ("pddl_domain", "pddl_problem", "grammar")},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def walkthrough(game: dict[str, Any]) -> list[str]:
    steps = game.get("walkthrough") or []
    return list(steps) if isinstance(steps, list) else []
