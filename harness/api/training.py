"""Learning curves of a method that trains before testing (a meta-training loop over support
episodes, say): `extra["training_curves"]` on at most the first record of a stream, which
`lifebench leaderboard --plots` and the results site draw, one small chart per series.

A method writes `TrainingCurves.of(...).to_dict()`. A reader turns a value from a results
file (written by anyone) into one with `TrainingCurves.from_value`, which checks types and
bounds before it reads more than it must, and says in a ValueError why a value is not one;
the message never quotes the value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

TRAINING_CURVES = "training_curves"  # the key in a record's extra
MAX_SERIES = 20
MAX_POINTS = 5000  # per series
MAX_LABEL_CHARS = 120  # a title, an x label, a series' name
MAX_NOTE_CHARS = 500
DEFAULT_X_LABEL = "iteration"


def _text(value: Any, what: str, limit: int) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} is {type(value).__name__}, not text")
    # longer text is cut, not refused: its start still says what the chart is
    return value if len(value) <= limit else value[: limit - 1] + "…"


def _point(value: Any) -> Optional[float]:
    """A number, or None for a missing point (null, NaN, an infinity: a diverged loss)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"a point is {type(value).__name__}, not a number or null")
    try:
        number = float(value)
    except OverflowError:  # an integer too large for a float
        return None
    return number if math.isfinite(number) else None


@dataclass(frozen=True)
class TrainingCurves:
    """Series of equal length over training iterations: the i-th value of each is
    iteration i, counted from 1."""

    title: str
    x_label: str
    series: tuple[tuple[str, tuple[Optional[float], ...]], ...]  # (name, values), by name
    note: str = ""  # e.g. why training stopped

    def __post_init__(self) -> None:
        if not self.series:
            raise ValueError("no series")
        if len(self.series) > MAX_SERIES:
            raise ValueError(f"{len(self.series)} series, over the limit of {MAX_SERIES}")
        lengths = {len(values) for _, values in self.series}
        if len(lengths) > 1:
            raise ValueError(f"series of different lengths ({min(lengths)} to {max(lengths)} points)")
        if not 0 < self.length <= MAX_POINTS:
            raise ValueError(f"{self.length:,} points per series, not 1 to {MAX_POINTS:,}")
        names = [name for name, _ in self.series]
        if any(not name for name in names):
            raise ValueError("a series has an empty name")
        if len(set(names)) < len(names):
            raise ValueError("two series have the same name")

    @property
    def length(self) -> int:
        return len(self.series[0][1])

    @property
    def iterations(self) -> list[int]:
        return list(range(1, self.length + 1))

    @classmethod
    def of(cls, title: str, series: Mapping[str, Sequence[Optional[float]]],
           x_label: str = DEFAULT_X_LABEL, note: str = "") -> "TrainingCurves":
        """From a mapping of names to values; ValueError when it is not a valid one."""
        return cls.from_value({"title": title, "x_label": x_label, "series": series, "note": note})

    @classmethod
    def from_value(cls, value: Any) -> "TrainingCurves":
        """A value read from a record (JSON: an object); ValueError saying why it is not a
        valid one. Sizes are checked before the values are read."""
        if not isinstance(value, Mapping):
            raise ValueError(f"it is {type(value).__name__}, not an object")
        series = value.get("series")
        if not isinstance(series, Mapping):
            raise ValueError(f"its series are {type(series).__name__}, not an object of name: values")
        if not 0 < len(series) <= MAX_SERIES:
            raise ValueError(f"{len(series)} series, not 1 to {MAX_SERIES}")
        checked = []
        for name, values in series.items():
            if not isinstance(values, (list, tuple)):
                raise ValueError(f"a series is {type(values).__name__}, not a list of numbers")
            if len(values) > MAX_POINTS:
                raise ValueError(f"a series has {len(values):,} points, over the limit of {MAX_POINTS:,}")
            checked.append((_text(name, "a series' name", MAX_LABEL_CHARS),
                            tuple(_point(v) for v in values)))
        note = value.get("note")
        # by name: records are written with sorted keys, so what was read is what was written
        return cls(title=_text(value.get("title"), "its title", MAX_LABEL_CHARS),
                   x_label=_text(value.get("x_label", DEFAULT_X_LABEL), "its x label",
                                 MAX_LABEL_CHARS),
                   series=tuple(sorted(checked, key=lambda s: s[0])),
                   note="" if note is None else _text(note, "its note", MAX_NOTE_CHARS))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"title": self.title, "x_label": self.x_label,
                               "series": {name: list(values) for name, values in self.series}}
        if self.note:
            out["note"] = self.note
        return out
