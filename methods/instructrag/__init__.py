"""InstructRAG (Wang et al., SIGIR 2025): retrieval over an instruction graph of past
successful paths, with an RL-Agent that traverses the graph for K candidate paths and an
ML-Agent that chooses the one written into the prompt; both meta-trained on seen tasks,
adapted on a few examples of each test task, then tested. The planner it grounds is ReAct's
thought-action-observation loop (this package's executor is `react`'s, with the path added).

Stages (Algorithms 2-4), all in `prepare` before the first scored episode:
1. construction: the support part of the training split's successful paths (the oracle's,
   or plain ReAct's successes with `support_paths=agent`) make the graph (Algorithm 1);
2. meta-training on the seen tasks' support and query parts (first-order MAML, training.py);
3. few-shot: the test split's few-shot support (`Benchmark.few_shot_support`, e.g. ALFWorld's
   `valid_unseen.support` for `valid_unseen.query`) extends the graph and adapts the agents
   per task; it is played, never scored;
4. testing: the scored episodes, each with the agents adapted to its task.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any, Optional

from lifebench.api import (Benchmark, EpisodeTools, EvaluationProtocol, Instance, MethodNeeds, Observation,
                           StreamContext, TaskInfo, TRAINING_CURVES, TrainingCurves, UserError,
                           episode_rng, run_jobs, start_jobs)
from lifebench.methods.instructrag import matcher, policy, scripted
from lifebench.api.training import MAX_POINTS
from lifebench.methods.instructrag.encoders import ENCODERS, make_encoder
from lifebench.methods.instructrag.graph import InstructionGraph
from lifebench.methods.instructrag.nn import Adam, params_from_json, params_to_json
from lifebench.methods.instructrag.prompts import path_block
from lifebench.methods.instructrag.reporting import TABLE_PEERS, instructrag_tables, recorded_args
from lifebench.methods.instructrag.training import (PLATEAU_Z, Agents, Counters, Hyper, Learner,
                                                    Question, Switches, TrainingLog)
from lifebench.methods.react import ReactConfig, ReactMethod, SupportEpisode, support_episode
from lifebench.methods.rollouts import Rollout, play

SUPPORT_PATHS = ("oracle", "agent")
# Table 2's setting: trained on another benchmark, tested on ScienceWorld (whose support
# split holds the test tasks' own train variations); here ALFWorld stands in for HotpotQA.
TRANSFER_TARGET, TRANSFER_SOURCE = "scienceworld", "alfworld"
# The learning curves' names as the records and the site show them (TrainingLog.curve).
CURVE_NAMES = {"reward": "query reward", "ws_loss": "warm-start loss L_WS",
               "pt_loss": "pre-training loss L_PT", "pg_loss": "policy-gradient loss L_PG",
               "ft_loss": "fine-tuning loss L_FT", "rl_step": "RL-Agent update norm",
               "ml_step": "ML-Agent update norm", "rl_distance": "RL-Agent distance from start",
               "ml_distance": "ML-Agent distance from start"}
# The roles under which each stage's LLM calls are counted (records' usage by role).
TRAIN_ROLE, FEW_SHOT_ROLE, SUPPORT_ROLE = "train", "few_shot", "support"


@dataclass(frozen=True)
class InstructRagConfig(ReactConfig, Hyper, Switches):
    """ReAct's executor settings, the learner's hyper-parameters (`Hyper`: K, alpha, beta,
    inner steps, B, ...) and Table 5's switches (`Switches`), plus where the learning happens."""

    delta: float = 0.4            # the graph's threshold (the paper's)
    support_paths: str = "oracle"  # where the graph's paths come from: oracle | agent
    # Where the agents train: another benchmark for a transfer (ALFWorld -> ScienceWorld);
    # empty: the stream's benchmark and its support split.
    train_benchmark: str = ""
    train_split: str = ""
    train_query_fraction: float = 0.3  # of each seen task's instances, the query part
    support_limit: int = 0         # at most this many training instances (0: all)
    few_shot_limit: int = 0        # at most this many few-shot instances per test task (0: all;
                                   # Figure 2's sample ratio)
    iterations: int = 200          # meta-training's cap; a reward that stopped rising stops it sooner (Hyper)
    tasks_per_batch: int = 3
    train_steps: int = 0           # step budget of a training episode (0: the benchmark's)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.delta <= 1.0:
            raise ValueError(f"delta must be within [0, 1], got {self.delta}")
        if self.k_paths < 1:
            raise ValueError(f"k_paths must be >= 1, got {self.k_paths}")
        if self.support_paths not in SUPPORT_PATHS:
            raise ValueError(f"support_paths must be one of {', '.join(SUPPORT_PATHS)}, "
                             f"got {self.support_paths!r}")
        if not 0.0 < self.train_query_fraction < 1.0:
            raise ValueError("train_query_fraction must be within (0, 1)")
        if self.encoder not in ENCODERS:
            raise ValueError(f"encoder must be one of {', '.join(ENCODERS)}, got {self.encoder!r}")
        if self.plateau_slope < 0:
            raise ValueError(f"plateau_slope must be >= 0, got {self.plateau_slope}")
        if self.iterations > MAX_POINTS:  # the learning curves' limit (lifebench.api.training)
            raise ValueError(f"iterations must be at most {MAX_POINTS}, got {self.iterations}")
        if min(self.iterations, self.support_limit, self.few_shot_limit, self.train_steps,
               self.pool_extra) < 0 \
                or min(self.tasks_per_batch, self.questions_per_task) < 1 or self.inner_steps < 0:
            raise ValueError("iterations, support_limit, few_shot_limit, train_steps, pool_extra, "
                             "inner_steps must be >= 0; tasks_per_batch, questions_per_task >= 1")


# A smoke run's preparation (`--smoke`, `make bench`): one meta-training iteration on a
# few support instances, and one few-shot instance per test task.
SMOKE_ARGS = {"iterations": 1, "tasks_per_batch": 1, "questions_per_task": 1,
              "support_limit": 4, "few_shot_limit": 1, "train_steps": 5}
# The full meta-training's episodes per smoke one's, at most: the cap of 200 iterations x 3
# tasks x B=2 (the stopping rule may end it sooner, so `--plan` prices the worst case).
SMOKE_SCALE = 1200.0


class InstructRagMethod(ReactMethod):
    name = "instructrag"
    version = "4"  # bump when a change alters what it does (lifebench.api.Method.version)
    # Its meta-training's float64 products go through numpy's BLAS, whose kernels differ by
    # CPU: another machine's sums may round otherwise in the last place, so its curves
    # (rounded to 6 decimals) may move there (docs/verify.md, "Where exactness stops").
    replay_tolerance = {"extra.training_curves": 1e-6}
    Config = InstructRagConfig
    # Testing changes nothing: the graph and the agents are what `prepare` made (a prepared
    # artifact), so a stream may be sharded and no memory is saved after each episode.
    stateless = True
    needs = MethodNeeds(llm=True, support=True, oracle=False)
    tables = (instructrag_tables,)
    table_peers = TABLE_PEERS  # ReAct's and RAP's records beside its own: Tables 1 and 2
    # the scripted model's replies, for every stage's role (scripted.py)
    scripted_reply = classmethod(lambda cls, request: scripted.scripted_reply(request))

    @classmethod
    def protocol(cls, benchmark: Benchmark) -> EvaluationProtocol:
        args: dict[str, Any] = {} if benchmark.has_oracle else {"support_paths": "agent"}
        if benchmark.name == TRANSFER_TARGET:
            args["train_benchmark"] = TRANSFER_SOURCE  # the paper transfers (Table 2)
        return EvaluationProtocol(
            method_args=args,
            smoke_args=SMOKE_ARGS, smoke_scale=SMOKE_SCALE,
            source="§5.1: support paths are the successes of an LLM planner, so a benchmark "
                   "without an oracle takes them from ReAct's own successes; one trial; "
                   "ScienceWorld is a transfer target (Table 2), trained on ALFWorld")

    @classmethod
    def stream_problem(cls, config: Any, benchmark: Benchmark, split: str) -> Optional[str]:
        trains_on = config.train_benchmark or benchmark.name
        if benchmark.name == TRANSFER_TARGET and trains_on == TRANSFER_TARGET:
            # its support split holds the test tasks' train variations: training on it (by
            # default, or named) and adapting on it would be the same instances (the paper
            # transfers, Table 2)
            return ("instructrag on scienceworld would train and adapt on the same tasks; "
                    "train on another benchmark: --method-arg train_benchmark=alfworld")
        if not config.train_benchmark and benchmark.support_split is None:
            return (f"instructrag trains on a support split and {benchmark.name} has none; "
                    f"train on another benchmark with --method-arg train_benchmark=alfworld")
        paths_here = not config.train_benchmark or benchmark.few_shot_support(split)
        if config.support_paths == "oracle" and paths_here and not benchmark.has_oracle:
            # training (unless on another benchmark) and the few-shot stage need its paths
            return (f"instructrag's support paths come from the oracle and {benchmark.name} has "
                    f"none; use --method-arg support_paths=agent (ReAct's own successes)")
        return None

    def setup(self, ctx: StreamContext) -> None:
        super().setup(ctx)
        from lifebench.embeddings import get_embedder

        self.embedder = get_embedder()
        # Seeded by what its preparation depends on (the few-shot split, not the split under
        # test): streams of one support split share one prepared artifact (runner).
        self.rng = episode_rng(ctx.seed, "instructrag", ctx.benchmark.name,
                               ctx.benchmark.few_shot_support(ctx.split) or "")
        self.encoder = make_encoder(self.config.encoder, self.embedder)
        self.learner: Optional[Learner] = None
        self.training = TrainingLog()
        self.adapted: dict[str, tuple[Any, Any]] = {}
        self.stages: dict[str, Any] = {}
        self.reported_stages = False
        self.forced_path: Optional[tuple[str, ...]] = None

    # -- the stages
    def prepare(self, support: list[Instance]) -> None:
        config = self.config
        train_bench = self._train_benchmark()
        split = config.train_split or train_bench.support_split
        if not split:
            raise UserError(f"instructrag: {train_bench.name} has no support split to train "
                            f"on; name one with --method-arg train_split=SPLIT")
        instances = (support if train_bench is self.ctx.benchmark and split == self.ctx.benchmark.support_split
                     else train_bench.instances(split))
        if config.support_limit:
            instances = instances[: config.support_limit]
        started = time.perf_counter()
        graph = InstructionGraph(self.embedder.embed, config.delta)
        agents = Agents(policy.init_policy(self.rng), matcher.init_matcher(self.rng, self.encoder),
                        Adam(config.beta), Adam(config.beta))
        self.learner = Learner(graph, agents, config, config, self.rng, self.encoder)
        seen_support, seen_query = self._partition(train_bench, instances)
        support_questions = self._insert_paths(train_bench, seen_support, split)
        self.stages["construction_s"] = round(time.perf_counter() - started, 3)
        self.stages["graph_paths"] = len(graph.paths)

        started = time.perf_counter()
        query_questions = self._questions(train_bench, seen_query)
        self.training = self.learner.meta_train(support_questions, query_questions,
                                                self._evaluator(TRAIN_ROLE), config.iterations,
                                                config.tasks_per_batch, self._episodes(TRAIN_ROLE))
        self.stages["training_s"] = round(time.perf_counter() - started, 3)
        self.stages["training_rewards"] = [round(r or 0.0, 4) for r in self.training.curve["reward"]]
        self.stages["training_iterations"] = self.training.iterations
        self.stages["training_stop"] = self.training.stop
        self.stages["training_trend"] = self.training.trend
        self.stages["training_counters"] = agents.counters.as_dict()

        started = time.perf_counter()
        few_shot_split = self.ctx.benchmark.few_shot_support(self.ctx.split)
        self.stages["few_shot_split"] = few_shot_split
        if few_shot_split:
            groups = self._by_task(self.ctx.benchmark, self.ctx.benchmark.instances(few_shot_split))
            if config.few_shot_limit:
                groups = {task: group[: config.few_shot_limit] for task, group in groups.items()}
            few_shot_questions = self._insert_paths(self.ctx.benchmark, groups, few_shot_split)
            agents.counters = Counters()
            self.adapted = self.learner.few_shot(few_shot_questions, self._evaluator(FEW_SHOT_ROLE),
                                                 self._episodes(FEW_SHOT_ROLE))
            self.stages["few_shot_counters"] = agents.counters.as_dict()
        self.stages["few_shot_s"] = round(time.perf_counter() - started, 3)
        self.stages["graph_nodes"] = len(graph.nodes)
        self.stages["graph_edges"] = len(graph.edges)

    def _train_benchmark(self) -> Benchmark:
        name = self.config.train_benchmark
        if not name or name == self.ctx.benchmark.name:
            return self.ctx.benchmark
        if self.ctx.benchmark_named is None:
            raise UserError("instructrag: this runner cannot reach other benchmarks")
        return self.ctx.benchmark_named(name)

    def _by_task(self, benchmark: Benchmark, instances: list[Instance]) -> dict[str, list[Instance]]:
        groups: dict[str, list[Instance]] = {}
        for instance in instances:
            groups.setdefault(benchmark.task_family(instance) or benchmark.name, []).append(instance)
        return groups

    def _partition(self, benchmark: Benchmark, instances: list[Instance]
                   ) -> tuple[dict[str, list[Instance]], dict[str, list[Instance]]]:
        """Each seen task's instances, in the split's order: the first part is its support
        (the graph, warm start, pre-training), the last `train_query_fraction` its query."""
        support, query = {}, {}
        for task, group in self._by_task(benchmark, instances).items():
            n_query = int(round(len(group) * self.config.train_query_fraction))
            if len(group) > 1:
                n_query = min(max(n_query, 1), len(group) - 1)
            else:
                n_query = 0
            support[task], query[task] = group[: len(group) - n_query], group[len(group) - n_query:]
        return support, query

    def _insert_paths(self, benchmark: Benchmark, groups: dict[str, list[Instance]],
                      split: str) -> dict[str, list[Question]]:
        """The successful paths of `groups` into the graph; the questions they answer. A
        support instance's path is the oracle's (within the benchmark's budget), or a plain
        ReAct episode's when it succeeds: the same episode RAP plays for its memory with
        `support_paths=agent`, so both methods remember the same data. The episodes are
        played on the run's workers, and inserted in the groups' order."""
        assert self.learner is not None
        react = None if self.config.support_paths == "oracle" else ReactConfig(
            **{f.name: getattr(self.config, f.name) for f in dataclasses.fields(ReactConfig)})
        named = "" if benchmark is self.ctx.benchmark else benchmark.name
        jobs = [(task, SupportEpisode(split, instance, SUPPORT_ROLE, react,
                                      self.config.train_steps or None, named))
                for task, group in groups.items() for instance in group]
        out: dict[str, list[Question]] = {}
        for (task, job), rollout in zip(jobs, run_jobs(self.ctx, support_episode, [j for _, j in jobs])):
            if rollout is None:
                continue
            question = Question(task, benchmark.task_text(rollout.first), job.instance,
                                benchmark.name, tuple(rollout.actions))
            self.learner.graph.insert_path(question.path, task, question.text)
            out.setdefault(task, []).append(question)
        return out

    def _questions(self, benchmark: Benchmark, groups: dict[str, list[Instance]]
                   ) -> dict[str, list[Question]]:
        """The query questions of `groups`: each one's text is its first observation's task,
        read on reset (on the run's workers)."""
        named = "" if benchmark is self.ctx.benchmark else benchmark.name
        pairs = [(task, instance) for task, group in groups.items() for instance in group]
        texts = run_jobs(self.ctx, task_text, [(named, i) for _, i in pairs])
        out: dict[str, list[Question]] = {task: [] for task in groups}
        for (task, instance), text in zip(pairs, texts):
            out[task].append(Question(task, text, instance, benchmark.name))
        return out

    def _episodes(self, role: str):
        """Hands a batch of training episodes (question, path) out to the run's workers; the
        function that waits for their rewards."""
        def start(pairs: list[tuple[Question, tuple[str, ...]]]):
            return start_jobs(self.ctx, training_episode,
                              [TrainingEpisode(self.config, q, path, role) for q, path in pairs]).results
        return start

    def _evaluator(self, role: str):
        def evaluate(question: Question, path: tuple[str, ...]) -> float:
            benchmark = (self.ctx.benchmark if question.benchmark == self.ctx.benchmark.name
                         else self._train_benchmark())
            rollout = self._play(benchmark, question.instance, path, role)
            return _reward(benchmark, rollout)
        return evaluate

    def _play(self, benchmark: Benchmark, instance: Instance, path: tuple[str, ...], role: str) -> Rollout:
        """A training episode: this method's executor with `path` in its prompt."""
        steps = self.config.train_steps or benchmark.budget(instance)
        task = TaskInfo(benchmark=benchmark.name, split="training", instance=instance,
                        seed=self.ctx.seed, trial=0, episode_index=-1, budget_steps=steps,
                        instructions=benchmark.instructions, noop_action=benchmark.noop_action)
        saved_bank, saved_role = self.bank, self.actor_role
        if benchmark is not self.ctx.benchmark:
            from lifebench.methods.react.examples import ExampleBank

            self.bank = ExampleBank(benchmark, self.config.example_steps)
        self.actor_role, self.forced_path = role, path
        try:
            ReactMethod.begin_episode(self, task, _NO_TOOLS)
            return play(benchmark, instance, self.act, steps, self.ctx.seed)
        finally:
            self.bank, self.actor_role, self.forced_path = saved_bank, saved_role, None

    # -- testing (Algorithm 4)
    def begin_episode(self, task: TaskInfo, tools: EpisodeTools) -> None:
        super().begin_episode(task, tools)
        self.actor_role, self.forced_path = "actor", None
        self.path: Optional[tuple[str, ...]] = None
        self.candidates = 0

    def act(self, observation: Observation) -> str:
        if self.first is None:
            path = self.forced_path if self.forced_path is not None else self._retrieve(observation)
            self.path = path
            self.prefix.append({"role": "user", "content": path_block(path)})
            self.prefix.append({"role": "assistant", "content": "Understood."})
        return super().act(observation)

    def _retrieve(self, observation: Observation) -> tuple[str, ...]:
        assert self.learner is not None, "instructrag was not prepared"
        question = self.ctx.benchmark.task_text(observation.text)
        family = self.ctx.benchmark.task_family(self.task.instance) or self.ctx.benchmark.name
        rl, ml = self.adapted.get(family, (self.learner.agents.rl, self.learner.agents.ml))
        retrieval = self.learner.retrieve(question, rl, sample=False)
        self.candidates = len(retrieval.paths)
        chosen = self.learner.choose(question, retrieval.paths, ml)
        return retrieval.paths[chosen] if chosen >= 0 else ()

    def episode_extra(self) -> dict[str, Any]:
        extra: dict[str, Any] = {**ReactMethod.episode_extra(self),
                                 "instructrag_path": list(self.path or ()),
                                 "instructrag_candidates": self.candidates,
                                 # the args that differ from the defaults: Table 5's rows
                                 "instructrag_args": recorded_args(self.config)}
        if not self.reported_stages and self.stages:
            extra["instructrag_stages"] = self.stages  # the first scored episode carries them
            if self.training.iterations:
                extra[TRAINING_CURVES] = self._training_curves()
            self.reported_stages = True
        return extra

    def _training_curves(self) -> dict[str, Any]:
        """The learning curves in the records' generic form (docs/records.md), which the
        results site draws."""
        series = {CURVE_NAMES[name]: [None if v is None else round(v, 6) for v in values]
                  for name, values in self.training.curve.items()
                  if any(v is not None for v in values)}
        config, n = self.config, self.training.iterations
        why = {"plateau": (f"the query reward stopped rising (a least-squares line's slope, plus "
                           f"{PLATEAU_Z:g} standard errors, was below {config.plateau_slope:g} an "
                           f"iteration: {_lines(self.training.trend)})"),
               "cap": f"the cap (iterations={config.iterations})"}.get(self.training.stop,
                                                                       self.training.stop)
        return TrainingCurves.of("InstructRAG meta-training", series,
                                 note=f"stopped after {n} iteration(s): {why}").to_dict()

    # -- memory
    def state(self) -> Any:
        assert self.learner is not None
        agents = self.learner.agents
        # the optimisers' moments are left out: nothing trains after `prepare`
        return {"graph": self.learner.graph.to_json(),
                "rl": params_to_json(agents.rl), "ml": params_to_json(agents.ml),
                "adapted": {task: [params_to_json(rl), params_to_json(ml)]
                            for task, (rl, ml) in self.adapted.items()},
                "training": {"curve": self.training.curve, "stop": self.training.stop,
                             "trend": self.training.trend},
                "stages": self.stages, "reported_stages": self.reported_stages}

    def load_state(self, state: Any) -> None:
        graph = InstructionGraph.from_json(state["graph"], self.embedder.embed)
        agents = Agents(params_from_json(state["rl"]), params_from_json(state["ml"]),
                        Adam(self.config.beta), Adam(self.config.beta))
        self.learner = Learner(graph, agents, self.config, self.config, self.rng, self.encoder)
        training = state.get("training") or {}
        self.training = TrainingLog(stop=str(training.get("stop", "")),
                                    trend=list(training.get("trend", [])))
        for name in self.training.curve:
            self.training.curve[name] = [None if v is None else float(v)
                                         for v in (training.get("curve") or {}).get(name, [])]
        self.adapted = {task: (params_from_json(rl), params_from_json(ml))
                        for task, (rl, ml) in state["adapted"].items()}
        self.stages = state["stages"]
        self.reported_stages = state["reported_stages"]


def _lines(trend: list[dict[str, float]]) -> str:
    """The stopping rule's lines at its last look, as the note says them."""
    return "; ".join(f"last {fit['window']} iterations {fit['slope']:+.4f} (bound {fit['upper']:+.4f})"
                     for fit in trend)


@dataclass(frozen=True)
class TrainingEpisode:
    """A training episode as a preparation job (`training_episode`): the executor of
    `config` on `question`'s instance with `path` in its prompt, its calls under `role`."""

    config: InstructRagConfig
    question: Question
    path: tuple[str, ...]
    role: str


def training_episode(ctx: StreamContext, job: TrainingEpisode) -> float:
    """The reward of a training episode (`TrainingEpisode`), played by a method of the
    job's config on the stream's context: the same episode its own stream would play."""
    method = InstructRagMethod(job.config)
    method.setup(ctx)
    return method._evaluator(job.role)(job.question, job.path)


def task_text(ctx: StreamContext, job: tuple[str, Instance]) -> str:
    """The task of an instance's first observation, read on reset with the stream's seed,
    as its episodes are played (a preparation job; the benchmark by name, "" the stream's)."""
    name, instance = job
    benchmark = ctx.benchmark_named(name) if name and ctx.benchmark_named else ctx.benchmark
    env: Any = benchmark.make_env(instance, ctx.seed)
    try:
        return benchmark.task_text(env.reset().text)
    finally:
        env.close()


def _reward(benchmark: Benchmark, rollout: Rollout) -> float:
    """Success, or the score scaled to [0, 1] where the benchmark's score has a range."""
    if rollout.success:
        return 1.0
    if benchmark.score_range is None:
        return 0.0
    low, high = benchmark.score_range
    return max(0.0, min(1.0, (rollout.score - low) / (high - low)))


def _unavailable(*_: Any) -> Any:
    raise ValueError("not available in a training episode")


_NO_TOOLS = EpisodeTools(valid_actions=_unavailable, sample_action=_unavailable, query=_unavailable)
