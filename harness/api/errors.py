"""Error types, split by who must act on them.

`UserError`: bad input (unknown names, bad values, missing data, corrupt files). The CLI
prints its one-line message and exits 2. The message says what to do.

`EnvError`, `LLMError`: infrastructure failures raised inside an episode. The runner
records them with status `env_error` / `llm_error` and retries the episode.
"""

from __future__ import annotations

import difflib
from typing import Iterable


class UserError(Exception):
    """Bad input. The message is one line that names the valid choices or the fix."""


class EnvError(Exception):
    """The environment failed (crashed, refused to load). Retried by the runner."""


class LLMError(Exception):
    """The LLM endpoint failed after the client's own retries. Retried by the runner."""


def unknown_name(kind: str, name: str, choices: Iterable[str]) -> UserError:
    """A UserError for an unknown name, with a "did you mean" when one is close."""
    choices = sorted(choices)
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    listed = ", ".join(choices) if choices else "none installed"
    return UserError(f"unknown {kind} {name!r}{hint}; choose from: {listed}")
