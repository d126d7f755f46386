"""Price tables: USD per million tokens, input and output, by model name."""

from __future__ import annotations

from pathlib import Path

from lifebench.api.errors import UserError
from lifebench.api.untrusted import parse_json


def load_prices(path: str) -> dict[str, tuple[float, float]]:
    """A price table file: {"model": [input, output]} in USD per million tokens."""
    try:
        table = parse_json(Path(path).read_bytes())
        return {str(m): (float(p[0]), float(p[1])) for m, p in table.items()}
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        raise UserError(f"--prices {path}: expected a JSON file like "
                        f'{{"model-name": [0.15, 0.60]}} (USD per million input, output tokens)') from None
