"""The step budget: how many actions an episode may take.

One word, one type. A run asks for budgets (`--budget 30`, or `default`: each
benchmark's own, which may vary by task, e.g. ScienceWorld's 37/70); every episode then
has the budget it used, in steps. Records carry both: `budget` (asked: a number, or null
for the default) and `budget_steps` (used).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

DEFAULT_LABEL = "default"


@dataclass(frozen=True, order=True)
class Budget:
    """A budget as asked: `steps` actions, or None for the benchmark's default."""

    steps: Optional[int] = None

    def __post_init__(self) -> None:
        if self.steps is not None and (isinstance(self.steps, bool) or self.steps < 1):
            raise ValueError(f"a budget is at least 1 step, got {self.steps}")

    @property
    def is_default(self) -> bool:
        return self.steps is None

    @classmethod
    def parse(cls, text: object) -> "Budget":
        """`default`, or a whole number of steps (ValueError otherwise)."""
        if isinstance(text, Budget):
            return text
        if text is None or str(text).strip().lower() == DEFAULT_LABEL:
            return cls(None)
        if isinstance(text, bool):
            raise ValueError(f"{text!r} is not a number of steps")
        if isinstance(text, float):
            if not text.is_integer():
                raise ValueError(f"{text!r} is not a whole number of steps")
            return cls(int(text))
        try:
            steps = int(str(text).strip())
        except ValueError:
            raise ValueError(f"{text!r} is neither a number of steps nor {DEFAULT_LABEL!r}") from None
        return cls(steps)

    def steps_for(self, default_steps: int) -> int:
        """The steps an episode gets: the asked number, or its instance's default."""
        return default_steps if self.steps is None else self.steps

    def __str__(self) -> str:
        return DEFAULT_LABEL if self.steps is None else str(self.steps)


DEFAULT_BUDGET = Budget(None)
