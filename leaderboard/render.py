"""Tables as text: markdown, LaTeX, HTML or CSV."""

from __future__ import annotations

import csv
import io
from typing import Sequence

from tabulate import tabulate

from lifebench.api.errors import UserError
from lifebench.api.reporting import Table

FORMATS = {"markdown": "github", "latex": "latex_booktabs", "html": "html", "csv": None}


def render(headers: Sequence[str], rows: Sequence[Sequence[str]], fmt: str) -> str:
    if fmt not in FORMATS:
        raise UserError(f"unknown format {fmt!r}; choose from: {', '.join(FORMATS)}")
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(headers)
        writer.writerows(rows)
        return buf.getvalue().rstrip("\n")
    if fmt == "markdown":  # tabulate escapes HTML and LaTeX cells, not markdown's
        headers = [markdown_cell(h) for h in headers]
        rows = [[markdown_cell(c) for c in r] for r in rows]
    return tabulate([list(r) for r in rows], headers=list(headers), tablefmt=FORMATS[fmt],
                    disable_numparse=True)


def markdown_cell(value: object) -> str:
    """A cell's text that cannot end its cell or start HTML: `|` escaped, `<` and `>` as
    entities, line breaks as spaces (method, instance and plugin names come from outside)."""
    text = str(value)
    return (text.replace("<", "&lt;").replace(">", "&gt;")
            .replace("|", "\\|").replace("\r", " ").replace("\n", " "))


def render_titled(table: Table, fmt: str) -> str:
    """The table under its title line, its notes under it."""
    text = f"{table.title}\n\n" + render(table.headers, table.rows, fmt)
    return text + "".join(f"\nnote: {note}" for note in table.notes)
