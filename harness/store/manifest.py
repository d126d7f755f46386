"""What a run's manifest records besides its config: versions, git revision, platform."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Optional

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
        "numerics": numerics(),
    }


def numerics() -> dict[str, Optional[str]]:
    """What floating-point results may depend on beyond lifebench's own code: the CPU
    architecture, Python, the numpy and torch installed (None: not installed), and the BLAS
    numpy runs with and the kernels it chose for this CPU (OpenBLAS's SkylakeX and Haswell
    ones round sums differently: docs/verify.md)."""
    return {"arch": platform.machine(), "python": sys.version.split()[0],
            "numpy": _version("numpy"), "torch": _version("torch"), "blas": blas()}


def blas() -> Optional[str]:
    """numpy's BLAS: library, version and the kernels chosen for this CPU."""
    try:
        import numpy  # noqa: F401 (loads its BLAS)
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    found = [lib for lib in threadpool_info() if lib.get("user_api") == "blas"]
    # numpy's own (another package, scipy say, may load a BLAS of its own beside it)
    found.sort(key=lambda lib: "numpy" not in str(lib.get("filepath")))
    return " ".join(str(found[0].get(k)) for k in ("internal_api", "version", "architecture")
                    if found[0].get(k)) if found else None


def _version(name: str) -> Optional[str]:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def make_manifest(*, info: dict[str, Any], **run: Any) -> RunManifest:
    return RunManifest(**run, **info)
