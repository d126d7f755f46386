"""How many of a run's LLM calls were cut at their token cap, said the same way by the run's
summary, the leaderboard and the results site: a reasoning model whose replies are cut
answers nothing, and its scores mean little until the cap is raised."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Optional

from lifebench.api.records import CallTokens


@dataclass
class CutCalls:
    """Calls counted, the calls cut ("length"), and the caps the cut ones were sent with."""

    calls: int = 0
    cut: int = 0
    caps: Counter = field(default_factory=Counter)

    def add(self, calls: Iterable[CallTokens]) -> None:
        for call in calls:
            self.calls += 1
            if call.finish == "length":
                self.cut += 1
                self.caps[call.max_tokens] += 1

    def note(self) -> Optional[str]:
        """'N% of LLM calls were cut at max_tokens=K: ...', or None when none was."""
        if not self.cut:
            return None
        cap = self.caps.most_common(1)[0][0]
        at = f"max_tokens={cap}" if cap is not None else "the server's own limit"
        share = 100 * self.cut / self.calls
        return (f"{share:.1f}% of LLM calls ({self.cut:,} of {self.calls:,}) were cut at {at}: "
                f"raise it with --max-tokens")
