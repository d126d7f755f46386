"""The progress bar: episodes done/total, success so far, ETA (tqdm, on stderr)."""

from __future__ import annotations

import sys

from tqdm import tqdm


class Progress:
    def __init__(self, total: int, skipped: int = 0, enabled: bool = True) -> None:
        self.results = 0
        self.successes = 0
        self.failures = 0
        interactive = sys.stderr.isatty()
        self.bar = tqdm(total=total, desc="episodes", unit="ep", disable=not enabled or total == 0,
                        mininterval=0.2 if interactive else 10.0, dynamic_ncols=True,
                        file=sys.stderr)
        if skipped and enabled:
            self.bar.write(f"resuming: {skipped} episodes already recorded, {total} to run",
                           file=sys.stderr)

    def update(self, is_result: bool, success: bool) -> None:
        if is_result:
            self.results += 1
            self.successes += int(success)
        else:
            self.failures += 1
        if self.bar.disable:
            return
        postfix = {"success": f"{self.successes / self.results:.3f}" if self.results else "-"}
        if self.failures:
            postfix["failed"] = self.failures
        self.bar.set_postfix(postfix, refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()
