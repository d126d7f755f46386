"""RAP (Kagaya et al. 2024, "Retrieval-Augmented Planning with Contextual Memory for
Multimodal LLM Agents"), text mode: a memory of successful episodes, retrieved by
similarity to the current task, plan and situation, shown to the executor as examples.

Per episode: the Reasoner writes an overall plan for the new task from the plans of the
`plan_examples` most similar remembered tasks (by task and category); the Retriever ranks
the memory by task, category and plan and cuts each of the best `act_examples` entries to
a window of `act_window` steps; the Executor writes an (optional) thought and one action
per call from the manual, those windows, the task, the plan and its last `history` steps.
When the executor writes a new thought, the Reasoner turns it into a retrieval key
(`search: <thing sought>`, matched to remembered observations, `search_examples` entries
with `search_window`; or `action: <verb>`, matched to remembered actions) and the windows
are retrieved again, centred on the best-matching step. After a successful episode the
episode (task, plan, steps with thoughts) joins the memory.

The memory starts from the winning episodes of the benchmark's support split (and of
`extra_support_split`): the oracle's rollouts, or with `support_paths=agent` plain ReAct's
successes; each with a plan derived from its actions without an LLM. Benchmarks without a
support split (or, for the oracle's, without an oracle) start empty. With
`own_memory=false` RAP's own successes do not join the memory. See README.md for what
follows the paper's code and what lifebench chose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

from lifebench.api import (Benchmark, EpisodeOutcome, EvaluationProtocol, EpisodeTools, Instance, Method, MethodNeeds,
                           Observation, RoleParams, StreamContext, TaskInfo, UserError,
                           mark_history, run_jobs, unknown_name)
from lifebench.embeddings import DEFAULT_MODEL, get_embedder

from lifebench.methods.rap import prompts, scripted
from lifebench.methods.rap.memory import (Experience, ExperienceMemory, RetrievalKey, Window,
                                          derived_plan, kept_steps, parse_key, spread)
from lifebench.methods.react import (ReactConfig, SupportEpisode, ask_action, support_episode,
                                     turn_messages)
from lifebench.methods.rollouts import Rollout

# ALFWorld's answer to an action that changed nothing; RAP's code drops such steps.
NOTHING_HAPPENS = "Nothing happens."
# Where support entries come from: the oracle's rollouts, or plain ReAct's successes.
SUPPORT_PATHS = ("oracle", "agent")
SUPPORT_ROLE = "support"  # the role of the support episodes' LLM calls (support_paths=agent)


@dataclass(frozen=True)
class RapConfig:
    plan_examples: int = 3        # plans shown to the Reasoner (RAP's code: k=3)
    act_examples: int = 4         # windows shown to the Executor (code: k=4)
    act_window: int = 10          # steps before/from the matched step (code: 20 lines = 10 steps)
    search_examples: int = 8      # ... after a `search:` key (code: k=8)
    search_window: int = 5        # ... (code: 10 lines = 5 steps)
    history: int = 5              # the episode's last steps in the prompt (code: 10 lines)
    retrieval_keys: bool = True   # re-retrieve with the Reasoner's key after each new thought
    support_memory: bool = True   # fill the memory from the support split's winning episodes
    support_paths: str = "oracle"  # whose: the oracle's rollouts | agent: plain ReAct's successes
    support_limit: Optional[int] = None  # instances per support split (None: all, as the paper)
    extra_support_split: str = ""  # a further split whose winning episodes join the memory
    # False: only the support data is in memory; RAP's own successes during the stream do
    # not join it, so every retrieval method of InstructRAG's §5.1 comparison sees the same data
    own_memory: bool = True
    dropped_observations: tuple[str, ...] = (NOTHING_HAPPENS,)  # steps left out of memory
    embedding_model: str = DEFAULT_MODEL  # the code's all-MiniLM-L6-v2
    temperature: float = 0.0
    max_tokens: int = 256
    plan_max_tokens: int = 256
    format_retries: int = 2
    llm_seed: Optional[int] = None

    def __post_init__(self) -> None:
        counts = {"plan_examples": self.plan_examples, "act_examples": self.act_examples,
                  "search_examples": self.search_examples, "format_retries": self.format_retries}
        for name, value in counts.items():
            if value < 0:
                raise ValueError(f"{name} must be >= 0, got {value}")
        positive = {"act_window": self.act_window, "search_window": self.search_window,
                    "history": self.history, "max_tokens": self.max_tokens,
                    "plan_max_tokens": self.plan_max_tokens}
        for name, value in positive.items():
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if self.support_limit is not None and self.support_limit < 0:
            raise ValueError(f"support_limit must be >= 0 or None (all), got {self.support_limit}")
        if self.support_paths not in SUPPORT_PATHS:
            raise ValueError(f"support_paths must be one of {', '.join(SUPPORT_PATHS)}, "
                             f"got {self.support_paths!r}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if self.extra_support_split != self.extra_support_split.strip():
            raise ValueError(f"extra_support_split {self.extra_support_split!r} has "
                             f"surrounding spaces")


class RapMethod(Method):
    name = "rap"
    # 2: its support episodes count a Crafter `move to` by its moves, as the runner does
    version = "2"  # bump when a change alters what it does (lifebench.api.Method.version)
    Config = RapConfig
    needs = MethodNeeds(llm=True, support=True)
    context_use = "after the manual in the planner's and the actor's system messages"
    # the scripted model's reply for each role (`lifebench.api.scripted`)
    scripted_reply = classmethod(lambda cls, request: scripted.scripted_reply(request))

    @classmethod
    def protocol(cls, benchmark: Benchmark) -> EvaluationProtocol:
        # smoke: a memory of 4 support instances' rollouts; at full scale every support
        # instance is played (by the LLM with support_paths=agent: what --plan scales)
        support = len(benchmark.instances(benchmark.support_split)) if benchmark.support_split else 0
        return EvaluationProtocol(
            method_args={} if benchmark.has_oracle else {"support_paths": "agent"},
            smoke_args={"support_limit": 4}, smoke_scale=max(1.0, support / 4),
            source="InstructRAG §5.1 (RAP as its baseline, one trial, the memory filled before "
                   "testing; without an oracle, from ReAct's own successes, as InstructRAG's)")

    @classmethod
    def stream_problem(cls, config: Any, benchmark: Benchmark, split: str) -> Optional[str]:
        extra = config.extra_support_split
        if extra and not benchmark.has_split(extra):
            return str(unknown_name(f"split of {benchmark.name} for RAP's extra_support_split",
                                    extra, benchmark.splits()))
        if extra and extra == split:
            return (f"RAP's extra_support_split {extra!r} is the split under test: its oracle "
                    f"solutions would be in memory")
        return None

    def setup(self, ctx: StreamContext) -> None:
        super().setup(ctx)
        config = self.config
        self.params = RoleParams(temperature=config.temperature, max_tokens=config.max_tokens,
                                 seed=config.llm_seed)
        self.plan_params = RoleParams(temperature=config.temperature,
                                      max_tokens=config.plan_max_tokens, seed=config.llm_seed)
        self.memory = ExperienceMemory(get_embedder(config.embedding_model))
        self.extra: dict[str, Any] = {}

    # -- memory from the support splits

    def prepare(self, support: list[Instance]) -> None:
        benchmark = self.ctx.benchmark
        sources = [(benchmark.support_split, support)] if support else []
        extra = self.config.extra_support_split
        problem = self.stream_problem(self.config, benchmark, self.ctx.split)
        if problem:
            raise UserError(problem)
        if extra:
            sources.append((extra, benchmark.instances(extra)))
        oracle = self.config.support_paths == "oracle"
        if not self.config.support_memory or (oracle and not benchmark.has_oracle):
            return
        react = None if oracle else self._react_config()
        for split, instances in sources:
            # A support instance's winning episode within the benchmark's budget: the
            # oracle's, or a plain ReAct episode's (`support_paths=agent`). They do not
            # depend on one another: played on the run's workers, remembered in order.
            picked = spread(instances, benchmark.task_family, self.config.support_limit)
            rollouts = run_jobs(self.ctx, support_episode,
                                [SupportEpisode(split, i, SUPPORT_ROLE, react) for i in picked])
            for instance, rollout in zip(picked, rollouts):
                if rollout is not None:
                    self.memory.add(self._support_entry(split, instance, rollout))

    def _react_config(self) -> ReactConfig:
        """ReAct's defaults with RAP's sampling: the support episodes are plain ReAct's."""
        config = self.config
        return ReactConfig(temperature=config.temperature, max_tokens=config.max_tokens,
                           format_retries=config.format_retries, llm_seed=config.llm_seed)

    def _support_entry(self, split: str, instance: Instance, rollout: Rollout) -> Experience:
        return Experience(
            entry_id=f"support:{split}:{instance.instance_id}", source="support",
            instance_id=instance.instance_id,
            task=self.ctx.benchmark.task_text(rollout.first),
            category=self.ctx.benchmark.task_family(instance) or "",
            plan=derived_plan(rollout.actions),
            steps=kept_steps(rollout.transitions, (), self.config.dropped_observations))

    # -- an episode

    def begin_episode(self, task: TaskInfo, tools: EpisodeTools) -> None:
        self.task = task
        self.format_retries = 0  # replies asked again for want of an action line
        self.category = self.ctx.benchmark.task_family(task.instance) or ""
        self.first: Optional[str] = None
        self.task_text = ""
        self.plan = ""
        self.turns: list[tuple[str, str, str]] = []  # (thought, action, observation)
        self.windows: list[Window] = []
        self.keyed_thought = ""
        self.extra = {"rap_memory_size": len(self.memory), "rap_plan_examples": [],
                      "rap_retrieved": [], "rap_keys": [], "rap_added": False}

    def act(self, observation: Observation) -> str:
        if self.first is None:
            self.first = observation.text
            self.task_text = self.ctx.benchmark.task_text(observation.text)
            self._make_plan()
            self._retrieve(None)
        elif self.turns:
            thought, action, _ = self.turns[-1]
            self.turns[-1] = (thought, action, observation.text)
        thought, action, retried = ask_action(self.ctx.llm, self._messages(), "actor", self.params,
                                              self.config.format_retries, prompts.NO_ACTION_FEEDBACK)
        self.format_retries += retried
        self.turns.append((thought, action, ""))
        if thought:
            self._rekey(thought)
        return action

    def end_episode(self, outcome: EpisodeOutcome) -> None:
        if not outcome.success or self.first is None or not self.config.own_memory:
            return
        transitions = outcome.transitions
        thoughts = [t for t, _, _ in self.turns] if len(self.turns) == len(transitions) else []
        instance_id = self.task.instance.instance_id
        self.memory.add(Experience(
            entry_id=f"own:{self.task.episode_index}:{instance_id}", source="own",
            instance_id=instance_id, task=self.task_text, category=self.category,
            plan=self.plan,
            steps=kept_steps(transitions, thoughts, self.config.dropped_observations)))
        self.extra["rap_added"] = True

    def episode_extra(self) -> dict[str, Any]:
        extra = dict(self.extra, rap_plan=self.plan) if self.extra else {}
        return {**extra, "format_retries": self.format_retries}

    def state(self) -> Any:
        return {"memory": self.memory.state()}

    def load_state(self, state: Any) -> None:
        self.memory.load_state(state["memory"])

    # -- the Reasoner and the Retriever

    def _make_plan(self) -> None:
        examples = self.memory.plan_examples(self.task_text, self.category,
                                             self.config.plan_examples,
                                             self.task.instance.instance_id)
        self.extra["rap_plan_examples"] = [e.entry_id for e in examples]
        shown = "\n\n".join(prompts.PLAN_EXAMPLE.format(task=e.task, plan=e.plan) for e in examples)
        request = prompts.PLAN_REQUEST.format(observation=self.first)
        messages = [
            {"role": "system",
             "content": prompts.PLANNER_SYSTEM.format(manual=self.task.manual().strip())},
            {"role": "user", "content": (prompts.PLAN_EXAMPLES.format(examples=shown) if examples
                                         else prompts.NO_PLAN_EXAMPLES) + "\n\n" + request},
        ]
        reply = self.ctx.llm.chat(messages, role="planner", params=self.plan_params).text
        plan = " ".join(reply.split())
        self.plan = re.sub(r"^(?:overall\s+)?plan\s*:\s*", "", plan, flags=re.I)

    def _rekey(self, thought: str) -> None:
        """A new thought: the Reasoner writes a retrieval key and the windows follow it."""
        if not self.config.retrieval_keys or thought == self.keyed_thought or not len(self.memory):
            return
        self.keyed_thought = thought
        messages = [{"role": "system", "content": prompts.KEY_SYSTEM},
                    {"role": "user", "content": prompts.KEY_REQUEST.format(task=self.task_text,
                                                                           thought=thought)}]
        key = parse_key(self.ctx.llm.chat(messages, role="retrieval_key", params=self.params).text)
        if key is not None:
            self.extra["rap_keys"].append(f"{key.kind}: {key.text}")
            self._retrieve(key)

    def _retrieve(self, key: Optional[RetrievalKey]) -> None:
        search = key is not None and key.kind == "search"
        self.windows = self.memory.retrieve(
            self.task_text, self.category, self.plan, key,
            self.config.search_examples if search else self.config.act_examples,
            self.config.search_window if search else self.config.act_window,
            self.task.instance.instance_id)
        retrieved = self.extra["rap_retrieved"]
        retrieved += [w.entry.entry_id for w in self.windows if w.entry.entry_id not in retrieved]

    # -- the Executor's prompt

    def _messages(self) -> list[dict[str, Any]]:
        if self.windows:
            examples = prompts.EXAMPLES_HEADER + "\n\n" + "\n\n".join(
                w.render(i + 1) for i, w in enumerate(self.windows))
        else:
            examples = prompts.NO_EXAMPLES
        plan = self.plan or "(none)"
        context = [examples, prompts.TASK.format(observation=self.first, plan=plan)]
        hidden = len(self.turns) - self.config.history
        if hidden > 0:
            context.append(prompts.EARLIER.format(count=hidden))
        system = f"{self.task.manual().strip()}\n\n{prompts.FORMAT}"
        # the turns are history, the latest reply and observation stay (lifebench.api.prompt)
        return [{"role": "system", "content": system},
                {"role": "user", "content": "\n\n".join(context)},
                *mark_history(turn_messages(self.turns[-self.config.history:]), keep_last=2)]
