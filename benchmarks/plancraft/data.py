"""Loading Plancraft examples from the installed package's data, cleaned."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from lifebench.api import UserError

# The package's file name for each lifebench split name.
SPLIT_FILES = {"val": "val.json", "val.repeated": "val.repeated.json",
               "test": "test.json", "val.small": "val.small.json",
               "train": "train.json"}


def data_dir() -> Path:
    try:
        import plancraft
    except ImportError:
        raise UserError("plancraft is not installed; run `make install` "
                        "or `pip install 'lifebench[plancraft]'`") from None
    return Path(os.path.dirname(plancraft.__file__)) / "data"


def split_file(split: str) -> Path:
    path = data_dir() / SPLIT_FILES[split]
    if not path.is_file():
        raise UserError(f"plancraft data file {path} is missing; reinstall plancraft==0.4.9")
    return path


def _clean(value: Any) -> Any:
    # val.repeated.json holds bare NaNs (for impossible tasks) and integral floats.
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if value.is_integer():
            return int(value)
    return value


def load_raw_examples(split: str) -> list[dict[str, Any]]:
    with open(split_file(split)) as f:
        rows = json.load(f)
    return [{k: _clean(v) for k, v in row.items()} for row in rows]
