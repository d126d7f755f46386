"""TextWorld cooking games (Côté et al. 2018) as a lifebench benchmark, on textworld 1.7.0:
IGE's 25 games (`ige-cooking`) and splits generated offline with `tw-make`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any, Literal, Sequence

from lifebench.api import (Benchmark, ContextSchema, EpisodeRecord, Instance, InstanceFacts, Metric,
                           UserError, unknown_name)
from lifebench.api.data import RemoteData, fetch_command
from lifebench.benchmarks.manifests import read_manifest
from lifebench.benchmarks.textworld import generate
from lifebench.benchmarks.textworld.data import IGE_SPLIT, ige_games_dir, verify_games


def normalized_score(records: Sequence[EpisodeRecord]) -> float:
    """Mean of points over the game's maximum, so that games of different sizes weigh alike."""
    return fmean(float(r.extra.get("normalized_score", 0.0)) for r in records)


NORMALIZED_SCORE = Metric("normalized_score", "normalized score", normalized_score)


@dataclass(frozen=True)
class TextWorldConfig:
    # The oracle (and the teacher made from it): TextWorld's winning policy from the game's
    # logic (its shortest plan: at most 58 actions on IGE's games, within their 80-step
    # horizon), or the game's published walkthrough (up to 90 actions: it revisits rooms).
    oracle: Literal["policy", "walkthrough"] = "policy"
    # "minimal": the manual is the command list alone (AutoContext's Table 5 setting)
    manual: Literal["full", "minimal"] = "full"


class TextWorldBenchmark(Benchmark):
    name = "textworld"
    Config = TextWorldConfig
    # IGE's horizon on these games.
    default_budget = 80
    default_splits = (IGE_SPLIT,)
    # Ten generated games of IGE's kind (made on first use, offline, byte-identical
    # everywhere): what RAP and InstructRAG learn from; never one of IGE's 25.
    support_split = generate.SUPPORT_SPLIT
    metrics = (NORMALIZED_SCORE,)
    packages = ("textworld", "jericho")
    environment = ("LIFEBENCH_IGE_COOKING",)
    split_generators = (generate.KIND,)
    # The game's points and its end, as Inform 7 prints them: "Your score has just gone up
    # by one point.", the "*** The End ***" (or "*** You lost! ***") banner, the final "You
    # scored 17 out of a possible 17, in 32 turns." and the question after it, and the
    # `score` command's answer. A context build never reads them; IGE's episodes do.
    outcome_signals = (
        r"Your score has just gone (?:up|down) by \w+ points?\.",
        r"^[ \t]*\*\*\* .+ \*\*\*[ \t]*$",
        r"You (?:have so far )?scored \d+ out of a possible \d+, in \d+ turns?\.",
        r"Would you like to RESTART, RESTORE a saved game, QUIT or UNDO the last command\?",
    )

    @property
    def instructions(self) -> str:
        from lifebench.benchmarks.textworld.manual import MANUAL, MINIMAL_MANUAL

        return MINIMAL_MANUAL if self.config.manual == "minimal" else MANUAL

    def splits(self) -> list[str]:
        made = [s for s in generate.generated_splits() if s != generate.SUPPORT_SPLIT]
        return [IGE_SPLIT, generate.SUPPORT_SPLIT, *made]

    def has_split(self, split: str) -> bool:
        return split == IGE_SPLIT or generate.parse_split_name(split) is not None

    def check_split(self, split: str) -> None:
        if split == IGE_SPLIT:
            return
        if generate.parse_split_name(split) is None:
            raise unknown_name("split of textworld", split, self.splits())
        if split == generate.SUPPORT_SPLIT:
            generate.generate(*generate.SUPPORT_GAMES)  # at once when already made
            return
        generate.read_manifest(split)  # raises, naming the command, when not generated

    def generate_split(self, kind: str, n: int, seed: int) -> str:
        if kind != generate.KIND:
            raise unknown_name("split generator of textworld", kind, self.split_generators)
        generate.generate(n, seed)
        return generate.split_name(n, seed)

    def check_available(self) -> None:
        try:
            import jericho  # noqa: F401
            import textworld  # noqa: F401
        except ImportError as exc:
            raise UserError(f"the textworld benchmark needs textworld ({exc}); run "
                            f"`make install` or `pip install 'lifebench[textworld]'`") from None

    def load_instances(self, split: str) -> list[Instance]:
        self.check_split(split)
        if split == IGE_SPLIT:
            folder, rows = ige_games_dir(), read_manifest(self.name, IGE_SPLIT)
            fix = (f"use the 25 games of Intelligent Go-Explore as they were published "
                   f"(`{fetch_command(self.name, force=True)}` gets them)")
        else:
            folder, rows = generate.split_dir(split), generate.read_manifest(split)["games"]
            fix = generate.remake_hint(split)
        verify_games(folder, rows, fix)
        return [Instance(instance_id=row["instance_id"],
                         metadata={k: v for k, v in row.items() if k not in ("instance_id", "sha256")},
                         payload=folder / f"{row['instance_id']}.z8")
                for row in rows]

    def remote_data(self) -> RemoteData:
        """IGE's 25 games from its repository at a pinned commit (`lifebench data`)."""
        from lifebench.benchmarks.textworld.remote import remote_data

        return remote_data()

    def make_env(self, instance: Instance, seed: int) -> Any:
        from lifebench.benchmarks.textworld.env import CookingEnv

        return CookingEnv(Path(instance.payload), seed)

    def context_schema(self) -> ContextSchema:
        from lifebench.benchmarks.textworld.context import schema

        return schema()

    def instance_facts(self, env: Any) -> InstanceFacts:
        from lifebench.benchmarks.textworld.context import instance_facts

        return instance_facts(env)

    def oracle(self, env: Any) -> Any:
        from lifebench.benchmarks.replay_oracle import ReplayOracle

        sequence = env.policy if self.config.oracle == "policy" else env.walkthrough
        return ReplayOracle(sequence, past_the_end="look")
