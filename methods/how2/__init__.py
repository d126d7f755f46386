"""How² (Dagan, Keller, Lascarides: "How to learn from procedural How-to questions").

An actor plays the episode with JSON tool calls: the environment's actions, `think`, and
`read_memory(query)`. A read goes through the memory of Algorithm 1 (`_read_memory`):
entries stored under the query are checked for relevance to the current state (an LLM
role); if none is relevant, or none was found (a cache miss), an ask role writes a how-to
question from the observation, the teacher (`ctx.teacher`, in the configured style)
answers it, a parse role abstracts the answer from the current state and returns tags, and
the entry is stored under the query and every tag. On a miss the actor is given the
teacher's answer itself (it fits the current state); what is stored for later is the
parsed, reusable advice. The memory lives for the whole stream (one seed) and is saved
with the method's state.

Strategies (`strategy=`): `base` (no read_memory), `just-ask` (every read asks the teacher,
nothing is stored), `memory-only` (raw answers stored and returned on exact match, no
relevance check, no parse), `parse` (parsed advice and tags, no relevance check),
`relevance` (raw answers, relevance check), `how2` (parse and relevance); ablations
`curriculum` (how2 on a split ordered by recipe dependencies) and `ask-first` (how2, with
the task's goal read from memory before the first action of every episode).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Optional

from lifebench.api import (TEACHER_STYLES, Benchmark, EpisodeOutcome, EpisodeTools, Method,
                           MethodNeeds, Observation, RoleParams, StreamContext, TaskInfo,
                           curriculum_split, is_curriculum_split)
from lifebench.methods.how2 import prompts
from lifebench.methods.how2.memory import Entry, Memory, normalise
from lifebench.methods.how2.reporting import how2_tables
from lifebench.methods.how2.strategies import FLAGS, STRATEGIES
from lifebench.methods.how2.tools import ToolSet

@dataclass(frozen=True)
class How2Config:
    strategy: str = "how2"
    teacher: str = "executable"
    actor_temperature: float = 0.6   # the paper's actor temperature
    role_temperature: float = 0.2    # relevance, ask, parse and the LLM teacher
    max_tokens: int = 512
    max_non_env: int = 3             # non-environment calls in a row before a forced no-op
    tool_retries: int = 2            # invalid calls answered with feedback before a no-op
    history: int = 30                # turns of the episode kept in the prompt
    llm_seed: Optional[int] = None

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy {self.strategy!r}: choose from {', '.join(STRATEGIES)}")
        if self.teacher not in TEACHER_STYLES:
            raise ValueError(f"teacher {self.teacher!r}: choose from {', '.join(TEACHER_STYLES)}")
        if self.max_non_env < 1 or self.tool_retries < 0 or self.history < 1:
            raise ValueError("max_non_env and history must be >= 1, tool_retries >= 0")


_JSON_OBJECT = re.compile(r"\{.*\}", re.S)


def parse_advice(text: str) -> tuple[str, tuple[str, ...]]:
    """The parse role's reply: (advice, tags). A reply that is not the asked-for JSON is
    taken whole as the advice, without tags."""
    match = _JSON_OBJECT.search(text)
    if match:
        try:
            data = json.loads(match.group(0))
            advice = str(data.get("advice") or "").strip()
            tags = data.get("tags") or []
            if advice and isinstance(tags, list):
                return advice, tuple(t for t in (normalise(str(x)) for x in tags) if t)
        except (ValueError, AttributeError):
            pass
    return text.strip(), ()


def is_yes(text: str) -> bool:
    words = re.findall(r"[a-z]+", text.lower())
    return bool(words) and words[0] == "yes"


class How2Method(Method):
    name = "how2"
    Config = How2Config
    needs = MethodNeeds(llm=True, teacher=True)
    tables = (how2_tables,)

    @classmethod
    def stream_problem(cls, config: How2Config, benchmark: Benchmark, split: str) -> Optional[str]:
        if config.strategy == "base" and config.teacher != How2Config.teacher:
            return "the base strategy asks no teacher: it runs once, with the default teacher"
        ordered = is_curriculum_split(split)
        if config.strategy == "curriculum" and not ordered:
            curriculum = curriculum_split(split)
            hint = (f"use --split {curriculum}" if benchmark.has_split(curriculum)
                    else f"{benchmark.name} has no curriculum-ordered splits")
            return f"the curriculum strategy runs on a curriculum-ordered split: {hint}"
        if ordered and config.strategy != "curriculum":
            return "curriculum-ordered splits are for the curriculum strategy"
        return None

    def setup(self, ctx: StreamContext) -> None:
        super().setup(ctx)
        c = self.config
        self.flags = FLAGS[c.strategy]
        self.actor_params = RoleParams(temperature=c.actor_temperature, max_tokens=c.max_tokens,
                                       seed=c.llm_seed)
        # relevance, ask, parse and the LLM teacher
        self.role_params = RoleParams(temperature=c.role_temperature, max_tokens=c.max_tokens,
                                      seed=c.llm_seed)
        self.toolset = ToolSet.for_benchmark(ctx.benchmark.name)
        self.tools = self.toolset.schemas(with_memory=self.flags.read_memory)
        self.memory = Memory()

    # -- the episode
    def begin_episode(self, task: TaskInfo, tools: EpisodeTools) -> None:
        self.task = task
        self.first: Optional[str] = None
        self.turns: list[list[dict[str, Any]]] = []  # message groups, oldest first
        self.pending_call: Optional[str] = None  # id of the env call awaiting its observation
        self.call_number = 0
        self.env_steps = 0
        self.stats = {"cache_misses": 0, "memory_reads": 0, "memory_hits": 0,
                      "relevance_rejected": 0, "stored": 0, "invalid_tool_calls": 0,
                      "forced_noops": 0, "think_calls": 0, "first_read_memory": None}
        memory_note = prompts.MEMORY_NOTE.format(query_kind=self.toolset.query_kind) \
            if self.flags.read_memory else ""
        self.system = "\n\n".join([task.instructions.strip(), prompts.ACTOR.format(
            env_tools=", ".join(f"`{n}`" for n in self.toolset.env_names),
            memory_note=memory_note, max_non_env=self.config.max_non_env)])
        self.observation: Optional[Observation] = None

    def act(self, observation: Observation) -> str:
        self.observation = observation
        if self.first is None:
            self.first = observation.text
            if self.flags.ask_first:
                goal = self._goal_query()
                self._record_call("read_memory", {self.toolset.memory_argument: goal},
                                  self._read_memory(goal))
        elif self.pending_call is not None:
            self.turns[-1].append({"role": "tool", "tool_call_id": self.pending_call,
                                   "content": observation.text})
            self.pending_call = None
        non_env = invalid = 0
        while True:
            reply = self.ctx.llm.chat(self._messages(), role="actor", tools=self.tools,
                                      params=self.actor_params)
            call = reply.tool_calls[0] if reply.tool_calls else None
            if call is None:
                invalid += 1
                self.stats["invalid_tool_calls"] += 1
                self._feedback(reply.text, "the reply had no tool call")
            elif call.name in self.toolset.env_names:
                action, problem = self.toolset.env_action(call.name, call.arguments)
                if action is not None:
                    self.pending_call = self._record_call(call.name, call.arguments, None)
                    self.env_steps += 1
                    return action
                invalid += 1
                self.stats["invalid_tool_calls"] += 1
                self._record_call(call.name, call.arguments, prompts.INVALID_CALL.format(
                    problem=problem, tools=self._tool_names()))
            elif call.name == "think":
                non_env += 1
                self.stats["think_calls"] += 1
                self._record_call(call.name, call.arguments, "Ok")
            elif call.name == "read_memory" and self.flags.read_memory:
                non_env += 1
                query = str(call.arguments.get(self.toolset.memory_argument)
                            or next(iter(call.arguments.values()), "")).strip()
                result = self._read_memory(query) if query else prompts.INVALID_CALL.format(
                    problem=f"read_memory needs a {self.toolset.memory_argument}",
                    tools=self._tool_names())
                self._record_call(call.name, call.arguments, result)
            else:
                invalid += 1
                self.stats["invalid_tool_calls"] += 1
                self._record_call(call.name, call.arguments, prompts.INVALID_CALL.format(
                    problem=f"unknown tool {call.name!r}", tools=self._tool_names()))
            if non_env >= self.config.max_non_env or invalid > self.config.tool_retries:
                self.stats["forced_noops"] += 1
                self.turns.append([{"role": "user", "content": prompts.NO_OP_NOTE.format(
                    max_non_env=self.config.max_non_env)}])
                self.env_steps += 1
                return self.task.noop_action

    def end_episode(self, outcome: EpisodeOutcome) -> None:
        self.pending_call = None

    def episode_extra(self) -> dict[str, Any]:
        stats = dict(self.stats)
        return {**stats, "intervention": stats["cache_misses"] > 0,
                "memory_entries": len(self.memory), "how2_strategy": self.config.strategy,
                "how2_teacher": self.config.teacher}

    def state(self) -> Any:
        return {"memory": self.memory.to_json()}

    def load_state(self, state: Any) -> None:
        self.memory = Memory.from_json(state["memory"])

    # -- Algorithm 1
    def _read_memory(self, query: str) -> str:
        self.stats["memory_reads"] += 1
        if self.stats["first_read_memory"] is None:
            self.stats["first_read_memory"] = self.env_steps
        flags = self.flags
        found = self.memory.lookup(query) if flags.store else []
        relevant = [e for e in found if self._relevant(e, query)] if flags.relevance else found
        self.stats["relevance_rejected"] += len(found) - len(relevant)
        if relevant:
            self.stats["memory_hits"] += 1
            shown = "\n".join(f"- {e.text}" for e in relevant)
            return prompts.MEMORY_HIT.format(count=len(relevant),
                                             plural="y" if len(relevant) == 1 else "ies",
                                             entries=shown)
        # a cache miss: ask the teacher
        self.stats["cache_misses"] += 1
        question = self._ask(query)
        answer = self.ctx.teacher.ask(question, self.config.teacher, params=self.role_params)
        if flags.store:
            text, tags = self._parse(question, answer) if flags.parse else (answer, ())
            entry = Entry(text=text, question=question, query=normalise(query), tags=tags,
                          episode_index=self.task.episode_index)
            if self.memory.store(entry):
                self.stats["stored"] += 1
        return prompts.TEACHER_ANSWER.format(answer=answer)

    def _relevant(self, entry: Entry, query: str) -> bool:
        reply = self.ctx.llm.chat([
            {"role": "system", "content": prompts.RELEVANCE},
            {"role": "user", "content": prompts.RELEVANCE_USER.format(
                observation=self._state_text(), query=query, question=entry.question,
                entry=entry.text)}], role="relevance",
            params=self.role_params)
        return is_yes(reply.text)

    def _ask(self, query: str) -> str:
        reply = self.ctx.llm.chat([
            {"role": "system", "content": prompts.ASK},
            {"role": "user", "content": prompts.ASK_USER.format(
                observation=self._state_text(), query=query)}], role="ask",
            params=self.role_params)
        return reply.text.strip() or f"How do I get {query}?"

    def _parse(self, question: str, answer: str) -> tuple[str, tuple[str, ...]]:
        reply = self.ctx.llm.chat([
            {"role": "system", "content": prompts.PARSE},
            {"role": "user", "content": prompts.PARSE_USER.format(
                observation=self._state_text(), question=question, answer=answer)}], role="parse",
            params=self.role_params)
        return parse_advice(reply.text)

    # -- helpers
    def _goal_query(self) -> str:
        target = self.task.instance.metadata.get("target")
        return str(target) if target else self.task.instance.instance_id

    def _state_text(self) -> str:
        return self.observation.text if self.observation is not None else (self.first or "")

    def _tool_names(self) -> str:
        return ", ".join(t["function"]["name"] for t in self.tools)

    def _record_call(self, name: str, arguments: dict[str, Any], result: Optional[str]) -> str:
        """Append an assistant tool call (and its result, when known); returns its id.
        Ids are ours, numbered per episode, so prompts (and cache keys) do not depend on
        what ids a server made up."""
        self.call_number += 1
        call_id = f"call_{self.call_number}"
        group: list[dict[str, Any]] = [{"role": "assistant", "content": None, "tool_calls": [{
            "id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments, sort_keys=True)}}]}]
        if result is not None:
            group.append({"role": "tool", "tool_call_id": call_id, "content": result})
        self.turns.append(group)
        return call_id

    def _feedback(self, text: str, problem: str) -> None:
        self.turns.append([{"role": "assistant", "content": text or "(empty reply)"},
                           {"role": "user", "content": prompts.INVALID_CALL.format(
                               problem=problem, tools=self._tool_names())}])

    def _messages(self) -> list[dict[str, Any]]:
        messages = [{"role": "system", "content": self.system},
                    {"role": "user", "content": self.first or ""}]
        for group in self.turns[-self.config.history:]:
            messages.extend(group)
        return messages
