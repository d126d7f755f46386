"""A run config expanded into streams: the unit of execution.

A stream is one method (with one config) on one benchmark split, with one seed and one
budget: its instances in a fixed order, `trials` episodes each. Every name and value is
checked here, before any episode starts, with one line that names the valid choices.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from typing import Any, Optional

from lifebench import registry
from lifebench.api.budget import Budget
from lifebench.api.errors import UserError, unknown_name
from lifebench.api.records import KEY_FIELDS, RecordKey
from lifebench.config.plugins import (benchmark_config_hash, changed_fields, method_config_hash,
                                      resolve_splits)
from lifebench.config.run import LLMConfig, RunConfig
from lifebench.llm.prices import load_prices


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

    @property
    def stream_id(self) -> str:
        model = f".{_safe(self.model)}" if self.model else ""
        bench = f"{self.benchmark}-{self.benchmark_config_hash}" if self.benchmark_config_hash \
            else self.benchmark
        return (f"{bench}.{self.split}.{self.method}-{self.method_config_hash}{model}"
                f".s{self.seed}.b{self.budget}")

    def budget_at(self, position: int) -> int:
        """The steps the episode at `position` may take."""
        return self.instance_budgets[position // self.trials]

    @property
    def episodes(self) -> list[tuple[str, int]]:
        """(instance_id, trial) in stream order; the position is the episode_index."""
        return [(iid, t) for iid in self.instance_ids for t in range(self.trials)]

    def key_at(self, position: int) -> RecordKey:
        """The record key of the episode at `position`."""
        instance_id, trial = self.episodes[position]
        fields = {"instance_id": instance_id, "trial": trial, "budget_steps": self.budget_at(position)}
        return RecordKey(**{name: fields[name] if name in fields else getattr(self, name)
                            for name in KEY_FIELDS})

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
    if config.llm.prices is not None:
        load_prices(config.llm.prices)
    return splits


def expand(config: RunConfig) -> list[StreamSpec]:
    """The streams of a config, in a fixed order."""
    splits = validate(config)
    run_id = config.resolved_run_id
    streams = []
    skipped: list[str] = []
    for b in config.benchmarks:
        bench_config = config.benchmark_config(b)
        bench_hash = benchmark_config_hash(b, bench_config)
        bench = registry.get_benchmark(b, bench_config)
        bench.check_available()
        for split in splits.get(b) or bench.default_splits:
            for m in config.methods:
                cls = registry.method_class(m)
                needs = cls.needs
                if needs.llm and not (config.model and config.llm.base_url):
                    raise UserError(f"method {m!r} needs an LLM; give --model NAME and --base-url URL")
                if (needs.oracle or needs.teacher) and not bench.has_oracle:
                    # A grid (e.g. make bench's random+oracle on every benchmark) runs the
                    # pairs that can run; a request for this pair alone fails below.
                    what = "oracle" if needs.oracle else "teacher (it has no oracle)"
                    print(f"lifebench: skipping {m} on {b}: {b} has no {what}", file=sys.stderr)
                    continue
                for method_config in config.method_configs(m):
                    problem = cls.stream_problem(method_config, bench, split)
                    if problem:
                        skipped.append(f"{m} ({changed_fields(method_config)}) on {b}:{split}: {problem}")
                        continue
                    for seed in config.seeds:
                        ids, by_id = _instance_ids(config, bench, split, seed)
                        for budget in config.budgets:
                            streams.append(StreamSpec(
                                run_id=run_id, benchmark=b, split=split, method=m,
                                benchmark_config=bench_config, benchmark_config_hash=bench_hash,
                                method_config=method_config,
                                method_config_hash=method_config_hash(m, method_config),
                                model=config.model if needs.llm else None, seed=seed,
                                budget=budget, trials=config.trials, instance_ids=ids,
                                timeout_s=config.timeout_s, retries=config.retries,
                                instance_budgets=tuple(budget.steps_for(bench.budget(by_id[i]))
                                                       for i in ids),
                                llm=config.llm if needs.llm else None))
    if skipped and not streams:
        raise UserError(f"nothing to run: {skipped[0]}")
    if skipped:
        print(f"lifebench: skipping {len(skipped)} method config(s) on splits they do not run "
              f"on, e.g. {skipped[0]}", file=sys.stderr)
    if not streams:
        raise UserError("nothing to run: every requested method needs an oracle (or a teacher, "
                        "which is made from one) that the requested benchmarks do not have "
                        "(see `lifebench list methods`)")
    return streams


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
