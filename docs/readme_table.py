"""Rewrite the README's grid table (between its `grid-table` markers) from the committed
reference results: `make reference` runs it after rewriting `results/reference/`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START, END = "<!-- grid-table:", "<!-- /grid-table -->"


def main() -> None:
    board = subprocess.run([sys.executable, "-m", "lifebench.cli", "leaderboard",
                            str(ROOT / "results" / "reference")],
                           capture_output=True, text=True, check=True, cwd=ROOT).stdout
    table = board.split("\n\n")[1]  # the grid table and its notes, under its title
    table = table.replace("\nnote: ", "\n- ").replace("|\n- ", "|\n\n- ", 1)
    path = ROOT / "README.md"
    readme = path.read_text()
    start = readme.index("\n", readme.index(START)) + 1
    end = readme.index(END)
    path.write_text(readme[:start] + table.rstrip("\n") + "\n" + readme[end:])


if __name__ == "__main__":
    main()
