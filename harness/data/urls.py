"""Where a download really goes: upstream, or a mirror of it (`LIFEBENCH_MIRROR`), or
nowhere (`LIFEBENCH_OFFLINE`)."""

from __future__ import annotations

import os

MIRROR_ENV = "LIFEBENCH_MIRROR"
OFFLINE_ENV = "LIFEBENCH_OFFLINE"


def mirrored(url: str) -> str:
    """`url`, or with `LIFEBENCH_MIRROR=M` set, `M/HOST/PATH` for `https://HOST/PATH`: the
    mirror keeps the upstream host and path, so one folder tree serves every upstream."""
    mirror = os.environ.get(MIRROR_ENV, "").strip()
    if mirror and url.startswith("https://"):
        return f"{mirror.rstrip('/')}/{url[len('https://'):]}"
    return url


def offline() -> bool:
    return os.environ.get(OFFLINE_ENV, "").strip().lower() not in ("", "0", "false", "no")
