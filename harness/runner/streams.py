"""A run config expanded into streams: the unit of execution.

A stream is one method (with one config) on one benchmark split, with one seed and one
budget: its instances in a fixed order, `trials` episodes each. Every name and value is
checked here, before any episode starts, with one line that names the valid choices.
"""

from __future__ import annotations

import dataclasses

import hashlib
import sys
from dataclasses import dataclass
from typing import Any, Callable, Optional

import lifebench
from lifebench import registry
from lifebench.api.budget import Budget
from lifebench.api.errors import UserError, unknown_name
from lifebench.api.records import KEY_FIELDS, RecordKey
from lifebench.config.plugins import (benchmark_config_hash, changed_fields,
                                      context_build_hash, context_config_hash,
                                      method_config_hash, resolve_splits)
from lifebench.config.plugins import short_hash
from lifebench.config.run import LLMConfig, RunConfig
from lifebench.llm.prices import load_prices


@dataclass(frozen=True)
class ContextBuild:
    """How a stream's instance contexts are built: with an instance id and the benchmark,
    this identifies one context (its key)."""

    provider: str
    config: Any
    build_hash: str  # the config without its use-time fields
    model: Optional[str]
    seed: int
    llm: Optional[LLMConfig]
    version: str = "1"  # the provider's (`ContextProvider.version`)

    def key(self, benchmark: str, benchmark_config_hash: str, instance_id: str) -> str:
        # version "1" is left out: the keys of builds made before versions existed stay
        versioned = {"version": self.version} if self.version != "1" else {}
        return short_hash({"benchmark": benchmark, "benchmark_config": benchmark_config_hash,
                           "instance": instance_id, "provider": self.provider,
                           "config": self.build_hash, "model": self.model, "seed": self.seed,
                           **versioned})


@dataclass(frozen=True)
class StreamSpec:
    """One method on one benchmark split with one seed and budget.

    Its instances run in this fixed order, `trials` episodes each, and the method's memory
    lives for the whole stream.
    """

    run_id: str
    benchmark: str
    split: str
    method: str
    benchmark_config: Any
    benchmark_config_hash: str  # "" for the benchmark's default config
    method_config: Any
    method_config_hash: str
    model: Optional[str]
    seed: int
    budget: Budget
    trials: int
    instance_ids: tuple[str, ...]
    timeout_s: float
    retries: int
    # The budget of each instance in steps, aligned with instance_ids.
    instance_budgets: tuple[int, ...] = ()
    # Set for methods that need an LLM.
    llm: Optional[LLMConfig] = None
    # The instance context every episode is given ("" for none; see lifebench.api.context).
    context: str = ""
    context_config: Any = None
    context_config_hash: str = ""
    context_build: Optional[ContextBuild] = None
    method_version: str = "1"  # the method's `version`, part of every record's key
    allow_unconfined_code: bool = False  # --allow-unconfined-code
    # The method's protocol on this benchmark, as the manifest records it per cell: the
    # scored trial (None: the benchmark's rule), whether its smoke arguments were applied.
    scored_trial: Optional[str] = None
    smoke: bool = False
    # No trial of an instance after one succeeded (the protocol's `stop_after_success`)
    stop_after_success: bool = False

    @property
    def stream_id(self) -> str:
        model = f".{_safe(self.model)}" if self.model else ""
        bench = f"{self.benchmark}-{self.benchmark_config_hash}" if self.benchmark_config_hash \
            else self.benchmark
        context = f"+{self.context}-{self.context_config_hash}" if self.context else ""
        # version 1 leaves the id as it was before methods had versions
        version = f"-v{_safe(self.method_version)}" if self.method_version != "1" else ""
        return (f"{bench}.{self.split}.{self.method}{version}-{self.method_config_hash}{context}{model}"
                f".s{self.seed}.b{self.budget}")

    def budget_at(self, position: int) -> int:
        """The steps the episode at `position` may take."""
        return self.instance_budgets[position // self.trials]

    @property
    def episodes(self) -> list[tuple[str, int]]:
        """(instance_id, trial) in stream order; the position is the episode_index."""
        return [(iid, t) for iid in self.instance_ids for t in range(self.trials)]

    def episode_at(self, position: int) -> tuple[str, int]:
        """`episodes[position]`, without building the list."""
        if not 0 <= position < len(self.instance_ids) * self.trials:
            raise IndexError(f"stream {self.stream_id} has no episode {position}")
        return self.instance_ids[position // self.trials], position % self.trials

    def skipped(self, position: int, succeeded: Callable[[int], bool]) -> bool:
        """Whether the episode at `position` is not played: the stream stops an instance
        after a success, and `succeeded(p)` holds for an earlier trial's position p of the
        same instance."""
        if not self.stop_after_success:
            return False
        trial = position % self.trials
        return any(succeeded(position - back) for back in range(1, trial + 1))

    def key_at(self, position: int) -> RecordKey:
        """The record key of the episode at `position`."""
        instance_id, trial = self.episode_at(position)
        fields = {"instance_id": instance_id, "trial": trial, "budget_steps": self.budget_at(position)}
        return RecordKey(**{name: fields[name] if name in fields else getattr(self, name)
                            for name in KEY_FIELDS})

    def prepared_key(self) -> Optional[str]:
        """What determines what the method learns in `prepare` (None for a method that does
        not prepare): the method, its version and config (with the LLM settings that change
        answers), the benchmark and its config, its support split and the stream split's
        few-shot support, the model, the seed and the harness version. Streams that share it
        share one preparation (`lifebench.store.prepared`); the split under test, its
        budget and an instance context are not part of it: `prepare` sees none of them."""
        if not registry.method_class(self.method).needs.support:
            return None
        bench = registry.get_benchmark(self.benchmark, self.benchmark_config)
        return short_hash({"method": self.method, "version": self.method_version,
                           "config": self.method_config_hash, "benchmark": self.benchmark,
                           "benchmark_config": self.benchmark_config_hash,
                           "support": bench.support_split,
                           "few_shot": bench.few_shot_support(self.split), "model": self.model,
                           "seed": self.seed, "harness": lifebench.__version__})

    def prefix_digest(self, position: int) -> str:
        """Identifies the episodes a saved memory has seen (up to `position`), so resume can
        refuse a stream whose order changed instead of carrying the wrong memory."""
        text = "\n".join(f"{i}#{t}" for i, t in self.episodes[: position + 1])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def validate(config: RunConfig) -> dict[str, tuple[str, ...]]:
    """Check every name and value against the plugins; returns the splits per benchmark."""
    if not config.benchmarks:
        raise UserError("no benchmark given; use --benchmark NAME (see `lifebench list benchmarks`)")
    if not config.methods:
        raise UserError("no method given; use --method NAME (see `lifebench list methods`)")
    splits = resolve_splits(config.benchmarks, config.splits)
    for b in config.benchmarks:
        bench = registry.get_benchmark(b, config.benchmark_config(b))
        for s in splits.get(b, ()):
            bench.check_split(s)
    for m in config.methods:
        config.method_configs(m)
    for c in config.providers:
        config.context_configs(c)
    if config.llm.prices is not None:
        load_prices(config.llm.prices)
    return splits


@dataclass(frozen=True)
class Refusal:
    """A cell of the grid that does not run, and why (the manifest keeps them: the grid
    table shows each as `×` with its reason)."""

    method: str
    benchmark: str
    split: str
    reason: str
    context: str = ""  # the context provider asked for, "" for none

    def line(self) -> str:
        where = f"{self.benchmark}:{self.split}" if self.split else self.benchmark
        context = f" with --context {self.context}" if self.context else ""
        return f"{self.method}{context} on {where}: {self.reason}"

    def to_dict(self) -> dict[str, str]:
        return dataclasses.asdict(self)


def expand(config: RunConfig, refused: Optional[list[Refusal]] = None,
           grid: bool = False) -> list[StreamSpec]:
    """The streams of a config, in a fixed order. Cells that cannot run are skipped with a
    line and added to `refused`; a method or context provider that needs an LLM none was
    given for is an error, except in a `grid` (its cells are refused)."""
    splits = validate(config)
    if config.baseline is not None:  # a method's name, run here or in another directory
        registry.method_class(config.baseline)
    refused = refused if refused is not None else []
    run_id = config.resolved_run_id
    streams = []
    for b in config.benchmarks:
        bench_config = config.benchmark_config(b)
        bench_hash = benchmark_config_hash(b, bench_config)
        bench = registry.get_benchmark(b, bench_config)
        bench.check_available()
        contexts = _contexts(config, bench, refused, grid)
        for split in splits.get(b) or bench.default_splits:
            for m in config.methods:
                cls = registry.method_class(m)
                needs = cls.needs
                if needs.llm and not (config.model and config.llm.base_url):
                    if not grid:
                        raise UserError(f"method {m!r} needs an LLM; give --model NAME and --base-url URL")
                    refused.append(Refusal(m, b, split, "needs an LLM: give --model NAME and "
                                                        "--base-url URL"))
                    continue
                if (needs.oracle or needs.teacher) and not bench.has_oracle:
                    what = "oracle" if needs.oracle else "teacher (it has no oracle)"
                    refused.append(Refusal(m, b, split, f"{b} has no {what}"))
                    continue
                trials = config.trials_for(m, b)
                protocol = config.protocol(m, b)
                smoke = config.smoke and bool(protocol.smoke_args)
                for method_config in config.method_configs(m, b):
                    problem = cls.stream_problem(method_config, bench, split)
                    if problem:
                        changed = changed_fields(method_config)
                        refused.append(Refusal(m, b, split, problem if changed == "default config"
                                               else f"({changed}) {problem}"))
                        continue
                    for context in contexts:
                        if context.provider and cls.context_use is None:
                            refused.append(Refusal(m, b, split, f"{m} cannot use an instance "
                                                   f"context", context.provider))
                            continue
                        for seed in config.seeds:
                            ids, by_id = _instance_ids(config, bench, split, seed)
                            for budget in config.budgets:
                                streams.append(StreamSpec(
                                    run_id=run_id, benchmark=b, split=split, method=m,
                                    benchmark_config=bench_config, benchmark_config_hash=bench_hash,
                                    method_config=method_config,
                                    method_config_hash=method_config_hash(
                                        m, method_config,
                                        config.llm.answer_settings(needs.tools) if needs.llm else None),
                                    method_version=cls.version,
                                    allow_unconfined_code=config.allow_unconfined_code,
                                    scored_trial=protocol.scored_trial, smoke=smoke,
                                    stop_after_success=protocol.stop_after_success,
                                    model=config.model if needs.llm else None, seed=seed,
                                    budget=budget, trials=trials, instance_ids=ids,
                                    timeout_s=config.timeout_s, retries=config.retries,
                                    instance_budgets=tuple(budget.steps_for(bench.budget(by_id[i]))
                                                           for i in ids),
                                    llm=config.llm if needs.llm else None,
                                    context=context.provider, context_config=context.config,
                                    context_config_hash=context.config_hash,
                                    context_build=context.build(seed)))
    if streams or grid:  # else the error below names the reason, once
        _say_refused(refused, grid)
    if not streams:
        first = refused[0].line() if refused else "no cell"
        raise UserError(f"nothing to run: {first}" + (f" (and {len(refused) - 1} more cells "
                        f"refused)" if len(refused) > 1 else ""))
    return streams


def cell_protocols(streams: list[StreamSpec]) -> list[dict[str, Any]]:
    """Per cell of the run (a method config on a benchmark split, with a context and a
    model), the protocol it ran with, for the manifest: results keep what was scored."""
    cells: dict[tuple, dict[str, Any]] = {}
    for s in streams:
        cell = {"benchmark": s.benchmark, "benchmark_config_hash": s.benchmark_config_hash,
                "split": s.split, "method": s.method, "method_config_hash": s.method_config_hash,
                "context": s.context, "context_config_hash": s.context_config_hash,
                "model": s.model, "trials": s.trials, "scored_trial": s.scored_trial,
                "smoke": s.smoke, "stop_after_success": s.stop_after_success}
        cells.setdefault(tuple(str(v) for v in cell.values()), cell)
    return list(cells.values())


def _say_refused(refused: list[Refusal], grid: bool) -> None:
    """One line per refused cell in a grid; a plain run, whose grids of method configs can
    refuse many, says each context refusal and one example of the rest."""
    lines = list(dict.fromkeys(r.line() for r in refused))
    if grid or len(lines) <= 3:
        for line in lines:
            print(f"lifebench: skipping {line}", file=sys.stderr)
        return
    print(f"lifebench: skipping {len(lines)} cells that do not run, e.g. {lines[0]}",
          file=sys.stderr)


@dataclass(frozen=True)
class _ContextChoice:
    """One value of the run's context axis on one benchmark: none, or a provider config."""

    provider: str = ""
    config: Any = None
    config_hash: str = ""
    model: Optional[str] = None
    llm: Optional[LLMConfig] = None

    def build(self, seed: int) -> Optional[ContextBuild]:
        if not self.provider:
            return None
        cls = registry.context_class(self.provider)
        return ContextBuild(provider=self.provider, config=self.config,
                            build_hash=context_build_hash(self.provider, self.config),
                            model=self.model, seed=cls.context_seed(self.config, seed),
                            llm=self.llm, version=cls.version)


def _contexts(config: RunConfig, bench: Any, refused: list[Refusal],
              grid: bool) -> list[_ContextChoice]:
    """The context axis on a benchmark; a provider config that cannot build contexts on it
    is left out, and why is added to `refused` (for every method)."""
    choices = []
    for name in config.contexts:
        if name == registry.NO_CONTEXT:
            choices.append(_ContextChoice())
            continue
        cls = registry.context_class(name)
        model = config.context_model or config.model
        if cls.needs_llm and not (model and config.llm.base_url):
            if grid:
                refused.extend(Refusal(m, bench.name, "", "the context provider needs an LLM: "
                                       "give --model NAME and --base-url URL", name)
                               for m in config.methods)
                continue
            raise UserError(f"context provider {name!r} needs an LLM; give --model NAME (or "
                            f"--context-model NAME) and --base-url URL")
        for context_config in config.context_configs(name):
            problem = cls.problem(context_config, bench)
            if problem:
                changed = changed_fields(context_config)
                refused.extend(Refusal(m, bench.name, "", problem if changed == "default config"
                                       else f"({changed}) {problem}", name)
                               for m in config.methods)
                continue
            choices.append(_ContextChoice(
                provider=name, config=context_config,
                config_hash=context_config_hash(name, context_config),
                model=model if cls.needs_llm else None,
                llm=config.llm if cls.needs_llm else None))
    return choices


def _instance_ids(config: RunConfig, bench: Any, split: str, seed: int) -> tuple[tuple[str, ...], dict]:
    """The stream's instances: the split in its order for `seed`, filtered by --instances,
    cut by --limit."""
    by_id = {inst.instance_id: inst for inst in bench.ordered_instances(split, seed)}
    ids = list(by_id)
    if config.instances is not None:
        missing = [i for i in config.instances if i not in by_id]
        if missing:
            raise unknown_name(f"instance of {bench.name}:{split}", missing[0],
                               ids[:20] + (["..."] if len(ids) > 20 else []))
        wanted = set(config.instances)
        ids = [i for i in ids if i in wanted]
    if config.limit is not None:
        ids = ids[: config.limit]
    return tuple(ids), by_id


def with_llm_settings(stream: StreamSpec, **settings: Any) -> StreamSpec:
    """`stream` whose LLM clients (its method's, its context builder's) have `settings`
    (LLMConfig fields: what the run found out, such as the window or its answers file)."""
    def changed(llm: Optional[LLMConfig]) -> Optional[LLMConfig]:
        return dataclasses.replace(llm, **settings) if llm is not None else None

    build = stream.context_build
    if build is not None:
        build = dataclasses.replace(build, llm=changed(build.llm))
    return dataclasses.replace(stream, llm=changed(stream.llm), context_build=build)
