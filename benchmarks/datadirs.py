"""Where benchmark data that no package registry ships lives.

`data_home()/<name>` first: `$LIFEBENCH_DATA/<name>` when `$LIFEBENCH_DATA` is set (this
workspace's `../shared/data`, and CI's), else the per-user cache that `lifebench data fetch`
fills (see `lifebench.api.data`). Then each benchmark's upstream locations, in order. The
first candidate that holds what the benchmark needs wins; when none does, the error names
every place looked at and the fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Optional

from lifebench.api import UserError
from lifebench.api.data import DATA_ENV, data_home

__all__ = ["DATA_ENV", "find_data_dir", "lifebench_data"]


def lifebench_data(name: str) -> Path:
    """The folder `name` (e.g. "alfworld", "textworld/ige_cooking") in the data home."""
    return data_home() / name


def find_data_dir(name: str, upstream: Iterable[Optional[Path]], usable: Callable[[Path], bool],
                  fix: str) -> Path:
    """The first of `data_home()/<name>` and `upstream` for which `usable` holds.

    Raises UserError naming where it looked and `fix` (how to get the data)."""
    candidates = list(dict.fromkeys(p for p in (lifebench_data(name), *upstream) if p is not None))
    for path in candidates:
        if usable(path):
            return path
    looked = ", ".join(str(p) for p in candidates)
    raise UserError(f"{name} data not found (looked in: {looked}); {fix}")
