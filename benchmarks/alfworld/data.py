"""ALFWorld's games on disk: where they are, what each trial folder says about its task, and
whether a game file is the one lifebench's split pins.

Layout (the one `ALFWORLD_DATA` has upstream): `json_2.1.1/<split>/<task folder>/<trial>/
game.tw-pddl`. The task folder's name is ALFRED's `<task type>-<object>-<movable
receptacle>-<receptacle>-<scene>`. Looked for in the data home's `alfworld/` (what
`lifebench data fetch alfworld` fills), then `$ALFWORLD_DATA`, then alfworld's own cache.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Optional

from lifebench.api.data import fetch_command

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


FETCH = fetch_command("alfworld")
REFETCH = fetch_command("alfworld", force=True)


def upstream_dirs() -> list[Path]:
    """Where alfworld itself looks: `$ALFWORLD_DATA`, else its default cache."""
    dirs = []
    if os.environ.get("ALFWORLD_DATA"):
        dirs.append(Path(os.environ["ALFWORLD_DATA"]).expanduser())
    dirs.append(Path("~/.cache/alfworld").expanduser())
    return dirs


def data_root(split: str) -> Path:
    """The folder holding `json_2.1.1/<split>`. Raises UserError naming the fix."""
    return find_data_dir(
        "alfworld", upstream_dirs(), lambda p: (p / JSON_DIR / split).is_dir(),
        f"ALFWorld's games for {split!r} are needed: run `{FETCH}`, or set LIFEBENCH_DATA to "
        f"a folder holding alfworld/{JSON_DIR}/, or ALFWORLD_DATA to the folder that "
        f"alfworld 0.4.2's `alfworld-download` filled")


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


# What alfworld wrote before release 0.4.0 (`alfworld-download` keeps such files unless
# forced): the grammar's "put {o} in/on {r}" where the games now say "move {o} to {r}", and
# a domain without the `help` action.
OLD_GRAMMAR = "put {o} in/on {r}"
HELP_ACTION = "(:action help"
OLD_FORMAT = ("in the format of alfworld before 0.4.0 (its grammar says `put {o} in/on {r}`, "
              "its domain has no `help` action)")
NO_WALKTHROUGH = ("without a walkthrough (the oracle would play the PDDL planner's plan "
                  "instead, and its transcripts would change)")


def is_old_format(game: dict[str, Any]) -> bool:
    return OLD_GRAMMAR in str(game.get("grammar", "")) and \
        HELP_ACTION not in str(game.get("pddl_domain", ""))


def game_problem(data: bytes, row: dict[str, Any]) -> Optional[str]:
    """Why a game file whose bytes are not the pinned ones is not the split's game (None:
    it is, with the same walkthrough length): old format, another game, no walkthrough."""
    try:
        game = json.loads(data)
        if not isinstance(game, dict):
            raise ValueError
        if is_old_format(game):
            return OLD_FORMAT
        same = game_hash(game) == row["game_sha256"]
    except (ValueError, KeyError, TypeError):
        return "not a game file"
    if not same:
        return "not the game of lifebench's split (another data release?)"
    steps = walkthrough(game)
    if not steps:
        return NO_WALKTHROUGH
    if len(steps) != row["walkthrough_length"]:
        return "with another walkthrough than the one the split was made with"
    return None
