"""Bounded parsing of outside text (`lifebench.api.untrusted`): over the bounds, or too deep
for the parser, is a ValueError every caller handles, never a RecursionError."""

from __future__ import annotations

import pytest

from lifebench.api.untrusted import Unreadable, check_bounds, literal, parse_json, parse_python

DEEP = 100_000


@pytest.mark.parametrize("parse, text", [
    (parse_json, "[" * DEEP + "]" * DEEP),
    (parse_json, '{"a":' * DEEP + "1" + "}" * DEEP),
    (parse_python, "(" * DEEP + "1" + ")" * DEEP),
    (parse_python, "-" * 200_000 + "1"),           # no brackets: the parser's own limit
    (parse_python, "not " * 200_000 + "x"),
    (literal, "[" * DEEP + "]" * DEEP),
])
def test_deep_nesting_is_unreadable_not_a_crash(parse, text):
    with pytest.raises(Unreadable):
        parse(text)


def test_bounds_and_ordinary_text():
    with pytest.raises(Unreadable, match="over the limit"):
        parse_json("1" * 101, max_chars=100)
    check_bounds("(" * 200 + ")" * 200)  # 200 deep is within the default
    with pytest.raises(Unreadable, match="nested deeper than 200"):
        check_bounds("(" * 201)
    # brackets in a JSON string are text, not nesting (a completion's content)
    assert parse_json('{"content": "' + "[" * 10_000 + '"}')["content"] == "[" * 10_000
    assert parse_json('{"a": [1, 2]}') == {"a": [1, 2]}
    assert literal("['x', 'y']") == ["x", "y"]
    with pytest.raises(SyntaxError):
        parse_python("def (")
    # an unparseable reply is a ValueError, as json's own errors are
    with pytest.raises(ValueError):
        parse_json("{not json")
    # bytes that are not UTF-8 say so (json would guess UTF-16 or -32 from the first bytes)
    with pytest.raises(Unreadable, match=r"not UTF-8 text \(byte 2\)"):
        parse_json(b"\x00\x00\xff\xfe garbage")
    assert parse_json('{"a": "é"}'.encode()) == {"a": "é"}
