"""Exact differences between two runs of a deterministic model (the scripted model of
`lifebench.api.scripted`): what an episode costs in calls and tokens, overall, per role and
per trial, format retries (a method's `extra.format_retries`), and what its instance
context's build cost.

Under a deterministic model these numbers have no noise, so any change is a change of the
code: a prompt that grew, an extra call per step, a memory that no longer reaches the next
trial, a context charged twice. Each comparison is the mean over the episodes both runs
recorded (matched by record key), and fails when it moves by more than its metric's
threshold, in either direction (a memory lost shrinks prompts).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from statistics import fmean
from typing import Callable, Optional

from lifebench.api.records import EpisodeRecord, RecordKey
from lifebench.leaderboard.grouping import Arm, Group, budget_label

# The relative change each metric may make before the check fails (metrics not named are
# reported, never failed on).
DEFAULT_THRESHOLDS: dict[str, float] = {
    "llm_calls": 0.05, "tokens_in": 0.05, "tokens_out": 0.05,
    "context_llm_calls": 0.05, "context_tokens_in": 0.05, "context_tokens_out": 0.05,
    "format_retries": 0.05,
}
# How each metric is named in a report line.
METRIC_NAMES = {
    "llm_calls": "LLM calls", "tokens_in": "prompt tokens", "tokens_out": "completion tokens",
    "steps": "steps", "context_llm_calls": "context build LLM calls",
    "context_tokens_in": "context build prompt tokens",
    "context_tokens_out": "context build completion tokens",
    "format_retries": "format retries",  # a method's `extra.format_retries`: replies asked again
}
EXACT_METRICS = tuple(METRIC_NAMES)
_PER_ROLE = ("llm_calls", "tokens_in", "tokens_out")
_ROLE_FIELD = {"llm_calls": "calls", "tokens_in": "tokens_in", "tokens_out": "tokens_out"}


def _charged_context(record: EpisodeRecord, name: str) -> float:
    """What the episode was charged for its instance context's build (0 when another
    episode carries the charge, or it had none)."""
    context = record.extra.get("context") if isinstance(record.extra, dict) else None
    if not isinstance(context, dict) or not context.get("charged"):
        return 0.0
    return _number(context.get(name))


def _number(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


_VALUES: dict[str, Callable[[EpisodeRecord], float]] = {
    "llm_calls": lambda r: float(r.llm_calls),
    "tokens_in": lambda r: float(r.tokens_in),
    "tokens_out": lambda r: float(r.tokens_out),
    "steps": lambda r: float(r.steps),
    "context_llm_calls": lambda r: _charged_context(r, "llm_calls"),
    "context_tokens_in": lambda r: _charged_context(r, "tokens_in"),
    "context_tokens_out": lambda r: _charged_context(r, "tokens_out"),
    "format_retries": lambda r: _number(r.extra.get("format_retries")),
}


def _role_value(metric: str, role: str) -> Callable[[EpisodeRecord], float]:
    field = _ROLE_FIELD[metric]

    def value(record: EpisodeRecord) -> float:
        usage = record.llm_usage.get(role)
        return float(getattr(usage, field)) if usage is not None else 0.0
    return value


@dataclass
class ExactRow:
    where: str   # the group and arm
    trial: Optional[int]  # None: every trial of the arm
    method: str
    metric: str  # a key of METRIC_NAMES
    role: str    # "" for the episode's total
    n: int       # matched episodes
    baseline: float  # per episode
    candidate: float
    threshold: Optional[float]

    @property
    def change(self) -> float:
        """The relative change (inf when the baseline is 0 and the candidate is not)."""
        if self.baseline == self.candidate:
            return 0.0
        if self.baseline == 0:
            return math.inf
        return (self.candidate - self.baseline) / abs(self.baseline)

    @property
    def failed(self) -> bool:
        return self.threshold is not None and abs(self.change) > self.threshold

    def line(self) -> str:
        what = METRIC_NAMES[self.metric] + (f" of role {self.role}" if self.role else "")
        change = "new" if math.isinf(self.change) else f"{self.change:+.1%}"
        limit = f"threshold ±{self.threshold:.0%}" if self.threshold is not None else "reported only"
        flag = "FAIL " if self.failed else ""
        return (f"{flag}{self.method}: {what} per episode {change} (exact, deterministic model: "
                f"{self.baseline:g} -> {self.candidate:g} over {self.n} episodes; {limit}) "
                f"in {self.where}" + ("" if self.trial is None else f" trial {self.trial}"))


def exact_differences(baseline: list[EpisodeRecord], candidate: list[EpisodeRecord],
                      thresholds: Optional[dict[str, float]] = None) -> list[ExactRow]:
    """Every exact comparison of the arms both runs have (results only, every trial),
    unchanged ones included."""
    limits = DEFAULT_THRESHOLDS if thresholds is None else thresholds
    base, cand = _by_arm(baseline), _by_arm(candidate)
    rows: list[ExactRow] = []
    for (group, arm), records in sorted(base.items(), key=lambda kv: str(kv[0])):
        theirs = cand.get((group, arm))
        if not theirs:
            continue  # the statistical check reports a missing arm
        if not any(r.llm_calls or _charged_context(r, "llm_calls")
                   for r in [*records.values(), *theirs.values()]):
            continue  # no model in this arm: nothing deterministic to compare
        where = (f"{group.benchmark}:{group.split} budget {group.budget} "
                 + arm.label(ambiguous=True, context_ambiguous=True, version_ambiguous=True))
        trials = sorted({key.trial for key in records})
        scopes: list[Optional[int]] = [None, *(trials if len(trials) > 1 else [])]
        roles = sorted({role for r in list(records.values()) + list(theirs.values())
                        for role in r.llm_usage})
        for trial in scopes:
            keys = [k for k in records if k in theirs and (trial is None or k.trial == trial)]
            if not keys:
                continue
            for metric in EXACT_METRICS:
                rows.append(_row(where, trial, arm.method, metric, "", keys, records, theirs,
                                 _VALUES[metric], limits.get(metric)))
            for role in roles:
                for metric in _PER_ROLE:
                    rows.append(_row(where, trial, arm.method, metric, role, keys, records,
                                     theirs, _role_value(metric, role), limits.get(metric)))
    return rows


def _row(where: str, trial: Optional[int], method: str, metric: str, role: str, keys: list[RecordKey],
         records: dict[RecordKey, EpisodeRecord], theirs: dict[RecordKey, EpisodeRecord],
         value: Callable[[EpisodeRecord], float], threshold: Optional[float]) -> ExactRow:
    return ExactRow(where, trial, method, metric, role, len(keys),
                    round(fmean(value(records[k]) for k in keys), 4),
                    round(fmean(value(theirs[k]) for k in keys), 4), threshold)


def _by_arm(records: list[EpisodeRecord]) -> dict[tuple[Group, Arm], dict[RecordKey, EpisodeRecord]]:
    """Result records by (group, arm), each by its key; the last record of a key wins (a
    retried episode's result)."""
    out: dict[tuple[Group, Arm], dict[RecordKey, EpisodeRecord]] = defaultdict(dict)
    for r in records:
        if r.is_result:
            group = Group(r.benchmark, r.benchmark_config_hash, r.split, budget_label(r))
            arm = Arm(r.method, r.method_config_hash, r.model, r.context, r.context_config_hash,
                      r.method_version)
            out[(group, arm)][r.key] = r
    return out


def shown(rows: list[ExactRow]) -> list[ExactRow]:
    """The changed rows a report prints, failures first: a role's or a trial's row only where
    it tells more than its arm's total (a change of another size)."""
    seen: set[tuple] = set()
    out = []
    for row in rows:  # in order: each arm's totals before its roles and trials
        if row.change == 0:
            continue
        key = (row.where, row.metric, round(row.change, 3))
        if key not in seen:
            seen.add(key)
            out.append(row)
    return sorted(out, key=lambda r: not r.failed)


def check_thresholds(values: object, where: str) -> dict[str, float]:
    """The thresholds a spec's `[check.thresholds]` table sets, over the defaults; ValueError
    for an unknown metric or a value that is not a fraction >= 0."""
    if not isinstance(values, dict):
        raise ValueError(f"{where}: `thresholds` must be a table of metric = fraction")
    out = dict(DEFAULT_THRESHOLDS)
    for name, value in values.items():
        if name not in METRIC_NAMES:
            raise ValueError(f"{where}: unknown metric {name!r} in thresholds; use one of "
                             f"{', '.join(METRIC_NAMES)}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            raise ValueError(f"{where}: threshold of {name} must be a number >= 0 (0.05 is 5%)")
        out[name] = float(value)
    return out
