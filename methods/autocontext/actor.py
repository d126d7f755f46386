"""The Actor (AutoContext, Section 4.3): runs a TODO path on the exploration env.

It goes back to the deepest point of the path it has a snapshot of (the env restores it
natively, or resets and replays the actions that led there, which count as steps), then
plays the path's remaining actions (action mode) or hands each remaining sub-task to a
ReAct-style sub-agent and has its outcome summarised (agent mode). Every node gets its key
result and the snapshot after it. Running out of the exploration budget ends the path and
is remembered, so the loop can extract what was seen and stop.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable

from lifebench.api import (ChatModel, ContextSchema, ExplorationBudgetExhausted, Prompt,
                           RoleParams, fixed, mark_history, split_history)

from lifebench.methods.autocontext import prompts
from lifebench.methods.autocontext.forest import FAILED, Node, State, TodoForest, TodoPath
from lifebench.methods.autocontext.replies import is_none, tag

def key_result(observation: str, limit: int) -> str:
    """An observation as a node's key result: one line, at most `limit` characters."""
    text = " ".join(observation.split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


@dataclass
class Segment:
    """What one TODO's run showed: where it started and each (action, observation)."""

    start: str
    start_observation: str
    steps: list[tuple[str, str]] = field(default_factory=list)

    def text(self, limit: int) -> Prompt:
        lines = [f"[from state {self.start}] {self.start_observation.strip()}"]
        for action, observation in self.steps:
            lines.append(f"> {action}\n{observation.strip()}")
        return steps_as_history("\n".join(lines)[-limit:])


def steps_as_history(text: str) -> Prompt:
    """A trajectory's text as prompt parts: where it starts, then each `> action` step, all
    but the last step history, so a small context window drops the oldest steps first."""
    return split_history(text, r"\n> ")


def joined(segments: list[Segment], limit: int) -> Prompt:
    """The segments as the Extractor reads them: each cut to its share of `limit` (keeping
    its end), so a long one never pushes out the others (the Observations TODO's, which
    runs first)."""
    share = max(1, limit // max(1, len(segments)))
    parts = []
    for i, segment in enumerate(segments):
        parts += [fixed("\n\n")] if i else []
        parts += segment.text(share).parts
    return Prompt(parts)


class Actor:
    def __init__(self, env: Any, schema: ContextSchema, forest: TodoForest, llm: ChatModel,
                 params: RoleParams, background: str, config: Any) -> None:
        self.env = env
        self.schema = schema
        self.forest = forest
        self.llm = llm
        self.params = params
        self.background = background
        self.config = config
        self.exhausted = False
        self.subtasks = 0

    def run(self, path: TodoPath) -> Segment:
        start, nodes = self._start(path)
        observation = self.env.restore(start.snapshot).text
        segment = Segment(path.state.name, observation)
        try:
            for i, node in enumerate(nodes):
                ended = self._subtask(node, segment) if self.forest.agent_mode \
                    else self._action(node, segment)
                if ended:  # the rest of the path cannot run: it leaves the forest unseen
                    self.forest.prune(nodes[i + 1:])
                    break
        except ExplorationBudgetExhausted:
            self.exhausted = True
        return segment

    def random_walk(self, state: State, length: int, sample: Callable[[random.Random], str],
                    rng: random.Random) -> Segment:
        """The ablation without a Planner: `length` actions drawn from the env's valid
        actions, from `state`; they join the forest like planned ones."""
        segment = Segment(state.name, self.env.restore(state.snapshot).text)
        node = state.root
        try:
            for _ in range(length):
                action = sample(rng)
                child = node.child(action)
                if child is None:
                    child = Node(action)
                    node.children.append(child)
                node = child
                if self._action(node, segment):
                    break
        except ExplorationBudgetExhausted:
            self.exhausted = True
        return segment

    def _start(self, path: TodoPath) -> tuple[Any, tuple[Node, ...]]:
        """The deepest run node of the path with a snapshot (or the state) and the nodes
        after it."""
        start: Any = path.state
        rest = path.nodes
        for i, node in enumerate(path.nodes):
            if node.result is None or node.snapshot is None or node.failed or node.ended:
                break
            start, rest = node, path.nodes[i + 1:]
        return start, rest

    def _action(self, node: Node, segment: Segment) -> bool:
        step = self.env.step(node.action)
        text = step.observation.text
        segment.steps.append((node.action, text))
        if node.result is None:
            node.failed = self.schema.is_failure(text)
            node.result = FAILED if node.failed else key_result(text, self.config.key_result_chars)
        node.ended = node.ended or step.done
        node.snapshot = self.env.snapshot()
        return step.done

    def _subtask(self, node: Node, segment: Segment) -> bool:
        """Agent mode: a sub-agent plays up to `subagent_steps` actions for the node's
        sub-task; an LLM call summarises the outcome into the key result."""
        self.subtasks += 1
        system = prompts.SUBAGENT.format(background=self.background, subtask=node.action)
        turns: list[tuple[str, str]] = []
        last = segment.steps[-1][1] if segment.steps else segment.start_observation
        done = False
        try:
            for _ in range(self.config.subagent_steps):
                recent = [{"role": role, "content": text if role == "assistant" else f"Observation:\n{text}"}
                          for reply, observation in turns[-self.config.subagent_history:]
                          for role, text in (("assistant", reply), ("user", observation))]
                # the sub-task and the latest turn stay; earlier turns are history the
                # context window may drop (lifebench.api.prompt)
                messages = [{"role": "system", "content": system},
                            {"role": "user", "content": f"Observation:\n{last}"},
                            *mark_history(recent, keep_last=2)]
                reply = self.llm.chat(messages, role="actor", params=self.params).text
                action = tag(reply, "action") or (reply.strip().splitlines() or ["noop"])[-1]
                step = self.env.step(action.strip())
                last = step.observation.text
                turns.append((reply, last))
                segment.steps.append((action.strip(), last))
                if step.done:
                    done = True
                    break
        finally:  # a budget that runs out mid-task still leaves its summary
            played = "\n".join(f"> {a}\n{o.strip()}" for a, o in segment.steps[-len(turns):]) \
                if turns else "(no action was played)"
            reply = self.llm.chat([{"role": "user", "content": prompts.SUMMARISE_SUBTASK.format(
                subtask=node.action, trajectory=played[-self.config.trajectory_chars:])}],
                role="summarise", params=self.params).text
            summary = tag(reply, "key_result") or key_result(reply, self.config.key_result_chars)
            achieved = tag(reply, "achieved")
            node.failed = not is_none(achieved) and achieved.lower().startswith("no")
            node.result = key_result(summary, self.config.key_result_chars)
            node.ended = done
            node.snapshot = self.env.snapshot()
        return done

