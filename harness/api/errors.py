"""Error types, split by who must act on them.

`UserError`: bad input (unknown names, bad values, missing data, corrupt files). The CLI
prints its one-line message and exits 2. The message says what to do.

`EnvError`, `LLMError`: infrastructure failures raised inside an episode. The runner
records them with status `env_error` / `llm_error` and retries the episode. `ContextOverflow`
(an LLMError) is not: a prompt over the model's window ends the episode as the method's
failure, status `context_overflow`.
"""

from __future__ import annotations

import difflib
from typing import Iterable


class UserError(Exception):
    """Bad input. The message is one line that names the valid choices or the fix."""

    exit_code = 2  # the CLI's documented exit code for it


class EndpointUnusable(UserError):
    """The endpoint answers, but nothing it answers can be read (each of a run's first calls
    malformed alike): the run stops with this one line and exit 1, and the episodes it did
    not play stay unrecorded, so a rerun resumes them."""

    exit_code = 1


class ReplayMiss(UserError):
    """A request not among the answers a replay may use (`--cache replay`): the run cannot
    reproduce the one it replays, and stops (`lifebench verify` calls it a divergence)."""


class EnvError(Exception):
    """The environment failed (crashed, refused to load). Retried by the runner."""


class LLMError(Exception):
    """The LLM endpoint failed after the client's own retries. Retried by the runner."""


class ContextOverflow(LLMError):
    """The endpoint refused a prompt longer than the model's context window. Not retried:
    the same prompt would be refused again. The episode ends there with status
    `context_overflow`, the method's failure (as an episode too long for the model is)."""


class EndEpisode(Exception):
    """Raised by `Method.act` to end its episode before the env or the budget does (CLIN's
    stop after repeated actions): the episode ends as played so far, with status `ok`. No
    failure: the method says why in its own `episode_extra`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def unknown_name(kind: str, name: str, choices: Iterable[str]) -> UserError:
    """A UserError for an unknown name, with a "did you mean" when one is close."""
    choices = sorted(choices)
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    listed = ", ".join(choices) if choices else "none installed"
    return UserError(f"unknown {kind} {name!r}{hint}; choose from: {listed}")
