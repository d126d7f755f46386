"""Reflexion (Shinn et al., NeurIPS 2023) on top of ReAct: up to `--trials N` trials per
instance; after a failed trial the model writes a verbal reflection on it, and the next
trials of the same instance are given the last `memory` reflections (3, as in the paper's
ALFWorld setup). An instance stops at its first success, as in the paper (the protocol's
`stop_after_success`: later trials are not played), and its score is that trial's, else
the last trial's (`first_success`), never a best-of-N.

The actor is ReAct with the same prompt (`methods/react`); the reflections are placed after
the examples and before the episode. The reflection sees the episode as the actor played
it (observations and actions, the last `reflect_steps` of them; 0: every one, fitted to the
model's window by the harness, the oldest steps dropped first) and whether it ran out of
steps. Reflections are the method's memory: saved with its state (resume), kept per
instance for the whole stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from lifebench.api import (EpisodeOutcome, EvaluationProtocol, EpisodeTools, ScriptedReply, ScriptedRequest, Status,
                           TaskInfo, filled, fixed, history)

from lifebench.methods.react import ReactConfig, ReactMethod
from lifebench.methods.reflexion import prompts, scripted


@dataclass(frozen=True)
class ReflexionConfig(ReactConfig):
    memory: int = 3            # reflections given to a trial (the paper's ALFWorld setting)
    reflect_steps: int = 30    # last steps of a failed trial shown to the reflection (0: all)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.memory < 0 or self.reflect_steps < 0:
            raise ValueError("memory and reflect_steps must be >= 0 (reflect_steps 0: the whole trial)")


class ReflexionMethod(ReactMethod):
    name = "reflexion"
    version = "2"  # bump when a change alters what it does (lifebench.api.Method.version)
    # 2: stops an instance at its first success (1 played every trial)
    Config = ReflexionConfig
    stateless = False  # its reflections carry across trials

    @classmethod
    def protocol(cls, benchmark: Any) -> EvaluationProtocol:
        return EvaluationProtocol(
            trials=3, scored_trial="first_success", stop_after_success=True,
            source="AutoContext §5.1 (Reflexion limited to three trials); Reflexion stops an "
                   "instance at its first success, whose score is its score (Shinn et al. "
                   "2023, §4; its ALFWorld code ends a task's trials once it is solved)")

    @classmethod
    def scripted_reply(cls, request: ScriptedRequest) -> Optional[ScriptedReply]:
        return scripted.scripted_reply(request)

    def setup(self, ctx: Any) -> None:
        super().setup(ctx)
        self.reflections: dict[str, list[str]] = {}

    def begin_episode(self, task: TaskInfo, tools: EpisodeTools) -> None:
        super().begin_episode(task, tools)
        kept = self.reflections.get(task.instance.instance_id, [])[-self.config.memory:]
        if kept:
            listed = "\n".join(f"- {r}" for r in kept)
            self.prefix.append({"role": "user", "content": prompts.MEMORY.format(reflections=listed)})
            self.prefix.append({"role": "assistant", "content": "Understood."})

    def end_episode(self, outcome: EpisodeOutcome) -> None:
        if outcome.success:
            return
        steps = outcome.transitions[-self.config.reflect_steps:] if self.config.reflect_steps \
            else outcome.transitions
        lines = [f"Task: {self.first}"] if self.first else []
        lines += [f"> {action}\n{observation}" for action, observation in steps]
        if outcome.status is Status.BUDGET_EXHAUSTED:
            lines.append("(The attempt ran out of steps.)")
        # the task and the last step stay; earlier steps are history (lifebench.api.prompt)
        first_step = 1 if self.first else 0
        last_step = len(lines) - (2 if outcome.status is Status.BUDGET_EXHAUSTED else 1)
        texts = [line + ("\n" if i < len(lines) - 1 else "") for i, line in enumerate(lines)]
        parts = [history(t) if first_step <= i < last_step else fixed(t) for i, t in enumerate(texts)]
        reply = self.ctx.llm.chat([{"role": "user", "content": filled(prompts.REFLECT, "attempt", parts)}],
                                  role="reflection", params=self.params)
        self.reflections.setdefault(outcome.task.instance.instance_id, []).append(reply.text.strip())

    def state(self) -> Any:
        return {"reflections": self.reflections}

    def load_state(self, state: Any) -> None:
        self.reflections = {k: list(v) for k, v in (state or {}).get("reflections", {}).items()}
