"""Crafter (Hafner 2021) as a text benchmark, on crafter 1.8.3: deterministic, fast, and
scored with Crafter's own score."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lifebench.api import (Benchmark, ContextSchema, Instance, InstanceFacts, UserError,
                           unknown_name)

from lifebench.api.data import RemoteData
from lifebench.benchmarks.crafter.reporting import (CRAFTER_SCORE, CRAFTER_SCORE_CI,
                                                    achievement_tables, published_tables,
                                                    score_file_data)
from lifebench.benchmarks.manifests import read_manifest

SPLITS = ("seeds-100", "seeds-1000", "seeds-support")
CRAFTER_LENGTH = 10000


# The manuals a config may ask for: the full one, or the action list alone.
MANUALS = ("full", "minimal")


@dataclass(frozen=True)
class CrafterConfig:
    # Steps after which crafter ends an episode (Crafter's 10000; BALROG plays 2000).
    length: int = CRAFTER_LENGTH
    # "minimal": the manual is the action list alone (AutoContext's Table 5 setting)
    manual: str = "full"

    def __post_init__(self) -> None:
        if self.length < 1:
            raise ValueError(f"length must be at least 1, got {self.length}")
        if self.manual not in MANUALS:
            raise ValueError(f"manual must be one of {', '.join(MANUALS)}, got {self.manual!r}")


class CrafterBenchmark(Benchmark):
    name = "crafter"
    default_budget = CRAFTER_LENGTH
    noop_action = "noop"
    budget_curves = False  # success = alive at the end, not a goal reached at a step
    default_splits = ("seeds-100",)
    # World seeds 1000..1099, outside every scored split: what RAP and InstructRAG learn from.
    support_split = "seeds-support"
    metrics = (CRAFTER_SCORE, CRAFTER_SCORE_CI)
    tables = (achievement_tables, published_tables)
    packages = ("crafter", "opensimplex")
    score_range = (0.0, 22.0)  # achievements unlocked
    primary_metric = "score"  # the grid shows achievements unlocked, not the success rate
    # What counts: the achievements unlocked (the reward is +1 at each first unlock, and
    # the score counts them), the observation's last line, and the end, which a `move to`
    # that the episode's end stopped names in its first line. The vitals stay: they are the
    # game's state every player sees (the reward's health part is not what the score counts).
    outcome_signals = (r"^Achievements so far: .*$",
                       r"^Move to \[\d+, \d+\]: \d+ move\(s\), stopped: the episode ended\.$")
    Config = CrafterConfig

    @property
    def instructions(self) -> str:
        from lifebench.benchmarks.crafter.text import manual, minimal_manual

        return minimal_manual() if self.config.manual == "minimal" else manual(self.config.length)

    def splits(self) -> list[str]:
        return list(SPLITS)

    def remote_data(self) -> RemoteData:
        """The published random agent's scores, for its report (`lifebench data`)."""
        return score_file_data()

    def check_available(self) -> None:
        try:
            import crafter  # noqa: F401
        except ImportError:
            raise UserError("crafter is not installed; run `make install` or "
                            "`pip install 'lifebench[crafter]'`") from None

    def load_instances(self, split: str) -> list[Instance]:
        if split not in SPLITS:
            raise unknown_name("split of crafter", split, SPLITS)
        return [Instance(instance_id=row["instance_id"],
                         metadata={k: v for k, v in row.items() if k != "instance_id"})
                for row in read_manifest(self.name, split)]

    def budget(self, instance: Instance) -> int:
        return self.config.length

    def context_schema(self) -> ContextSchema:
        from lifebench.benchmarks.crafter.context import schema

        return schema()

    def instance_facts(self, env: Any) -> InstanceFacts:
        from lifebench.benchmarks.crafter.context import instance_facts

        return instance_facts(env)

    def make_env(self, instance: Instance, seed: int) -> Any:
        from lifebench.benchmarks.crafter.env import CrafterEnv

        # The world is the instance's; the lifebench seed only seeds the agent.
        return CrafterEnv(int(instance.metadata["world_seed"]), self.config.length)
