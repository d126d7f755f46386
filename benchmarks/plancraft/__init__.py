"""Plancraft (Dagan et al. 2024) as a lifebench benchmark: text only, on plancraft 0.4.9."""

from __future__ import annotations

import functools

from typing import Any, Optional

from lifebench.api import (Benchmark, ContextSchema, Instance, InstanceFacts, Observation,
                           UserError, base_split, curriculum_split, is_curriculum_split,
                           unknown_name)
from lifebench.benchmarks.manifests import read_manifest, sha256_file
from lifebench.benchmarks.plancraft.data import SPLIT_FILES, data_dir, load_raw_examples, split_file
from lifebench.benchmarks.plancraft.reporting import IMPOSSIBLE_F1


class PlancraftBenchmark(Benchmark):
    name = "plancraft"
    default_budget = 30
    task_family_key = "target"  # val.repeated: 570 examples over 107 targets
    noop_action = "think: (no action)"  # costs a step, changes nothing
    # val: low task repetition; val.repeated: the high-repetition split of How².
    default_splits = ("val", "val.repeated")
    # The package's training examples (1145, disjoint from val and test): what methods that
    # learn before testing (RAP, InstructRAG) learn from.
    support_split = "train"
    metrics = (IMPOSSIBLE_F1,)
    packages = ("plancraft",)
    score_range = (0.0, 1.0)
    # The end of an episode that no success ended: the package's "Plancraft environment is
    # terminate due to stop action" (after `impossible`) and "... is terminated". The
    # target stays: it is the task, and the instance is its task (a build without it would
    # explore blind), so a success shows as the target in the inventory, as in any episode.
    outcome_signals = (r"^Plancraft environment is terminated?\b.*$",)
    success_note = ("success as Plancraft's evaluator counts it: over every example, an "
                    "impossible example (100 of val's and val.repeated's 570) succeeding when "
                    "the agent declares it impossible; a paper's success rate over the "
                    "solvable examples alone (How²'s SR) is in that method's own tables")

    @property
    def instructions(self) -> str:
        return _system_prompt()

    def splits(self) -> list[str]:
        # every split also in curriculum order (How²'s ablation): "val.curriculum"
        return list(SPLIT_FILES) + [curriculum_split(s) for s in SPLIT_FILES]

    def task_text(self, first_observation: str) -> str:
        # "Craft an item of type: ..." comes first; the inventory follows
        return first_observation.strip().splitlines()[0].strip()

    def check_available(self) -> None:
        data_dir()

    def load_instances(self, split: str) -> list[Instance]:
        if is_curriculum_split(split) and base_split(split) in SPLIT_FILES:
            return self.ordered_instances(split, 0)
        if split not in SPLIT_FILES:
            raise unknown_name("split of plancraft", split, SPLIT_FILES)
        from plancraft.config import PlancraftExample

        manifest = read_manifest(self.name, split)
        actual_sha = sha256_file(split_file(split))
        if manifest and manifest[0]["source_sha256"] != actual_sha:
            raise UserError(f"installed plancraft data for {split!r} differs from the split "
                            f"manifest; install plancraft==0.4.9 (`make install`)")
        by_id = {ex["id"]: ex for ex in load_raw_examples(split)}
        out = []
        for row in manifest:
            raw = by_id[row["instance_id"]]
            example = PlancraftExample(**raw)
            out.append(Instance(
                instance_id=example.id,
                metadata={
                    "target": example.target,
                    "complexity_split": example.complexity_split,
                    "complexity_bin": example.complexity_bin,
                    "num_distractors": example.num_distractors,
                    "optimal_path_length": example.optimal_path_length,
                    "impossible": example.impossible,
                    "recipe_type": example.recipe_type,
                },
                payload=example,
            ))
        return out

    def ordered_instances(self, split: str, seed: int) -> list[Instance]:
        """Curriculum splits are ordered per seed (their recipe graph's cycles are broken
        at random); the others keep their fixed order."""
        if not is_curriculum_split(split):
            return self.instances(split)
        from lifebench.benchmarks.plancraft.curriculum import curriculum_order

        return curriculum_order(self.instances(base_split(split)), seed)

    def gold_length(self, instance: Instance) -> Optional[int]:
        """The package's optimal path length (None for impossible examples, which have none)."""
        length = instance.metadata.get("optimal_path_length")
        return int(length) if length and not instance.metadata.get("impossible") else None

    def make_env(self, instance: Instance, seed: int) -> Any:
        from lifebench.benchmarks.plancraft.env import PlancraftEnv

        # Plancraft is deterministic: the seed changes nothing.
        return PlancraftEnv(instance.payload)

    def context_schema(self) -> ContextSchema:
        from lifebench.benchmarks.plancraft.context import schema

        return schema()

    def instance_facts(self, env: Any) -> InstanceFacts:
        from lifebench.benchmarks.plancraft.context import instance_facts

        return instance_facts(env)

    def oracle(self, env: Any) -> "PlannerOracle":
        return PlannerOracle(env)

    def teacher_plan(self, env: Any, played: tuple[str, ...], oracle: Any,
                     item: Optional[str] = None) -> Any:
        """The planner on the current inventory for the item asked about (How²'s teachers
        answer the question asked), or for the target when none is asked or the name is
        no Minecraft item."""
        from lifebench.benchmarks.plancraft.teaching import planner_plan

        return planner_plan(env.inventory, env.example.target, item)


class PlannerOracle:
    """The package's planner (`get_subplans`) on the env's current inventory, followed
    action by action, as the package's OracleModel does."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.queue: list[str] = []

    def next_action(self, observation: Observation) -> str:
        if not self.queue:
            from lifebench.benchmarks.plancraft.planner import get_subplans

            subplans, _ = get_subplans({"inventory": self.env.inventory,
                                        "target": self.env.example.target})
            self.queue = [a for sub in subplans for a in sub]
        return self.queue.pop(0)


@functools.lru_cache(maxsize=1)
def _system_prompt() -> str:
    """The package's system prompt with our action set: the same text for every episode."""
    from plancraft.environment.prompts import get_system_prompt

    from lifebench.benchmarks.plancraft.env import ACTION_HANDLERS

    return get_system_prompt(handlers=list(ACTION_HANDLERS))["content"]
