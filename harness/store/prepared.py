"""Prepared artifacts: what a method learned in `prepare` (its `state()` right after it),
stored once per results directory under `prepared/KEY.json` and reused by every stream whose
preparation has the same key (`StreamSpec.prepared_key`: the method and its config, the
benchmark and its config, its support and few-shot splits, the model, the seed and the
harness version). A file that cannot be read is set aside as `.corrupt` and the method
prepares again: an artifact only saves work, it never decides a result.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any, Optional

from lifebench.api.untrusted import parse_json
from lifebench.store.files import atomic_write

PREPARED_DIR = "prepared"
MAX_PREPARED_CHARS = 2 * 2**30  # as a saved state (InstructRAG's graph and agents)
_KEY = re.compile(r"[0-9a-f]{12}")


class PreparedStore:
    def __init__(self, out: Path) -> None:
        self.directory = Path(out) / PREPARED_DIR

    def path(self, key: str) -> Path:
        if not _KEY.fullmatch(key):
            raise ValueError(f"not a prepared artifact key: {key!r}")
        return self.directory / f"{key}.json"

    def read(self, key: str) -> Optional[dict[str, Any]]:
        """The artifact {"key", "state", "made_by", ...}, or None when there is none (or it
        was unreadable, said in one line and kept aside)."""
        path = self.path(key)
        if not path.exists():
            return None
        try:
            artifact = parse_json(path.read_bytes(), MAX_PREPARED_CHARS)
            if not isinstance(artifact, dict) or artifact.get("key") != key or "state" not in artifact:
                raise ValueError("not a prepared artifact of this key")
        except (OSError, ValueError) as exc:
            path.replace(path.with_suffix(".json.corrupt"))
            print(f"note: {path} is unreadable ({exc}); kept as {path.name}.corrupt, and the "
                  f"method prepares again", file=sys.stderr)
            return None
        return artifact

    def write(self, artifact: dict[str, Any]) -> None:
        """Store an artifact; the first one of a key stays (a second is the same work)."""
        path = self.path(artifact["key"])
        if path.exists():
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(artifact, sort_keys=True, separators=(",", ":")))
