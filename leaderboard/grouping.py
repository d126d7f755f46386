"""Arms and groups: how the leaderboard's tables, tests and figures slice records.

An arm is a method (with its config) and model; a group is a benchmark split (with its
config) and budget. Within a group every arm ran the same instances and seeds.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Optional

from lifebench.api.records import EpisodeRecord
from lifebench.api.reporting import aggregate_trials
from lifebench.leaderboard.plugins import trial_aggregation


def budget_label(record: EpisodeRecord) -> str:
    """The budget asked for: a number, or "default" (each instance's default)."""
    return str(record.budget_asked)


@dataclass(frozen=True)
class Arm:
    method: str
    method_config_hash: str
    model: Optional[str]

    def label(self, ambiguous: bool) -> str:
        text = self.method + (f" [{self.method_config_hash[:6]}]" if ambiguous else "")
        return text + (f" @{self.model}" if self.model else "")


def arm_labels(arms: Iterable[Arm]) -> dict[Arm, str]:
    """Each arm's label; the config hash is shown only where a method has several."""
    arms = list(arms)
    configs = defaultdict(set)
    for arm in arms:
        configs[(arm.method, arm.model)].add(arm.method_config_hash)
    return {arm: arm.label(len(configs[(arm.method, arm.model)]) > 1) for arm in arms}


@dataclass(frozen=True)
class Group:
    benchmark: str
    benchmark_config_hash: str
    split: str
    budget: str

    @property
    def title(self) -> str:
        config = f" [{self.benchmark_config_hash[:6]}]" if self.benchmark_config_hash else ""
        budget = "" if self.budget == "default" else f", budget {self.budget}"
        return f"{self.benchmark}{config} {self.split}{budget}"


def grouped(records: list[EpisodeRecord], trials: Optional[str] = None
            ) -> dict[Group, dict[Arm, list[EpisodeRecord]]]:
    """Result records by group and arm, trials aggregated as each benchmark's protocol says
    (or as `trials` overrides)."""
    out: dict[Group, dict[Arm, list[EpisodeRecord]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        if r.is_result:
            out[Group(r.benchmark, r.benchmark_config_hash, r.split, budget_label(r))][
                Arm(r.method, r.method_config_hash, r.model)].append(r)
    for group, arms in out.items():
        how = trial_aggregation(group.benchmark, trials)
        for arm in arms:
            arms[arm] = aggregate_trials(arms[arm], how)
    return out


def by_title(groups: dict[Group, dict[Arm, list[EpisodeRecord]]]) -> list[tuple[Group, dict[Arm, list[EpisodeRecord]]]]:
    return sorted(groups.items(), key=lambda kv: kv[0].title)
