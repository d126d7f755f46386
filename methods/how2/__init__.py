"""How² (Dagan, Keller, Lascarides: "How to learn from procedural How-to questions").

An actor plays the episode with JSON tool calls: the environment's actions, `think`, and
`read_memory(recipe)`. A read runs Algorithm 1 (`_read_memory`): the entries stored under
the query are each checked for relevance to the current state (an LLM role); the
relevant ones are returned. If there is none (a cache miss), the ask role writes a how-to
question from the agent's context, the teacher (`ctx.teacher`, in the configured style)
answers it, the parse role turns the answer into an entry (RECIPE, REQUIREMENTS,
PROCEDURE, RELATED ITEMS) whose tags are its recipe and related items, the entry is
stored under the query and every tag, and the new entry is returned. The memory lives for
the whole stream (one seed) and is saved with the method's state.

Strategies (`strategy=`, Table 1's rows): `base` (no read_memory), `just-ask` (every read
asks the teacher, nothing is stored), `memory-only` (raw answers stored, returned on an
exact match), `parse` (parsed entries and tags, no relevance check), `relevance` (raw
answers, relevance check), `how2` (parse and relevance); the ablation `ask-first` (how2,
reading the task's goal from memory before the first action of every episode). Every
strategy runs on a split in file order or in curriculum order (`val.curriculum`): the
paper's Table 1 ran in curriculum order, and how2 in file order is Table 6's
"-curriculum". `curriculum` is how2, kept as a name for older specs: it runs on
curriculum-ordered splits only.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Optional

from lifebench.api import (TEACHER_STYLES, Benchmark, EpisodeOutcome, EpisodeTools, Method,
                           MethodNeeds, Observation, RoleParams, StreamContext, TaskInfo,
                           config_setting, curriculum_split, is_curriculum_split, mark_groups)
from lifebench.methods.how2 import prompts, scripted
from lifebench.methods.how2.memory import Entry, Memory, normalise, parsed_entry
from lifebench.methods.how2.analysis import appendix_tables
from lifebench.methods.how2.reporting import how2_tables
from lifebench.methods.how2.strategies import FLAGS, STRATEGIES
from lifebench.methods.how2.tools import ToolSet


@dataclass(frozen=True)
class How2Config:
    strategy: str = "how2"
    teacher: str = "executable"
    actor_temperature: float = 0.6   # the paper's actor temperature
    role_temperature: float = 0.2    # relevance, ask, parse and the LLM teacher
    # Tokens per reply (None: no cap, for reasoning models such as the paper's Qwen 3).
    max_tokens: Optional[int] = 512
    think: bool = True               # the `think` tool (the paper drops it for Qwen 3)
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
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError("max_tokens must be at least 1, or none")


def is_yes(text: str) -> bool:
    words = re.findall(r"[a-z]+", text.lower())
    return bool(words) and words[0] == "yes"


class How2Method(Method):
    name = "how2"
    version = "3"  # bump when a change alters what it does (lifebench.api.Method.version)
    Config = How2Config
    needs = MethodNeeds(llm=True, teacher=True, tools=True)
    context_use = ("after the manual (on Plancraft, after Figure 10's prompt) in the actor's and "
                   "the memory roles' system messages")
    tables = (how2_tables, appendix_tables)
    # The scripted model's reply for each of How²'s roles (`scripted.py`).
    scripted_reply = classmethod(lambda cls, request: scripted.scripted_reply(request))

    @classmethod
    def stream_problem(cls, config: How2Config, benchmark: Benchmark, split: str) -> Optional[str]:
        if config.strategy == "base" and config.teacher != How2Config.teacher:
            return "the base strategy asks no teacher: it runs once, with the default teacher"
        # `curriculum` is how2 on a curriculum-ordered split (kept so older specs still run);
        # every strategy runs in either order.
        if config.strategy == "curriculum" and not is_curriculum_split(split):
            curriculum = curriculum_split(split)
            hint = (f"use --split {curriculum}" if benchmark.has_split(curriculum)
                    else f"{benchmark.name} has no curriculum-ordered splits")
            return f"the curriculum strategy runs on a curriculum-ordered split: {hint}"
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
        self.tools = self.toolset.schemas(with_memory=self.flags.read_memory, with_think=c.think)
        self.memory = Memory()

    # -- the episode
    def begin_episode(self, task: TaskInfo, tools: EpisodeTools) -> None:
        self.task = task
        self.env_tools = tools
        self.first: Optional[str] = None
        self.context = ""  # the last real observation of the state, for the roles
        self.noop_pending = False
        self.turns: list[list[dict[str, Any]]] = []  # message groups, oldest first
        self.pending_call: Optional[str] = None  # id of the env call awaiting its observation
        self.call_number = 0
        self.env_steps = 0
        self.stats = {"cache_misses": 0, "memory_reads": 0, "memory_hits": 0,
                      "relevance_rejected": 0, "stored": 0, "invalid_tool_calls": 0,
                      "forced_noops": 0, "think_calls": 0, "first_read_memory": None}
        self.system, self.memory_system = self.toolset.system_prompts(
            task.manual(), task.context.prompt_block() if task.context else "")

    def act(self, observation: Observation) -> str:
        shown = self.toolset.present(observation.text)
        self._see(observation)
        if self.first is None:
            self.first = shown
            if self.flags.ask_first:
                goal = self._goal_query()
                self._record_call("read_memory", {self.toolset.memory_argument: goal},
                                  self._read_memory(goal))
        elif self.pending_call is not None:
            self.turns[-1].append({"role": "tool", "tool_call_id": self.pending_call,
                                   "content": shown})
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
            elif call.name == "think" and self.config.think:
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
                self.noop_pending = True
                return self.task.noop_action

    def end_episode(self, outcome: EpisodeOutcome) -> None:
        self.pending_call = None

    def episode_extra(self) -> dict[str, Any]:
        stats = dict(self.stats)
        return {**stats, "intervention": stats["cache_misses"] > 0,
                "memory_entries": len(self.memory), "how2_strategy": self.config.strategy,
                # the rest of its configuration (tables keep configurations apart by it)
                "how2_setting": config_setting(self.config, ("strategy", "teacher")),
                "how2_teacher": self.config.teacher,
                # what each answer was for: the item asked about, or the task (benchmarks
                # whose teacher plans whole tasks, or a query that names no item)
                "teacher_answered_for": self.ctx.teacher.answered_for,
                # what each answer said: a plan, already there, not possible
                "teacher_answer_kinds": self.ctx.teacher.answer_kinds}

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
        if relevant:  # line 18: the relevant memories
            self.stats["memory_hits"] += 1
            return prompts.MEMORY_HIT.format(recipe=query, count=len(relevant),
                                             plural="y" if len(relevant) == 1 else "ies",
                                             entries="\n\n".join(e.text for e in relevant))
        # a cache miss (lines 10-16): ask, answer, parse, store, return the new entry
        self.stats["cache_misses"] += 1
        question = self._ask(query)
        # r = T(o_t, q): the teacher answers the question asked, about the queried recipe
        answer = self.toolset.present(self.ctx.teacher.ask(
            question, self.config.teacher, params=self.role_params, item=query))
        text, tags = self._parse(query, question, answer) if flags.parse else (answer, ())
        if flags.store:
            entry = Entry(text=text, question=question, query=normalise(query), tags=tags,
                          episode_index=self.task.episode_index)
            if self.memory.store(entry):
                self.stats["stored"] += 1
        if flags.parse:  # the actor sees the answer and the entry made of it (Fig. 24)
            return prompts.MEMORY_MISS_PARSED.format(recipe=query, question=question,
                                                     answer=answer, parsed=text)
        return prompts.MEMORY_MISS.format(recipe=query, question=question, answer=text)

    def _relevant(self, entry: Entry, query: str) -> bool:
        return is_yes(self._role("relevance", prompts.RELEVANCE.format(
            context=self.context, recipe=query, memory=entry.text)))

    def _ask(self, query: str) -> str:
        reply = self._role("ask", prompts.ASK.format(context=self.context, recipe=query))
        return reply.strip() or f"How do I make {query}?"

    def _parse(self, query: str, question: str, answer: str) -> tuple[str, tuple[str, ...]]:
        text, tags = parsed_entry(self._role("parse", prompts.PARSE.format(
            recipe=query, context=self.context, question=question, answer=answer)))
        return (text or answer), tags

    def _role(self, role: str, user: str) -> str:
        """One call of a memory role: the main system prompt with the memory block."""
        return self.ctx.llm.chat([{"role": "system", "content": self.memory_system},
                                  {"role": "user", "content": user}], role=role,
                                 params=self.role_params).text

    # -- helpers
    def _see(self, observation: Observation) -> None:
        """Keep the roles' context: the state as the environment describes it for free
        (`state` query), else the last observation that followed a real action (not the
        forced no-op)."""
        try:
            self.context = self.toolset.present(self.env_tools.query("state"))
        except ValueError:
            if not self.noop_pending or not self.context:
                self.context = self.toolset.present(observation.text)
        self.noop_pending = False

    def _goal_query(self) -> str:
        target = self.task.instance.metadata.get("target")
        return str(target) if target else self.task.instance.instance_id

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
        # each turn (a call and its result, a reply and its feedback) is a history item; the
        # latest stays (lifebench.api.prompt)
        return [{"role": "system", "content": self.system},
                {"role": "user", "content": self.first or ""},
                *mark_groups(self.turns[-self.config.history:])]
