"""Reading the model's replies: tagged blocks (<todo>...</todo>) and JSON in fences."""

from __future__ import annotations

import re
from typing import Any, Optional

from lifebench.api.untrusted import parse_json

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S | re.I)


def tag(text: str, name: str) -> Optional[str]:
    """The last <name>...</name> block of `text`, stripped; None when there is none."""
    found = re.findall(rf"<{name}>\s*(.*?)\s*</{name}>", text, re.S | re.I)
    return found[-1].strip() if found else None


def numbered_tags(text: str, prefix: str) -> list[str]:
    """The contents of <prefix1>, <prefix2>, ... in order, without empty or None ones."""
    found = re.findall(rf"<{prefix}(\d+)>\s*(.*?)\s*</{prefix}\1>", text, re.S | re.I)
    return [body.strip() for _, body in sorted(found, key=lambda f: int(f[0]))
            if body.strip() and not is_none(body)]


def is_none(text: Optional[str]) -> bool:
    return text is None or text.strip().strip(".").lower() in ("none", "", "nothing")


def json_value(text: str) -> Any:
    """The JSON value of the reply's last fenced block, else of its last {...} or [...];
    None when there is none or it does not parse."""
    candidates = list(reversed(_FENCE.findall(text)))
    for pattern in (r"\{.*\}", r"\[.*\]"):
        match = re.search(pattern, text, re.S)
        if match:
            candidates.append(match.group(0))
    for candidate in candidates:
        try:
            return parse_json(candidate.strip())
        except ValueError:  # not JSON, or over the bounds (lifebench.api.untrusted)
            continue
    return None
