"""ScienceWorld (Wang et al. 2022) as a lifebench benchmark, on scienceworld 1.2.3,
with the protocol of the CLIN and STEP papers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from lifebench.api import (Benchmark, ContextSchema, Instance, InstanceFacts, UserError,
                           unknown_name)

from lifebench.benchmarks.scienceworld.reporting import step_table1
from lifebench.benchmarks.scienceworld.tasks import LONG_BUDGET, SHORT_BUDGET
from lifebench.benchmarks.manifests import read_manifest

SPLITS = ("step18", "step18-v1", "step18-authors", "test", "dev", "step18-train")
# The 18-task table's splits: their support is the 18 tasks' train variations.
STEP18_SPLITS = ("step18", "step18-v1", "step18-authors")
# The 18 tasks' train variations: what methods learn from before step18 / step18-v1.
STEP18_TRAIN = "step18-train"
SIMPLIFICATIONS = ("easy", "teleportAction", "selfWateringFlowerPots", "openContainers",
                   "openDoors", "noElectricalAction")


@dataclass(frozen=True)
class ScienceWorldConfig:
    # CLIN and STEP ran the `easy` preset (all simplifications); comma-separate to choose.
    simplification: str = "easy"

    def __post_init__(self) -> None:
        for part in self.simplification.split(","):
            if part and part not in SIMPLIFICATIONS:
                raise ValueError(f"unknown simplification {part!r}; choose from "
                                 f"{', '.join(SIMPLIFICATIONS)} (comma-separated)")


class ScienceWorldBenchmark(Benchmark):
    name = "scienceworld"
    default_budget = LONG_BUDGET
    noop_action = "look around"
    guarded_actions = ("focus on",)  # a wrong focus ends the task
    # None: the simulator's score and completion are read apart (`getScore`,
    # `getCompleted`) and no answer prints them ("score" is no command).
    outcome_signals = ()
    default_splits = ("step18-v1",)
    support_split = STEP18_TRAIN
    packages = ("scienceworld",)
    score_range = (0.0, 100.0)  # the simulator's score (the best before a fatal move)
    environment = ("JAVA_TOOL_OPTIONS",)
    # STEP and CLIN run 5 trials per instance and report the best.
    trial_aggregation = "max"
    per_task_metric = "score"  # STEP and CLIN report mean score per task
    tables = (step_table1,)
    # the JVM: its heap (768m by default) plus its own overhead
    ray_resources = {"num_cpus": 1, "memory": 1.5 * 2**30}

    def task_family(self, instance: Instance) -> Optional[str]:
        # "1-1 boil": the task id first, so tables list the 18 tasks in the papers' order
        return f"{instance.metadata['task_id']} {instance.metadata['task_name']}"

    Config = ScienceWorldConfig

    @property
    def instructions(self) -> str:
        from lifebench.benchmarks.scienceworld.manual import MANUAL

        return MANUAL

    def splits(self) -> list[str]:
        return list(SPLITS)

    def task_text(self, first_observation: str) -> str:
        # the task description is the first paragraph; the room's description follows
        return first_observation.strip().split("\n\n", 1)[0].strip()

    def task_statement(self, first_observation: str) -> Optional[str]:
        return self.task_text(first_observation) or None

    def few_shot_support(self, split: str) -> Optional[str]:
        # The 18 tasks' train variations: the same task families, never a test variation.
        return STEP18_TRAIN if split in STEP18_SPLITS else super().few_shot_support(split)

    def check_available(self) -> None:
        try:
            import scienceworld  # noqa: F401
        except ImportError:
            raise UserError("scienceworld is not installed; run `make install` or "
                            "`pip install 'lifebench[scienceworld]'`") from None

    def load_instances(self, split: str) -> list[Instance]:
        if split not in SPLITS:
            raise unknown_name("split of scienceworld", split, SPLITS)
        return [Instance(instance_id=row["instance_id"],
                         metadata={k: v for k, v in row.items() if k != "instance_id"})
                for row in read_manifest(self.name, split)]

    def budget(self, instance: Instance) -> int:
        return SHORT_BUDGET if instance.metadata.get("length") == "short" else LONG_BUDGET

    def gold_length(self, instance: Instance) -> Optional[int]:
        """The simulator's gold path under `easy`, as the manifest measured it."""
        return int(instance.metadata["gold_length"])

    def make_env(self, instance: Instance, seed: int) -> Any:
        from lifebench.benchmarks.scienceworld.env import ScienceWorldTaskEnv

        # ScienceWorld is deterministic for a task variation: the seed changes nothing.
        return ScienceWorldTaskEnv(instance.metadata["task_name"],
                                   int(instance.metadata["variation"]), self.config.simplification)

    def context_schema(self) -> ContextSchema:
        from lifebench.benchmarks.scienceworld.context import schema

        return schema()

    def instance_facts(self, env: Any) -> InstanceFacts:
        from lifebench.benchmarks.scienceworld.context import instance_facts

        return instance_facts(env)

    def oracle(self, env: Any) -> Any:
        """Replays the instance's stored path (oracle_paths.py: shortened, or pinned for the
        step18 splits) when it has one, else the simulator's live gold path."""
        from lifebench.benchmarks.replay_oracle import ReplayOracle
        from lifebench.benchmarks.scienceworld.oracle_paths import oracle_path
        from lifebench.benchmarks.scienceworld.tasks import instance_id

        shortened = oracle_path(instance_id(env.task_name, env.variation), env.simplification)
        if shortened:
            return ReplayOracle(lambda: shortened, past_the_end="look around")
        env.want_gold = True  # the simulator generates the gold path when the task loads
        return ReplayOracle(lambda: env.gold, past_the_end="look around")
