"""Parsing text that comes from outside the process (a model's reply, a file on disk) with
bounds: a length cap before parsing, a nesting cap (for code: counted brackets; for JSON:
the decoder's recursion limit), and the parser's own `RecursionError` and `MemoryError`
turned into the `ValueError` every caller already handles. A reply no
parser can read is then the method's parse failure (a failed step, a skipped item), never a
dead stream.

The caps are sized for reasoning models: a reply's reasoning is split off before its answer
is parsed, and 1,000,000 characters of answer is far more than any prompt format asks for.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

MAX_CHARS = 1_000_000
MAX_DEPTH = 200  # brackets open at once: JSON and Python both recurse per level
_OPEN = {ord("["): 1, ord("{"): 1, ord("("): 1, ord("]"): -1, ord("}"): -1, ord(")"): -1}


class Unreadable(ValueError):
    """Text over the bounds, or that its parser could not finish."""


def check_bounds(text: str | bytes, max_chars: int = MAX_CHARS, max_depth: int = MAX_DEPTH) -> None:
    """Unreadable when `text` is longer than `max_chars` or nests brackets deeper than
    `max_depth` (counted in strings too: conservative)."""
    if len(text) > max_chars:
        raise Unreadable(f"{len(text):,} characters, over the limit of {max_chars:,}")
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if text.count("[") + text.count("{") + text.count("(") <= max_depth:
        return  # cannot nest deeper than it has brackets
    depth = 0
    for delta in map(_OPEN.get, map(ord, text)):
        if delta:
            depth += delta
            if depth > max_depth:
                raise Unreadable(f"brackets nested deeper than {max_depth}")


def parse_json(text: str | bytes, max_chars: int = MAX_CHARS) -> Any:
    """`json.loads` within the length bound; Unreadable (a ValueError) otherwise. Its depth
    is json's own limit (the interpreter's recursion limit, a RecursionError turned into
    Unreadable): brackets inside strings, a model's text in a completion, do not count."""
    if len(text) > max_chars:
        raise Unreadable(f"{len(text):,} characters, over the limit of {max_chars:,}")
    if isinstance(text, bytes):  # json would guess UTF-16 or -32 from garbage's first bytes
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Unreadable(f"not UTF-8 text (byte {exc.start})") from None
    try:
        return json.loads(text)
    except (RecursionError, MemoryError) as exc:
        raise Unreadable(f"the JSON parser gave up ({type(exc).__name__})") from None


def parse_python(code: str, mode: str = "exec", max_chars: int = MAX_CHARS,
                 max_depth: int = MAX_DEPTH) -> ast.AST:
    """`ast.parse` within the bounds; SyntaxError as ast raises it, Unreadable (a
    ValueError) for text over the bounds or an expression the parser cannot finish."""
    check_bounds(code, max_chars, max_depth)
    try:
        return ast.parse(code, mode=mode)
    except (RecursionError, MemoryError) as exc:
        raise Unreadable(f"the Python parser gave up ({type(exc).__name__})") from None


def literal(text: str, max_chars: int = MAX_CHARS, max_depth: int = MAX_DEPTH) -> Any:
    """`ast.literal_eval` within the bounds (ValueError or SyntaxError otherwise)."""
    tree = parse_python(text.strip(), "eval", max_chars, max_depth)
    try:
        return ast.literal_eval(tree)
    except (RecursionError, MemoryError) as exc:
        raise Unreadable(f"the literal could not be read ({type(exc).__name__})") from None


_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def encodable(text: str) -> tuple[str, int]:
    """`text` with every character UTF-8 cannot encode (a lone surrogate: "\\ud800" in a
    server's JSON, a program's raw output) replaced by U+FFFD, and how many were replaced.
    Such a character in a prompt would fail the request's encoding, and the stream with it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.subn(REPLACEMENT, text)
    return text, 0


def encodable_value(value: Any) -> tuple[Any, int]:
    """`encodable` over every string of a JSON-like value (dicts, lists, strings)."""
    if isinstance(value, str):
        return encodable(value)
    if isinstance(value, dict):
        replaced, total = {}, 0
        for key, item in value.items():
            key, a = encodable(key) if isinstance(key, str) else (key, 0)
            replaced[key], b = encodable_value(item)
            total += a + b
        return (replaced, total) if total else (value, 0)
    if isinstance(value, (list, tuple)):
        items, total = [], 0
        for item in value:
            item, count = encodable_value(item)
            items.append(item)
            total += count
        return (type(value)(items), total) if total else (value, 0)
    return value, 0
