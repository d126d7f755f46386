"""ReAct (Yao et al. 2023): the model writes a thought and an action on every turn; the
action goes to the environment, the observation comes back.

As in the paper's ALFWorld and WebShop setups, thoughts do not reach the environment: one
LLM call gives a thought and an action, and only the action is played (it costs a step).
The prompt is one design for every benchmark (`prompts.py`): the benchmark's own manual,
the reply format, few-shot examples, then the episode. Examples are generated, never
copied from a paper: the benchmark's oracle played on its support split (for ALFWorld, of
the same task type as the episode's, as ReAct used per-type examples), rendered as
observation/action transcripts. Benchmarks without a support split or an oracle run
zero-shot. The episode's history is bounded to the last `history` turns (the first
observation, which states the task, is always kept); `history = 0` keeps the whole episode,
fitted to the model's context window by the harness (its oldest middle turns dropped first),
as IGE's authors' baselines sent the whole trajectory at every step. A reply without an action line gets
feedback and is asked again, up to `format_retries` times, without costing a step; after
that the reply's last line is played as it is.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Optional

from lifebench.api import (ChatModel, EpisodeTools, Instance, Method, MethodNeeds, Observation,
                           RoleParams, ScriptedReply, ScriptedRequest, StreamContext, TaskInfo,
                           mark_history, tag_calls)

from lifebench.methods.react import prompts, scripted
from lifebench.methods.react.examples import ExampleBank
from lifebench.methods.rollouts import Rollout, oracle_rollout, play

_ACTION = re.compile(r"^\s*(?:\d+[.)]\s*)?action\s*:\s*(.+?)\s*$", re.I | re.M)
_THOUGHT = re.compile(r"^\s*thought\s*:\s*(.+?)\s*$", re.I | re.M)


@dataclass(frozen=True)
class ReactConfig:
    examples: int = 2          # few-shot examples per episode (0: zero-shot)
    example_steps: int = 40    # longest example transcript, in actions
    history: int = 30          # turns of the episode kept in the prompt (0: every turn)
    temperature: float = 0.0
    max_tokens: int = 256
    format_retries: int = 2
    llm_seed: Optional[int] = None  # mixed with the stream's seed into each request's seed

    def __post_init__(self) -> None:
        if self.examples < 0 or self.history < 0 or self.format_retries < 0:
            raise ValueError("examples, history and format_retries must be >= 0 (history 0: "
                             "the whole episode)")


def parse_reply(text: str) -> tuple[Optional[str], Optional[str]]:
    """(thought, action) of a reply; a one-line reply without labels is an action."""
    action = _ACTION.findall(text)
    thought = _THOUGHT.findall(text)
    if action:
        return (thought[-1] if thought else None), action[-1]
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if len(lines) == 1 and not _THOUGHT.match(lines[0]):
        return None, lines[0]
    return (thought[-1] if thought else None), None


def ask_action(llm: ChatModel, messages: list[dict[str, Any]], role: str, params: RoleParams,
               retries: int, feedback: str = prompts.NO_ACTION_FEEDBACK) -> tuple[str, str, int]:
    """(thought, action, format retries) of the model's reply to `messages` ("" for no
    thought). A reply without an action line gets `feedback` and is asked again, up to
    `retries` times; after that the last reply's last line is the action, as it is."""
    reply_text = ""
    for asked in range(retries + 1):
        reply_text = llm.chat(messages, role=role, params=params).text
        thought, action = parse_reply(reply_text)
        if action:
            return thought or "", action, asked
        messages = messages + [{"role": "assistant", "content": reply_text},
                               {"role": "user", "content": feedback}]
    lines = reply_text.strip().splitlines() or ["noop"]
    return "", lines[-1].strip(), retries


def turn_messages(turns: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    """(thought, action, observation) turns as the model's replies and the observations."""
    messages = []
    for thought, action, observation in turns:
        reply = f"Thought: {thought}\nAction: {action}" if thought else f"Action: {action}"
        messages.append({"role": "assistant", "content": reply})
        messages.append({"role": "user", "content": prompts.TURN.format(observation=observation)})
    return messages


class ReactMethod(Method):
    name = "react"
    version = "1"  # bump when a change alters what it does (lifebench.api.Method.version)
    Config = ReactConfig
    needs = MethodNeeds(llm=True)
    # nothing carries across episodes (the few-shot examples are the same for every
    # stream), so no memory is saved after each one and a stream may be sharded
    stateless = True
    context_use = "after the manual in the system message"

    @classmethod
    def scripted_reply(cls, request: ScriptedRequest) -> Optional[ScriptedReply]:
        return scripted.actor_reply(request)

    def setup(self, ctx: StreamContext) -> None:
        super().setup(ctx)
        # One sampling setting for every role of the method (actor; Reflexion's reflection).
        self.params = RoleParams(temperature=self.config.temperature,
                                 max_tokens=self.config.max_tokens, seed=self.config.llm_seed)
        self.bank = ExampleBank(ctx.benchmark, self.config.example_steps)
        # the role its calls are counted under (a subclass's training episodes use others)
        self.actor_role = "actor"

    def begin_episode(self, task: TaskInfo, tools: EpisodeTools) -> None:
        self.task = task
        self.format_retries = 0  # replies asked again for want of an action line
        self.turns: list[tuple[str, str, str]] = []  # (thought, action, observation)
        self.first: Optional[str] = None
        examples = self.bank.examples(task.instance, self.config.examples)
        self.examples_shown = len(examples)  # 0: zero-shot (no oracle, or `examples=0`)
        system = "\n\n".join([task.manual().strip(), prompts.FORMAT])
        self.prefix = [{"role": "system", "content": system}]
        if examples:
            shown = "\n\n".join(prompts.EXAMPLE.format(number=i + 1, transcript=t)
                                for i, t in enumerate(examples))
            self.prefix.append({"role": "user", "content": f"{prompts.EXAMPLES_HEADER}\n\n{shown}"})
            self.prefix.append({"role": "assistant", "content": "Understood."})

    def act(self, observation: Observation) -> str:
        if self.first is None:
            self.first = observation.text
        elif self.turns:
            thought, action, _ = self.turns[-1]
            self.turns[-1] = (thought, action, observation.text)
        thought, action, retried = ask_action(self.ctx.llm, self._messages(), self.actor_role,
                                              self.params, self.config.format_retries)
        self.format_retries += retried
        self.turns.append((thought, action, ""))
        return action

    def episode_extra(self) -> dict[str, Any]:
        return {"format_retries": self.format_retries, "examples": self.examples_shown}

    def _messages(self) -> list[dict[str, Any]]:
        # the turns are history (the window drops the oldest first); the latest observation,
        # the instructions and the examples stay
        first = {"role": "user", "content": prompts.TURN.format(observation=self.first)}
        kept = self.turns[-self.config.history:] if self.config.history else self.turns
        return list(self.prefix) + mark_history([first, *turn_messages(kept)])


def react_rollout(ctx: StreamContext, config: ReactConfig, instance: Instance, split: str,
                  role: str, max_steps: Optional[int] = None) -> Rollout:
    """A plain ReAct episode on `instance` of `split` (of `ctx.benchmark`), played outside
    the scored loop (a support instance in another method's `prepare`): its calls are
    counted under `role` and name the instance (`tag_calls`, so the scripted model can
    play it); the budget is `max_steps`, else the benchmark's for the instance; the env's
    seed the stream's."""
    benchmark = ctx.benchmark
    react = ReactMethod(config)
    react.setup(ctx)
    react.actor_role = role
    steps = max_steps or benchmark.budget(instance)
    task = TaskInfo(benchmark=benchmark.name, split=split, instance=instance, seed=ctx.seed,
                    trial=0, episode_index=-1, budget_steps=steps,
                    instructions=benchmark.instructions, noop_action=benchmark.noop_action)
    tag_calls(ctx.llm, instance=instance.instance_id, split=split, step=None)
    try:
        react.begin_episode(task, _NO_TOOLS)  # ReAct asks its tools for nothing
        return play(benchmark, instance, react.act, steps, ctx.seed)
    finally:
        tag_calls(ctx.llm, instance=None, split=None)


@dataclass(frozen=True)
class SupportEpisode:
    """A support instance's winning episode, as a preparation job (`support_episode`, run
    by `run_jobs` on the run's workers): the oracle's (`react` None) or a plain ReAct
    episode's, on `benchmark` (by name; "" for the stream's)."""

    split: str
    instance: Instance
    role: str
    react: Optional[ReactConfig] = None
    max_steps: Optional[int] = None
    benchmark: str = ""


def support_episode(ctx: StreamContext, job: SupportEpisode) -> Optional[Rollout]:
    """The episode of `job` when it wins (the oracle's within the benchmark's budget; a
    ReAct episode's within `max_steps`, else the benchmark's), else None."""
    benchmark = ctx.benchmark
    if job.benchmark and job.benchmark != benchmark.name:
        if ctx.benchmark_named is None:
            raise ValueError(f"this runner cannot reach the benchmark {job.benchmark}")
        benchmark = ctx.benchmark_named(job.benchmark)
        ctx = dataclasses.replace(ctx, benchmark=benchmark)
    if job.react is None:
        return oracle_rollout(benchmark, job.instance, benchmark.budget(job.instance))
    rollout = react_rollout(ctx, job.react, job.instance, job.split, job.role, job.max_steps)
    return rollout if rollout.success else None


def _unavailable(*_: Any) -> Any:
    raise ValueError("not available in an episode played outside the scored loop")


_NO_TOOLS = EpisodeTools(valid_actions=_unavailable, sample_action=_unavailable, query=_unavailable)
