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
    context: str = ""  # the instance context provider ("" for none)
    context_config_hash: str = ""
    method_version: str = "1"  # records of two versions are never one arm

    def label(self, ambiguous: bool, context_ambiguous: bool = False,
              version_ambiguous: bool = False) -> str:
        return method_label(self.method, self.method_config_hash, self.model, ambiguous,
                            self.context, self.context_config_hash, context_ambiguous,
                            self.method_version if version_ambiguous else "")


def method_label(method: str, config_hash: str, model: Optional[str], ambiguous: bool,
                 context: str = "", context_hash: str = "", context_ambiguous: bool = False,
                 version: str = "") -> str:
    """"react", "react v2 [1a2b3c] + autocontext [4d5e6f] @model": a version and a config
    hash are shown only where one name has several."""
    text = method + (f" v{version}" if version else "") + (f" [{config_hash[:6]}]" if ambiguous else "")
    if context:
        text += f" + {context}" + (f" [{context_hash[:6]}]" if context_ambiguous else "")
    return text + (f" @{model}" if model else "")


def arm_labels(arms: Iterable[Arm]) -> dict[Arm, str]:
    """Each arm's label; a config hash is shown only where a method (or a context
    provider) has several."""
    arms = list(arms)
    configs = defaultdict(set)
    contexts = defaultdict(set)
    versions = defaultdict(set)
    for arm in arms:
        configs[(arm.method, arm.model)].add(arm.method_config_hash)
        contexts[(arm.method, arm.model, arm.context)].add(arm.context_config_hash)
        versions[arm.method].add(arm.method_version)
    return {arm: arm.label(len(configs[(arm.method, arm.model)]) > 1,
                           len(contexts[(arm.method, arm.model, arm.context)]) > 1,
                           len(versions[arm.method]) > 1)
            for arm in arms}


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
                Arm(r.method, r.method_config_hash, r.model, r.context,
                    r.context_config_hash, r.method_version)].append(r)
    for group, arms in out.items():
        for arm in arms:
            arms[arm] = aggregate_trials(arms[arm], trial_aggregation(group.benchmark, trials,
                                                                      arm.method))
    return out


def by_title(groups: dict[Group, dict[Arm, list[EpisodeRecord]]]) -> list[tuple[Group, dict[Arm, list[EpisodeRecord]]]]:
    return sorted(groups.items(), key=lambda kv: kv[0].title)
