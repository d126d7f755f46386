"""What a run's manifest records besides its config: versions, git revision, platform."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import lifebench
from lifebench.api.records import RunManifest


def environment_info(packages: list[str]) -> dict[str, Any]:
    """Versions of lifebench and `packages`, the git revision of lifebench's checkout (if
    it is one), the platform, and when."""
    versions = {}
    for name in ["lifebench", *packages]:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    root = Path(lifebench.__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--verify", "-q", "HEAD"],
                              capture_output=True, text=True, timeout=10)
        revision = head.stdout.strip() if head.returncode == 0 else None
        dirty = bool(subprocess.run(["git", "-C", str(root), "status", "--porcelain"],
                                    capture_output=True, text=True, timeout=10).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        revision, dirty = None, None
    return {
        "started_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "packages": versions,
        "git_revision": revision,
        "git_dirty": dirty,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
    }


def make_manifest(*, info: dict[str, Any], **run: Any) -> RunManifest:
    return RunManifest(**run, **info)
