"""Writing a results directory's files: atomically, and with one error for every failed
write."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from lifebench.api.errors import UserError


class ResultsWriteError(UserError):
    """The results directory could not be written: the run stops (exit 2)."""

    FIXES = {errno.ENOSPC: "free some space", errno.EDQUOT: "free some space",
             errno.EFBIG: "raise the file-size limit (ulimit -f)",
             errno.EACCES: "make it writable", errno.EPERM: "make it writable",
             errno.EROFS: "use a writable file system"}

    def __init__(self, path: Path, exc: OSError) -> None:
        cause = exc.strerror or type(exc).__name__
        fix = self.FIXES.get(exc.errno or 0, "fix the cause")
        super().__init__(f"cannot write {path}: {cause}; {fix}, then rerun the same command "
                         f"to resume")


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)
