"""The episode loop: the harness, not the method, owns it.

It counts the actions sent to the env, enforces the step budget and the wall-clock
timeout, classifies every failure by where it happened, and keeps the trajectory. It
returns one `EpisodeOutcome`, whatever happened: env and method faults come back as a
failure status, never as an exception.
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
import traceback
from typing import Any, Callable, Optional

from lifebench.api.errors import ContextOverflow, EndEpisode, EnvError, LLMError, UserError
from lifebench.api.protocols import Benchmark, EpisodeTools, Method
from lifebench.api.records import EpisodeOutcome, Instance, Observation, Status, TaskInfo, \
    TrajectoryStep
from lifebench.api.context import ExplorationBudgetExhausted
from lifebench.runner.exploration import CountedExplorationEnv, ExplorationSnapshot, step_counted


class Failure(Exception):
    def __init__(self, status: Status, error: str) -> None:
        super().__init__(error)
        self.status = status
        self.error = error


def classify_failure(exc: BaseException, side: str) -> Failure:
    """Who failed: an LLMError is the endpoint's, an EnvError or anything raised by the env
    is the env's, anything else raised by the method is the method's (agent_error)."""
    if isinstance(exc, ContextOverflow):  # outside act: in begin_episode, say
        status = Status.CONTEXT_OVERFLOW
    elif isinstance(exc, LLMError):
        status = Status.LLM_ERROR
    elif isinstance(exc, EnvError) or side == "env":
        status = Status.ENV_ERROR
    else:
        status = Status.AGENT_ERROR
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    at = f" at {where.filename.rsplit('/', 1)[-1]}:{where.lineno}" if where else ""
    return Failure(status, f"{type(exc).__name__}: {exc}{at}")


def no_queries(name: str) -> str:
    raise ValueError(f"this environment answers no queries (asked for {name!r})")


def _no_image() -> Any:
    raise ValueError("this environment has no image")


def sample_fallback(env: Any):
    def sample(rng: random.Random) -> str:
        return rng.choice(env.valid_actions())
    return sample


def _explore(benchmark: Benchmark, instance: Instance, method: Method, task: TaskInfo) -> Optional[int]:
    """Run `method.explore` on a separate env when the method has one and its config sets
    `explore_steps` (so the exploration budget is part of the method's config hash)."""
    if type(method).explore is Method.explore:
        return None
    budget = int(getattr(method.config, "explore_steps", 0) or 0)
    if budget <= 0:
        return None
    env = CountedExplorationEnv(benchmark.make_env(instance, task.seed), budget)
    try:
        method.explore(env, budget)
    except ExplorationBudgetExhausted:
        pass
    finally:
        env.close()
    return env.steps


class _Episode:
    """What the loop knows so far; becomes the outcome."""

    def __init__(self) -> None:
        self.status = Status.OK
        self.success = False
        self.score = 0.0
        self.steps = 0
        self.trajectory: list[TrajectoryStep] = []
        self.observation: Optional[Observation] = None
        self.explore_steps: Optional[int] = None
        self.extra: dict[str, Any] = {}
        self.error: Optional[str] = None  # why a result status other than ok (an overflow)

    def outcome(self, task: TaskInfo, error: Optional[str] = None) -> EpisodeOutcome:
        return EpisodeOutcome(
            task=task, status=self.status, success=self.success, score=self.score,
            steps=self.steps, success_step=self.steps if self.success else None,
            final_observation=self.observation, trajectory=tuple(self.trajectory),
            explore_steps=self.explore_steps, error=error, extra=dict(self.extra))


class _BudgetEnd(Exception):
    """The step budget ran out while the harness replayed actions for a method's restore."""


class _Returns:
    """`tools.snapshot/restore` for methods that return to earlier states (needs.restore):
    the env's native restore when it has one (no step), else reset and replay, whose actions
    are steps of the episode like any other (budget, trajectory)."""

    def __init__(self, env: Any, episode: "_Episode", play: Callable[[str], Any]) -> None:
        self.env = env
        self.episode = episode
        self.play = play
        self.native = callable(getattr(env, "snapshot", None)) and \
            callable(getattr(env, "restore", None))
        self.actions: list[str] = []
        self.branch_over = False  # the last step ended the game without success
        self.replay_ended = False  # a restore's replay ended the game (it reached the goal)
        self.restores = 0
        self.replayed = 0

    def snapshot(self) -> ExplorationSnapshot:
        return ExplorationSnapshot(tuple(self.actions), self.env.snapshot() if self.native else None)

    def restore(self, snapshot: ExplorationSnapshot) -> Observation:
        if not isinstance(snapshot, ExplorationSnapshot):
            raise TypeError(f"restore() takes what snapshot() returned, not "
                            f"{type(snapshot).__name__}")
        self.restores += 1
        self.branch_over = False
        if self.native:
            observation = self.env.restore(snapshot.native)
            self.actions = list(snapshot.actions)
        else:
            observation = self.env.reset()
            self.actions = []
        self.episode.observation = observation
        self.episode.trajectory.append(TrajectoryStep(observation.text))  # no action: a return
        if not self.native:
            for action in snapshot.actions:
                ended = self.play(action)  # raises _BudgetEnd when no step is left
                self.replayed += 1
                if ended:
                    self.replay_ended = not self.branch_over
                    break
        return self.episode.observation


def play_episode(benchmark: Benchmark, instance: Instance, method: Method, task: TaskInfo,
                 timeout_s: float, teacher: Any = None,
                 before_act: Optional[Callable[[Optional[int]], None]] = None,
                 take_reasoning: Optional[Callable[[], str]] = None) -> EpisodeOutcome:
    """Play one episode of `method` on `instance`. `teacher` (the stream's teacher service)
    is bound to this episode's env and the actions played, for the method to ask;
    `before_act` is told the steps played before each `act` (and None before `end_episode`);
    `take_reasoning` gives the model's reasoning since it was last asked, kept beside the
    action it led to.

    A prompt over the model's context window (`ContextOverflow`) ends the episode as played
    so far, status `context_overflow`: the method's failure, not retried. The method still
    hears how it ended (`end_episode`); if that overflows too, its memory stays as it was."""
    started = time.monotonic()
    deadline = started + timeout_s
    episode = _Episode()
    env = None
    side = "env"
    returns: Optional[_Returns] = None

    reasoning: list[Optional[str]] = [None]  # of the act whose action is played next

    def play(action: str) -> bool:
        """Send one action to the env; True when it ends the episode (or, for a method
        that returns to states, the branch)."""
        if episode.steps >= task.budget_steps:
            raise _BudgetEnd()
        step, used = step_counted(env, action, task.budget_steps - episode.steps)
        episode.steps += used
        played.append(action)
        episode.observation = step.observation
        if not math.isfinite(float(step.score)):
            raise EnvError(f"the environment returned the score {step.score!r}")
        episode.success, episode.score = bool(step.success), float(step.score)
        episode.trajectory.append(TrajectoryStep(step.observation.text, action, step.reward,
                                                 reasoning[0] or None))
        reasoning[0] = None
        if returns is not None:
            returns.actions.append(action)
            returns.branch_over = bool(step.done and not step.success)
        return bool(step.done)

    try:
        try:
            env = benchmark.make_env(instance, task.seed)
            oracle = benchmark.oracle(env) if method.needs.oracle else None
            played = teacher.bind(env).played if teacher is not None else []
            sample = getattr(env, "sample_action", None) or sample_fallback(env)
            if method.needs.restore:
                returns = _Returns(env, episode, play)
            tools = EpisodeTools(valid_actions=env.valid_actions, sample_action=sample,
                                 query=getattr(env, "query", None) or no_queries, oracle=oracle,
                                 render=getattr(env, "render", None) or _no_image,
                                 snapshot=returns.snapshot if returns else None,
                                 restore=returns.restore if returns else None,
                                 branch_over=(lambda: returns.branch_over) if returns else None)
            side = "method"
            episode.explore_steps = _explore(benchmark, instance, method, task)
            method.begin_episode(task, tools)
            side = "env"
            episode.observation = env.reset()
            episode.trajectory.append(TrajectoryStep(episode.observation.text))
            while True:
                if episode.steps >= task.budget_steps:
                    episode.status = Status.BUDGET_EXHAUSTED
                    break
                if time.monotonic() > deadline:
                    raise Failure(Status.TIMEOUT, f"episode exceeded --timeout {timeout_s:g}s")
                side = "method"
                if before_act is not None:
                    before_act(episode.steps)
                if take_reasoning is not None:
                    take_reasoning()  # what came before this act is not its reasoning
                try:
                    action = method.act(episode.observation)
                except EndEpisode:
                    episode.status = Status.OK  # the method's own end, said in its extra
                    break
                except _BudgetEnd:  # its restore's replay used the last steps
                    episode.status = Status.BUDGET_EXHAUSTED
                    break
                except ContextOverflow as exc:
                    episode.status, episode.error = Status.CONTEXT_OVERFLOW, str(exc)
                    break
                if take_reasoning is not None:
                    reasoning[0] = take_reasoning()
                if not isinstance(action, str):
                    raise TypeError(f"act() returned {type(action).__name__}, not str")
                if returns is not None and returns.branch_over:
                    episode.status = Status.OK  # the game was lost and the method went on
                    break
                if returns is not None and returns.replay_ended:  # it reached the goal again
                    episode.status = Status.OK
                    break
                side = "env"
                try:
                    ended = play(action)
                except _BudgetEnd:
                    episode.status = Status.BUDGET_EXHAUSTED
                    break
                if ended and (returns is None or not returns.branch_over):
                    episode.status = Status.OK
                    break
            if returns is not None:
                episode.extra.update(restores=returns.restores, replayed_steps=returns.replayed)
            episode_extra = getattr(env, "episode_extra", None)
            if episode_extra:
                episode.extra.update(episode_extra())
            side = "method"
            if before_act is not None:
                before_act(None)
            try:
                method.end_episode(episode.outcome(task, error=episode.error))
            except ContextOverflow as exc:  # its reflection, say, outgrew the window too
                if episode.status is not Status.CONTEXT_OVERFLOW:
                    episode.status, episode.error = Status.CONTEXT_OVERFLOW, str(exc)
            episode.extra.update(method.episode_extra())
            outcome = episode.outcome(task, error=episode.error)
        except (Failure, UserError):
            raise  # a UserError is no episode's failure: the run stops (see run_unit)
        except Exception as exc:
            raise classify_failure(exc, side) from exc
    except Failure as failure:
        episode.status = failure.status
        episode.success, episode.score = False, 0.0
        outcome = episode.outcome(task, error=failure.error)
    finally:
        if teacher is not None:
            teacher.unbind()
        if env is not None:
            try:
                env.close()
            except Exception:  # a failing close must not hide the episode's result
                pass
    return dataclasses.replace(outcome, wall_s=time.monotonic() - started)
