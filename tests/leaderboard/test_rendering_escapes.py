"""Names from outside (methods, instances, plugins' values) cannot break the tables and
the site's data: markdown cells escape `|`, `<` and `>`; the site's scripts hold no `<`."""

from __future__ import annotations

import json

from lifebench.leaderboard.render import render
from lifebench.leaderboard.site.jsdata import script


def test_a_markdown_cell_cannot_end_its_cell_or_open_html():
    text = render(["method", "success"], [["evil|name <script>x</script>\nnext", "0.5"]], "markdown")
    header, rule, row = text.splitlines()
    assert row.count("|") - row.count("\\|") == 3  # the row's own three bars
    assert "<" not in row and ">" not in row and "&lt;script&gt;" in row
    # HTML and LaTeX were escaped already
    assert "&lt;script&gt;" in render(["m"], [["<script>"]], "html")
    assert "<script>" not in render(["m"], [["<script>"]], "latex")


def test_site_data_holds_no_script_end_and_reads_back_the_same():
    value = {"instance": "</script><script>alert(1)</script><!--", "n": 1}
    text = script("window.data=", value)
    assert "<" not in text
    literal = text[len("window.data=JSON.parse("):-len(");\n")]
    assert json.loads(json.loads(literal)) == value  # JS reads the same string as JSON does
