"""Checks of what a plugin class declares (its class attributes), run as the class is made:
an attribute the contract does not know, or a value out of range, is a TypeError."""

from __future__ import annotations

import difflib
import re
from typing import Any, Callable, Iterable, Optional

from lifebench.api.reporting import Metric


def check_declarations(cls: type, kind: str, known: dict[str, Callable[[Any], Optional[str]]]) -> None:
    """Every public, non-callable class attribute that `cls` sets must be one the contract
    declares, with a valid value (a check returns the problem, or None)."""
    for name, value in vars(cls).items():
        if name.startswith("_") or name[:1].isupper():
            continue  # private names, constants and `Config`
        if isinstance(value, (property, classmethod, staticmethod)) or callable(value):
            continue
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TypeError(f"{kind} {cls.__qualname__}: unknown attribute {name!r}{hint}; a "
                            f"{kind} declares: {', '.join(sorted(known))}")
        problem = known[name](value)
        if problem:
            raise TypeError(f"{kind} {cls.__qualname__}: {name} {problem}")


def is_instance(*types: type) -> Callable[[Any], Optional[str]]:
    names = " or ".join(t.__name__ for t in types)
    return lambda v: None if isinstance(v, types) else f"must be {names}, got {v!r}"


def one_of(choices: Iterable[str]) -> Callable[[Any], Optional[str]]:
    allowed = tuple(choices)
    return lambda v: None if v in allowed else f"must be one of {', '.join(allowed)}, got {v!r}"


def metrics(value: Any) -> Optional[str]:
    ok = isinstance(value, (tuple, list)) and all(isinstance(m, Metric) for m in value)
    return None if ok else "must be a tuple of lifebench.api.Metric"


def tables(value: Any) -> Optional[str]:
    ok = isinstance(value, (tuple, list)) and all(callable(t) for t in value)
    return None if ok else "must be a tuple of functions (records -> tables)"


def value_range(value: Any) -> Optional[str]:
    ok = value is None or (isinstance(value, tuple) and len(value) == 2
                           and all(isinstance(v, (int, float)) for v in value) and value[0] < value[1])
    return None if ok else f"must be None or a (low, high) tuple, got {value!r}"


def names(value: Any) -> Optional[str]:
    ok = isinstance(value, (tuple, list)) and all(isinstance(v, str) for v in value)
    return None if ok else f"must be a tuple of names, got {value!r}"


_VERSION_TEXT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,31}")


def version_text(value: Any) -> Optional[str]:
    """A plugin's behaviour version: a short text like "2" or "1.1"."""
    ok = isinstance(value, str) and _VERSION_TEXT.fullmatch(value)
    return None if ok else f"must be a short version text like \"2\" or \"1.1\", got {value!r}"
