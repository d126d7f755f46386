"""The episode loop on the real Plancraft env: budgets, timeouts, failure classification."""

from __future__ import annotations

import time

import pytest

from lifebench.api import Budget, LLMError, Method, MethodNeeds, StreamContext, TaskInfo
from lifebench.benchmarks.plancraft import PlancraftBenchmark
from lifebench.runner.episode import play_episode


@pytest.fixture(scope="module")
def bench() -> PlancraftBenchmark:
    return PlancraftBenchmark()


def task_for(bench, instance, budget=30, index=0):
    return TaskInfo(benchmark="plancraft", split="val", instance=instance, seed=0, trial=0,
                    episode_index=index, budget_steps=budget, instructions=bench.instructions)


class Scripted(Method):
    """Plays a fixed list of actions, then repeats the last one; records what it was told."""

    name = "scripted"
    needs = MethodNeeds(oracle=True)

    def __init__(self, actions=None, raise_at=None, exc=None, sleep_s=0.0):
        super().__init__()
        self.actions, self.raise_at, self.exc, self.sleep_s = actions, raise_at, exc, sleep_s
        self.outcomes = []

    def begin_episode(self, task, tools):
        self.i = 0
        self.oracle = tools.oracle

    def act(self, observation):
        self.i += 1
        if self.raise_at == self.i:
            raise self.exc
        time.sleep(self.sleep_s)
        if self.actions is None:
            return self.oracle.next_action(observation)
        return self.actions[min(self.i, len(self.actions)) - 1]

    def end_episode(self, outcome):
        self.outcomes.append(outcome)


def run(bench, method, instance, budget=30, timeout=60.0):
    method.setup(StreamContext(bench, "val", 0, Budget(budget), None))
    return play_episode(bench, instance, method, task_for(bench, instance, budget), timeout)


def possible(bench, min_length=4):
    return next(i for i in bench.instances("val")
                if not i.metadata["impossible"] and (i.metadata["optimal_path_length"] or 0) >= 2)


def test_oracle_succeeds_and_records_trajectory(bench):
    instance = possible(bench)
    method = Scripted()
    result = run(bench, method, instance)
    assert result.status == "ok" and result.success and result.score == 1.0
    assert result.success_step == result.steps == len(result.trajectory) - 1
    assert result.extra["impossible_truth"] is False
    told = method.outcomes[0]
    assert told.steps == result.steps and told.success
    assert [a for a, _ in told.transitions] == [s.action for s in result.trajectory[1:]]


def test_budget_is_enforced_by_the_harness(bench):
    instance = possible(bench)
    method = Scripted(actions=["think: still thinking"])
    result = run(bench, method, instance, budget=7)
    assert result.status == "budget_exhausted"
    assert result.steps == 7 and not result.success
    assert method.outcomes[0].status == "budget_exhausted"  # end_episode still called


def test_success_on_the_last_budgeted_step_counts(bench):
    instance = possible(bench)
    solved = run(bench, Scripted(), instance)
    exact = run(bench, Scripted(), instance, budget=solved.steps)
    short = run(bench, Scripted(), instance, budget=solved.steps - 1)
    assert exact.status == "ok" and exact.success
    assert short.status == "budget_exhausted" and not short.success


@pytest.mark.parametrize("exc,status", [(ValueError("bug"), "agent_error"),
                                        (LLMError("endpoint down"), "llm_error")])
def test_method_failures_are_classified(bench, exc, status):
    method = Scripted(raise_at=2, exc=exc)
    result = run(bench, method, possible(bench))
    assert result.status == status and not result.success
    assert type(exc).__name__ in result.error
    assert method.outcomes == []  # a failure is not an outcome to learn from


def test_non_string_action_is_an_agent_error(bench):
    result = run(bench, Scripted(actions=[None]), possible(bench))
    assert result.status == "agent_error" and "not str" in result.error


class BrokenEnvBenchmark(PlancraftBenchmark):
    """Plancraft whose env crashes on its third step."""

    def make_env(self, instance, seed):
        env = super().make_env(instance, seed)
        original = env.step
        calls = {"n": 0}

        def step(action):
            calls["n"] += 1
            if calls["n"] == 3:
                raise RuntimeError("segfault in the simulator")
            return original(action)

        env.step = step
        return env


def test_env_failures_are_env_errors(bench):
    broken = BrokenEnvBenchmark()
    method = Scripted(actions=["think: a", "think: b", "think: c"])
    method.setup(StreamContext(broken, "val", 0, Budget(30), None))
    instance = possible(bench)
    result = play_episode(broken, instance, method, task_for(broken, instance), 60.0)
    assert result.status == "env_error" and "segfault" in result.error
    assert result.steps == 2


def test_wall_clock_timeout(bench):
    method = Scripted(actions=["think: slow"], sleep_s=0.05)
    result = run(bench, method, possible(bench), budget=1000, timeout=0.3)
    assert result.status == "timeout" and 2 <= result.steps < 1000


class Explorer(Scripted):
    """Explores by branching from a snapshot; remembers what it saw."""

    from dataclasses import dataclass as _dc

    @_dc(frozen=True)
    class Config:
        explore_steps: int = 5

    def __init__(self):
        super().__init__()
        self.config = self.Config()
        self.seen = []

    def explore(self, env, budget):
        env.reset()
        snap = env.snapshot()
        while True:  # steps until the harness stops it
            self.seen.append(env.step("think: try").observation.text)
            env.restore(snap)


def test_explore_runs_on_its_own_env_within_its_budget(bench):
    method = Explorer()
    instance = possible(bench)
    result = run(bench, method, instance)
    assert result.explore_steps == 5 and method.seen == ["Ok"] * 5
    assert result.status == "ok" and result.success  # the episode's env was untouched
