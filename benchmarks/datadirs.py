"""Where benchmark data that no package registry ships lives.

`$LIFEBENCH_DATA/<name>` first (this workspace's `../shared/data`, and CI's), then each
benchmark's upstream locations, in order. The first candidate that holds what the
benchmark needs wins; when none does, the error names every place looked at.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterable, Optional

from lifebench.api import UserError

DATA_ENV = "LIFEBENCH_DATA"


def lifebench_data(name: str) -> Optional[Path]:
    root = os.environ.get(DATA_ENV)
    return Path(root).expanduser() / name if root else None


def find_data_dir(name: str, upstream: Iterable[Optional[Path]], usable: Callable[[Path], bool],
                  fix: str) -> Path:
    """The first of `$LIFEBENCH_DATA/<name>` and `upstream` for which `usable` holds.

    Raises UserError naming where it looked and `fix` (how to get the data)."""
    candidates = list(dict.fromkeys(p for p in (lifebench_data(name), *upstream) if p is not None))
    for path in candidates:
        if usable(path):
            return path
    looked = ", ".join(str(p) for p in candidates) or "nowhere"
    raise UserError(f"{name} data not found (looked in: {looked}); {fix}")
