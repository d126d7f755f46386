"""An oracle that replays a fixed action sequence: a game's walkthrough or a simulator's
gold path. The sequence is read after reset (when the env has loaded its game)."""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from lifebench.api import Observation


class ReplayOracle:
    def __init__(self, actions: Callable[[], Sequence[str]], past_the_end: str) -> None:
        self.actions = actions
        # What to send once the sequence is used up (a harmless action: the budget ends it).
        self.past_the_end = past_the_end
        self.position = 0
        self._sequence: Optional[list[str]] = None

    def sequence(self) -> list[str]:
        """The whole sequence (a teacher's plan from the start)."""
        if self._sequence is None:
            self._sequence = list(self.actions())
        return list(self._sequence)

    def next_action(self, observation: Observation) -> str:
        if self._sequence is None:
            self._sequence = list(self.actions())
        actions = self._sequence
        if self.position >= len(actions):
            return self.past_the_end
        action = actions[self.position]
        self.position += 1
        return action
