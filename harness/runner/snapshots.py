"""Snapshots of an env's state for methods that branch (IGE, AutoContext).

An env that implements `snapshot()/restore()` is used as is; any other env gets the
generic fallback: a snapshot is the action prefix, and restoring resets and replays it.
"""

from __future__ import annotations

from typing import Any

from lifebench.api.records import Observation, Step


class ReplaySnapshots:
    """Wraps an env without native snapshots; records the actions since reset."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.actions: list[str] = []

    def reset(self) -> Observation:
        self.actions = []
        return self.env.reset()

    def step(self, action: str) -> Step:
        step = self.env.step(action)
        self.actions.append(action)
        return step

    def snapshot(self) -> tuple[str, ...]:
        return tuple(self.actions)

    def restore(self, snapshot: tuple[str, ...]) -> Observation:
        observation = self.reset()
        for action in snapshot:
            observation = self.step(action).observation
        return observation

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)


def with_snapshots(env: Any) -> Any:
    """The env itself when it can snapshot natively, else a reset-and-replay wrapper."""
    if callable(getattr(env, "snapshot", None)) and callable(getattr(env, "restore", None)):
        return env
    return ReplaySnapshots(env)
