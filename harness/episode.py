"""The episode loop: the harness, not the method, owns it.

It counts the actions sent to the env, enforces the step budget and the wall-clock
timeout, classifies every failure by where it happened, and records the trajectory.
"""

from __future__ import annotations

import random
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Optional

from harness.errors import EnvError, LLMError
from harness.protocols import Benchmark, EpisodeTools, Method
from harness.records import EpisodeOutcome, Instance, Observation, TaskInfo
from harness.snapshots import with_snapshots


@dataclass
class EpisodeResult:
    status: str
    success: bool = False
    score: float = 0.0
    steps: int = 0
    wall_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    trajectory: list[dict[str, Any]] = field(default_factory=list)
    error: Optional[str] = None


class _Failure(Exception):
    def __init__(self, status: str, error: str) -> None:
        super().__init__(error)
        self.status = status
        self.error = error


def _failure(exc: BaseException, side: str) -> _Failure:
    """Who failed: an LLMError is the endpoint's, an EnvError or anything raised by the env
    is the env's, anything else raised by the method is the method's (agent_error)."""
    if isinstance(exc, LLMError):
        status = "llm_error"
    elif isinstance(exc, EnvError) or side == "env":
        status = "env_error"
    else:
        status = "agent_error"
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    at = f" at {where.filename.rsplit('/', 1)[-1]}:{where.lineno}" if where else ""
    return _Failure(status, f"{type(exc).__name__}: {exc}{at}")


def _no_queries(name: str) -> str:
    raise ValueError(f"this environment answers no queries (asked for {name!r})")


def _no_image() -> Any:
    raise ValueError("this environment has no image")


def _sample_fallback(env: Any):
    def sample(rng: random.Random) -> str:
        return rng.choice(env.valid_actions())
    return sample


class ExplorationBudgetExhausted(Exception):
    """Raised by the exploration env when a method steps past its exploration budget."""


class _ExplorationEnv:
    """The env a method explores: its own instance of the task, with snapshots (native or
    reset-and-replay), and a step counter the method cannot exceed."""

    def __init__(self, env: Any, budget: int) -> None:
        self.env = with_snapshots(env)
        self.budget = budget
        self.steps = 0

    def step(self, action: str):
        if self.steps >= self.budget:
            raise ExplorationBudgetExhausted(f"exploration budget of {self.budget} steps used")
        self.steps += 1
        return self.env.step(action)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)


def _explore(benchmark: Benchmark, instance: Instance, method: Method, task: TaskInfo) -> Optional[int]:
    """Run `method.explore` on a separate env when the method has one and its config sets
    `explore_steps` (so the exploration budget is part of the method's config hash)."""
    if type(method).explore is Method.explore:
        return None
    budget = int(getattr(method.config, "explore_steps", 0) or 0)
    if budget <= 0:
        return None
    env = _ExplorationEnv(benchmark.make_env(instance, task.seed), budget)
    try:
        method.explore(env, budget)
    except ExplorationBudgetExhausted:
        pass
    finally:
        env.close()
    return env.steps


def play_episode(benchmark: Benchmark, instance: Instance, method: Method, task: TaskInfo,
                 timeout_s: float, record_trajectory: bool = True,
                 teacher: Any = None) -> EpisodeResult:
    """Play one episode of `method` on `instance`. Never raises for env or method faults:
    they come back as a result with a failure status. `teacher` (a TeacherService) is
    bound to this episode's env and the actions played, for the method to ask."""
    started = time.monotonic()
    deadline = started + timeout_s
    result = EpisodeResult(status="ok")
    trajectory = result.trajectory
    env = None
    side = "env"
    try:
        try:
            env = benchmark.make_env(instance, task.seed)
            oracle = benchmark.oracle(env) if method.needs.oracle else None
            played = teacher.bind(env).played if teacher is not None else []
            sample = getattr(env, "sample_action", None) or _sample_fallback(env)
            tools = EpisodeTools(valid_actions=env.valid_actions, sample_action=sample,
                                 query=getattr(env, "query", None) or _no_queries, oracle=oracle,
                                 render=getattr(env, "render", None) or _no_image)
            side = "method"
            explored = _explore(benchmark, instance, method, task)
            if explored is not None:
                result.extra["explore_steps"] = explored
            method.begin_episode(task, tools)
            side = "env"
            observation: Observation = env.reset()
            if record_trajectory:
                trajectory.append({"observation": observation.text})
            while True:
                if result.steps >= task.budget_steps:
                    result.status = "budget_exhausted"
                    break
                if time.monotonic() > deadline:
                    raise _Failure("timeout", f"episode exceeded --timeout {timeout_s:g}s")
                side = "method"
                action = method.act(observation)
                if not isinstance(action, str):
                    raise TypeError(f"act() returned {type(action).__name__}, not str")
                side = "env"
                step = env.step(action)
                result.steps += 1
                played.append(action)
                observation = step.observation
                result.success, result.score = bool(step.success), float(step.score)
                if record_trajectory:
                    trajectory.append({"action": action, "observation": observation.text,
                                       "reward": step.reward})
                if step.done:
                    result.status = "ok"
                    break
            if result.success:
                result.extra["success_step"] = result.steps
            episode_extra = getattr(env, "episode_extra", None)
            if episode_extra:
                result.extra.update(episode_extra())
            side = "method"
            method.end_episode(EpisodeOutcome(
                task=task, status=result.status, success=result.success, score=result.score,
                steps=result.steps, final_observation=observation,
                trajectory=tuple((t["action"], t["observation"]) for t in trajectory[1:]),
            ))
            result.extra.update(method.episode_extra())
        except _Failure:
            raise
        except Exception as exc:
            raise _failure(exc, side) from exc
    except _Failure as failure:
        result.status, result.error = failure.status, failure.error
        result.success, result.score = False, 0.0
    finally:
        if teacher is not None:
            teacher.unbind()
        if env is not None:
            try:
                env.close()
            except Exception:  # a failing close must not hide the episode's result
                pass
        result.wall_s = time.monotonic() - started
    return result
