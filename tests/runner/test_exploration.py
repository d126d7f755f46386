"""The exploration env: a context build plays it blind (no task statement, nothing that
reveals reward or the episode's end, no structured data, steps that say only whether the
episode ended); a method's own exploration sees the env as its episodes do; neither
reaches anything of the env beyond what exploring needs. On a tiny env that prints
TextWorld's own answers (no game needed). And the episodes a method plays on its own
(`methods/rollouts.py`) count a macro action's moves as the harness does."""

from __future__ import annotations

import dataclasses
import random

import pytest

from lifebench.api import Benchmark, ContextTools, Instance, Observation, Step
from lifebench.api.protocols import cut_signals
from lifebench.benchmarks.textworld import TextWorldBenchmark
from lifebench.methods.rollouts import play
from lifebench.runner.exploration import CountedExplorationEnv

TASK = "Your task is to: cook a meal."
FIRST = f"-= Kitchen =-\nA kitchen with a fridge.\n\n{TASK}"
SCORED = "You take the pork chop from the fridge.\n\nYour score has just gone up by one point."
# TextWorld's answer to the winning action, as the game prints it
WON = ("You eat the meal. Not bad.\n\nYour score has just gone up by one point.\n\n"
       "                                                       *** The End ***\n\n"
       "You scored 17 out of a possible 17, in 32 turns.\n\n"
       "Would you like to RESTART, RESTORE a saved game, QUIT or UNDO the last command?")


class Kitchen(Benchmark):
    """TextWorld's outcome signals, and a task statement as ALFWorld states one."""

    name = "kitchen-for-tests"
    default_budget = 5
    outcome_signals = TextWorldBenchmark.outcome_signals

    @property
    def instructions(self):
        return "cook"

    def splits(self):
        return []

    def load_instances(self, split):
        return []

    def make_env(self, instance, seed):
        return KitchenEnv()

    def task_statement(self, first_observation):
        return TASK if TASK in first_observation else None


class KitchenEnv:
    """Two actions to win; a query, a privileged world and points in `data`, as real envs
    have them."""

    def reset(self):
        self.points = 0
        return Observation(FIRST, data={"score": 0, "task": TASK})

    def step(self, action):
        self.points += 1
        text = SCORED if self.points == 1 else WON
        return Step(Observation(text, data={"score": self.points}), reward=1.0,
                    done=self.points == 2, score=float(self.points), success=self.points == 2,
                    info={"won": self.points == 2})

    def valid_actions(self):
        return ["take pork chop from fridge", "eat meal"]

    def query(self, name):
        return TASK

    def start_world(self):
        return {"meal": "the answer"}

    def close(self):
        pass


def test_a_build_plays_blind():
    env = CountedExplorationEnv(KitchenEnv(), budget=5, blind=Kitchen())
    first = env.reset()
    assert first.text == "-= Kitchen =-\nA kitchen with a fridge." and first.data is None
    scored = env.step("take pork chop from fridge")
    assert scored.observation.text == "You take the pork chop from the fridge."
    won = env.step("eat meal")
    assert won.observation.text == "You eat the meal. Not bad." and won.done
    for step in (scored, won):  # nothing of the outcome but that it ended
        assert (step.reward, step.score, step.success, step.info, step.observation.data) == \
            (0.0, 0.0, False, {}, None)
    assert env.restore(env.snapshot()).text == "You eat the meal. Not bad."  # replayed: blind too
    assert env.steps == 4


def test_a_methods_exploration_sees_the_env_as_its_episodes_do():
    env = CountedExplorationEnv(KitchenEnv(), budget=5)
    assert env.reset().text == FIRST
    step = env.step("take pork chop from fridge")
    assert step.observation.text == SCORED and step.observation.data == {"score": 1}
    assert (step.reward, step.score) == (1.0, 1.0)


@pytest.mark.parametrize("blind", [None, Kitchen()], ids=["method", "build"])
def test_an_explorer_reaches_nothing_of_the_env_beyond_exploring(blind):
    env = CountedExplorationEnv(KitchenEnv(), budget=5, blind=blind)
    for hidden in ("env", "query", "start_world", "points"):
        assert not hasattr(env, hidden), hidden
    env.reset()
    assert env.valid_actions() == ["take pork chop from fridge", "eat meal"]
    assert env.sample_action(random.Random(0)) in env.valid_actions()
    assert env.steps == 0  # drawing an action is no step


def test_context_tools_hold_what_a_build_needs_only():
    fields = {f.name for f in dataclasses.fields(ContextTools)}
    assert fields == {"schema", "instructions", "llm", "budget_steps", "rng", "sample_action",
                      "report", "artefacts"}


def test_outcome_signals_are_checked_and_cut_with_their_blank_lines():
    assert cut_signals(WON, TextWorldBenchmark.outcome_signals) == "You eat the meal. Not bad."
    assert cut_signals("You have so far scored 3 out of a possible 17, in 9 turns.",
                       TextWorldBenchmark.outcome_signals) == ""
    assert cut_signals("A\n\n\nB", ()) == "A\n\n\nB"  # nothing matched: unchanged
    with pytest.raises(TypeError, match="does not compile"):
        type("Bad", (Kitchen,), {"outcome_signals": ("(unclosed",)})
    with pytest.raises(TypeError, match="tuple of regular expressions"):
        type("Bad", (Kitchen,), {"outcome_signals": ["a list"]})


class Walk(Kitchen):
    name = "walk-for-tests"

    def make_env(self, instance, seed):
        return WalkEnv()


class WalkEnv(KitchenEnv):
    """`walk N` is a macro action: N moves, each a step of the budget (Crafter's `move to`)."""

    def step_within(self, action, actions_left):
        moves = min(int(action.split()[1]), actions_left)
        return Step(Observation(f"walked {moves}"), actions=moves)


def test_a_rollout_counts_a_macro_actions_moves_as_the_harness_does():
    rollout = play(Walk(), Instance("w"), lambda observation: "walk 3", max_steps=5)
    assert [o for _, o in rollout.transitions] == ["walked 3", "walked 2"]  # 5 moves in all
