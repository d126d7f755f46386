"""How a method is evaluated on a benchmark, declared where the method lives
(`Method.protocol`): its paper's trials, which trial is scored, its arguments there, and the
smaller preparation a smoke run uses. The runner applies it to every cell it plays; what a
user gives (`--trials`, `--method-arg`) wins over it. Whether a method runs on a benchmark at
all is its `stream_problem`, asked with the config this protocol makes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from lifebench.api.reporting import TRIAL_AGGREGATIONS


@dataclass(frozen=True)
class EvaluationProtocol:
    """One method's protocol on one benchmark. `source` cites where each setting comes from
    (the paper's section, its code), as the method's README does."""

    trials: int = 1  # episodes per instance, in order: later trials see earlier ones
    # No trial of an instance is played after one succeeded (Reflexion's: its paper stops an
    # instance at its first success): fewer episodes, none of them recorded.
    stop_after_success: bool = False
    # How an instance's trials are scored (one of TRIAL_AGGREGATIONS); None: the benchmark's.
    scored_trial: Optional[str] = None
    # Config values on this benchmark (below the user's --method-arg and spec tables).
    method_args: dict[str, Any] = field(default_factory=dict)
    # Config values of a smoke run (`--smoke`, `make bench`): preparation at a small scale.
    smoke_args: dict[str, Any] = field(default_factory=dict)
    # About how many times the smoke preparation's LLM calls the full one makes (what
    # `--plan`, which measures the smoke one, scales it by); 1 without smoke arguments.
    smoke_scale: float = 1.0
    source: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.trials, bool) or not isinstance(self.trials, int) or self.trials < 1:
            raise ValueError(f"a protocol's trials must be an integer >= 1, got {self.trials!r}")
        if not isinstance(self.stop_after_success, bool):
            raise ValueError(f"a protocol's stop_after_success must be true or false, got "
                             f"{self.stop_after_success!r}")
        if self.scored_trial is not None and self.scored_trial not in TRIAL_AGGREGATIONS:
            raise ValueError(f"a protocol's scored_trial must be one of "
                             f"{', '.join(TRIAL_AGGREGATIONS)} (or None), got {self.scored_trial!r}")
        if isinstance(self.smoke_scale, bool) or not isinstance(self.smoke_scale, (int, float)) \
                or not self.smoke_scale >= 1:
            raise ValueError(f"a protocol's smoke_scale must be a number >= 1, got {self.smoke_scale!r}")
        for name in ("method_args", "smoke_args"):
            if not isinstance(getattr(self, name), dict):
                raise ValueError(f"a protocol's {name} must be a dict of config values")

    def args(self, smoke: bool) -> dict[str, Any]:
        """The config values this protocol sets, at full or smoke scale."""
        return {**self.method_args, **(self.smoke_args if smoke else {})}
