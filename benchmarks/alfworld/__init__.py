"""ALFWorld (Shridhar et al. 2021), text mode, as a lifebench benchmark: alfworld 0.4.2 and
textworld 1.7.0 from PyPI, games from the data home's `alfworld/` (`lifebench data fetch
alfworld`), `$ALFWORLD_DATA` or alfworld's own cache."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Optional

from lifebench.api import (Benchmark, ContextSchema, Instance, InstanceFacts, UserError,
                           few_shot_base, few_shot_splits, partition_few_shot, unknown_name)

from lifebench.benchmarks.alfworld.data import (FETCH, NO_WALKTHROUGH, REFETCH, SPLITS,
                                                game_problem, split_dir)
from lifebench.benchmarks.manifests import read_manifest, sha256_file

if TYPE_CHECKING:
    from lifebench.api.data import RemoteData


# The test split partitioned for methods that adapt before testing: the first 2 games of
# each of the 6 task types (manifest order) are the few-shot support, the other 122 scored.
FEW_SHOT_SPLIT = "valid_unseen"
FEW_SHOT_PER_TYPE = 2


class AlfworldBenchmark(Benchmark):
    name = "alfworld"
    default_budget = 50
    task_family_key = "task_type"
    # valid_unseen: the out-of-distribution set every ALFWorld paper reports on.
    default_splits = ("valid_unseen",)
    support_split = "valid_train"
    packages = ("alfworld", "textworld")
    score_range = (0.0, 1.0)
    environment = ("ALFWORLD_DATA",)
    # None: a winning step's answer is the action's own ("You turn on the desklamp 1."), and
    # no answer prints a score (the task's line is `task_statement`'s).
    outcome_signals = ()

    @property
    def instructions(self) -> str:
        from lifebench.benchmarks.alfworld.manual import MANUAL

        return MANUAL

    def splits(self) -> list[str]:
        # valid_unseen's few-shot partition (InstructRAG's test tasks: adapt on .support,
        # score on .query)
        return list(SPLITS) + list(few_shot_splits(FEW_SHOT_SPLIT))

    def task_text(self, first_observation: str) -> str:
        # "Your task is to: put two soapbar in garbagecan." (the room is said before it)
        marker = "Your task is to:"
        if marker in first_observation:
            return first_observation.split(marker, 1)[1].strip().splitlines()[0].strip()
        return first_observation.strip()

    def task_statement(self, first_observation: str) -> Optional[str]:
        marker = "Your task is to:"
        if marker not in first_observation:
            return None
        return marker + first_observation.split(marker, 1)[1].splitlines()[0]

    def check_available(self) -> None:
        try:
            import alfworld  # noqa: F401
            import fast_downward  # noqa: F401
            import textworld  # noqa: F401
        except ImportError as exc:
            raise UserError(f"ALFWorld needs alfworld and textworld[pddl] ({exc}); run "
                            f"`make install` or `pip install 'lifebench[alfworld]'`") from None

    def load_instances(self, split: str) -> list[Instance]:
        if few_shot_base(split) == FEW_SHOT_SPLIT:
            support, query = partition_few_shot(self.instances(FEW_SHOT_SPLIT), self.task_family,
                                                FEW_SHOT_PER_TYPE)
            return support if split == few_shot_splits(FEW_SHOT_SPLIT)[0] else query
        if split not in SPLITS:
            raise unknown_name("split of alfworld", split, self.splits())
        root = split_dir(split)
        out, unguided = [], []
        for row in read_manifest(self.name, split):
            instance_id = row["instance_id"]
            path = root / instance_id / "game.tw-pddl"
            if not path.is_file():
                raise UserError(f"ALFWorld game {instance_id!r} of {split!r} is missing under "
                                f"{root}; the data is incomplete: run `{FETCH}`, or point "
                                f"LIFEBENCH_DATA elsewhere")
            if sha256_file(path) != row["file_sha256"]:
                # Other bytes may hold the same game; one without a walkthrough still runs.
                problem = game_problem(path.read_bytes(), row)
                if problem == NO_WALKTHROUGH:
                    unguided.append(instance_id)
                elif problem:
                    raise UserError(f"ALFWorld game {instance_id!r} under {root} is {problem}; "
                                    f"run `{REFETCH}` to get lifebench's games")
            metadata = {k: v for k, v in row.items()
                        if k not in ("instance_id", "file_sha256", "game_sha256")}
            out.append(Instance(instance_id=instance_id, metadata=metadata, payload=path))
        if unguided:
            print(f"lifebench: warning: {len(unguided)} ALFWorld game(s) of {split!r} under "
                  f"{root} are {NO_WALKTHROUGH}, e.g. {unguided[0]!r}; run `{REFETCH}` to get "
                  f"them with their walkthroughs", file=sys.stderr)
        return out

    def remote_data(self) -> RemoteData:
        """The games of every split, from alfworld's release archive (`lifebench data`)."""
        from lifebench.benchmarks.alfworld.remote import remote_data

        return remote_data()

    def make_env(self, instance: Instance, seed: int) -> Any:
        from lifebench.benchmarks.alfworld.env import AlfworldEnv

        # ALFWorld's text games are deterministic: the seed changes nothing.
        return AlfworldEnv(instance.payload, extra={"task_type": instance.metadata["task_type"]})

    def context_schema(self) -> ContextSchema:
        from lifebench.benchmarks.alfworld.context import schema

        return schema()

    def instance_facts(self, env: Any) -> InstanceFacts:
        from lifebench.benchmarks.alfworld.context import instance_facts

        return instance_facts(env)

    def oracle(self, env: Any) -> Any:
        from lifebench.benchmarks.replay_oracle import ReplayOracle

        return ReplayOracle(env.walkthrough, past_the_end="look")
