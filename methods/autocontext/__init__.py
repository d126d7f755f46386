"""AutoContext (instance-level context learning): explores one environment instance before
its tasks, guided by a TODO forest and a plan-act-extract loop, and writes a document of
verified facts about it, shaped by the benchmark's schema, that any method can be given
(`--context autocontext`).

Each iteration: the Planner proposes one TODO for the Observations' gaps (entries marked
Unknown) and up to `num_todo` TODOs for the Action Rules; the Actor runs them (replaying or
restoring to their state); the Extractor proposes, checks and applies edits from what they
showed; the Planner promotes an explored node to a new state; then the Planner's loop
control judges whether gaps remain (Section 4.3). The loop ends when loop control says
none do, when the Planner proposes nothing, after `max_iterations`, or when the
`explore_steps` budget runs out. Ablations (the paper's Table 4): `forest=false`, `planner=random`, `extractor=naive`.
See README.md for the choices the paper leaves open.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from lifebench.api import ContextProvider, ContextTools, ExplorationEnv, RoleParams

from lifebench.methods.autocontext.actor import Actor, Segment, joined, key_result
from lifebench.methods.autocontext.extractor import Extractor, Knowledge, split_document
from lifebench.methods.autocontext.forest import INIT_STATE, TodoForest
from lifebench.methods.autocontext.planner import Planner
from lifebench.methods.autocontext import scripted
from lifebench.methods.autocontext.tables import TABLES

PLANNERS = ("llm", "random")
EXTRACTORS = ("schema", "naive")
SECTIONS = ("all", "observations", "action_rules")
MODES = ("", "action", "agent")


@dataclass(frozen=True)
class AutoContextConfig:
    explore_steps: int = 1000     # env steps for one instance's exploration, replays included
    max_iterations: int = 40      # plan-act-extract iterations
    max_length: int = 6           # new actions (or sub-tasks) in one TODO path
    num_todo: int = 3             # Action Rules TODOs per iteration
    plan_retries: int = 2         # feedback rounds for a proposal that cannot be run
    forest: bool = True           # False: the ablation "w/o TODO forest"
    planner: str = "llm"          # "random": the ablation "w/o Planner" (random actions)
    extractor: str = "schema"     # "naive": the ablation "w/o Extractor"
    mode: str = ""                # "action" or "agent"; "": the benchmark schema's mode
    subagent_steps: int = 25      # agent mode: actions per sub-task
    subagent_history: int = 8     # agent mode: turns the sub-agent sees
    key_result_chars: int = 300
    trajectory_chars: int = 8000
    temperature: float = 0.0
    max_tokens: int = 2048
    sections: str = "all"         # what methods are shown: all, observations, action_rules
    per_seed: bool = False
    loop_control: bool = True     # the Planner's end-of-iteration call (Section 4.3)

    def __post_init__(self) -> None:
        for name, value, allowed in (("planner", self.planner, PLANNERS),
                                     ("extractor", self.extractor, EXTRACTORS),
                                     ("sections", self.sections, SECTIONS),
                                     ("mode", self.mode, MODES)):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(repr(a) for a in allowed)}, "
                                 f"got {value!r}")
        if self.explore_steps < 1 or self.max_iterations < 1 or self.max_length < 1:
            raise ValueError("explore_steps, max_iterations and max_length must be >= 1")
        if self.num_todo < 0 or self.plan_retries < 0 or self.subagent_steps < 1:
            raise ValueError("num_todo and plan_retries must be >= 0, subagent_steps >= 1")


class AutoContext(ContextProvider):
    name = "autocontext"
    # 2: builds blind to reward and the episode's end (Benchmark.outcome_signals)
    version = "2"
    Config = AutoContextConfig
    use_fields = ("sections",)
    tables = TABLES

    # The scripted model's replies: the build walks the oracle's path (see scripted.py).
    scripted_reply = classmethod(lambda cls, request: scripted.scripted_reply(request))

    @classmethod
    def problem(cls, config: Any, benchmark: Any) -> Optional[str]:
        if benchmark.context_schema() is None:
            return f"{benchmark.name} describes no instance-context schema"
        return None

    def prompt_text(self, document: str) -> str:
        return split_document(document).section(self.config.sections)

    def build(self, env: ExplorationEnv, tools: ContextTools) -> str:
        config, schema = self.config, tools.schema
        assert schema is not None and tools.llm is not None
        params = RoleParams(temperature=config.temperature, max_tokens=config.max_tokens)
        background = tools.instructions.strip()
        first = env.reset()
        forest = TodoForest(key_result(first.text, config.key_result_chars), env.snapshot(),
                            agent_mode=(config.mode or schema.mode) == "agent")
        actor = Actor(env, schema, forest, tools.llm, params, background, config)
        planner = Planner(tools.llm, params, forest, background, schema.text(), schema.unknown,
                          config)
        extractor = Extractor(tools.llm, params, schema, background,
                              naive=config.extractor == "naive")
        recent = Segment(INIT_STATE, first.text)
        knowledge = extractor.update(Knowledge(), recent.text(config.trajectory_chars))
        tools.report(knowledge.document())
        iterations, stop = 0, "max_iterations"
        while iterations < config.max_iterations:
            iterations += 1
            if config.planner == "random":
                start = forest.states[INIT_STATE]
                segments = [actor.random_walk(start, config.max_length, tools.sample_action,
                                              tools.rng)]
            else:
                trajectory = recent.text(config.trajectory_chars)
                todos = [t for t in [planner.observation_todo(knowledge.gaps_view(), trajectory)]
                         if t is not None]
                todos += planner.rule_todos(trajectory)
                if not todos:
                    stop = "no gaps left"
                    break
                segments = []
                for todo in todos:
                    segments.append(actor.run(todo))
                    if actor.exhausted:
                        break
            knowledge = extractor.update(knowledge, joined(segments, config.trajectory_chars))
            tools.report(knowledge.document())
            recent = segments[-1]
            if actor.exhausted:
                stop = "explore_steps"
                break
            if config.planner == "llm":
                planner.promote(knowledge.gaps_view())
                if config.loop_control and iterations < config.max_iterations and \
                        not planner.keep_exploring(knowledge.document(),
                                                   recent.text(config.trajectory_chars)):
                    stop = "no gaps left (loop control)"
                    break
        tools.artefacts.update(
            forest=forest.to_json(), iterations=iterations, stop=stop,
            planner={"proposed": planner.stats.proposed, "admitted": planner.stats.admitted,
                     "feedback": planner.stats.feedback[-20:],
                     "promoted": planner.stats.promoted,
                     "loop_control": planner.stats.loop_control},
            extractor={k: v for k, v in vars(extractor.stats).items()},
            subtasks=actor.subtasks)
        return knowledge.document()
