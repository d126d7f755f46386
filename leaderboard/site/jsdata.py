"""Data as JavaScript files: what a page opened from `file://` can load (Chromium refuses
to fetch a JSON file there, but runs a script). Each file is one statement that hands a
JSON value to the page, parsed with `JSON.parse` (faster than an object literal for large
data) from a string literal."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any


def _finite(value: Any) -> Any:
    """`value` with every NaN or infinity (which JSON lacks) as null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def json_text(value: Any) -> str:
    try:
        return json.dumps(value, separators=(",", ":"), allow_nan=False, default=str)
    except ValueError:  # a NaN somewhere (a plugin's extra): null
        return json.dumps(_finite(value), separators=(",", ":"), default=str)


def script(target: str, value: Any) -> str:
    """`<target>(JSON.parse("..."));` or, for a target ending in `=`, an assignment."""
    # ASCII (no U+2028), and no "<" at all: no "</script" or "<!--" in the literal can end
    # or change a script element, should the data ever be inlined into a page
    literal = json.dumps(json_text(value)).replace("<", "\\u003c")
    if target.endswith("="):
        return f"{target}JSON.parse({literal});\n"
    return f"{target}(JSON.parse({literal}));\n"


def write_script(path: Path, target: str, value: Any) -> int:
    """Write the script; returns its size in bytes."""
    text = script(target, value)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return len(text)
