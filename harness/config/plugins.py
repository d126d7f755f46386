"""Plugins' typed configs: `--method-arg`/`--benchmark-arg`/`--context-arg` values and
spec-file tables turned into each plugin's `Config` dataclass, their hashes, and grids.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import typing
from typing import Any, Optional, Union

from lifebench import registry
from lifebench.api.errors import UserError, unknown_name
from lifebench.api.reporting import config_setting
from lifebench.config.options import coerce

KINDS = ("method", "benchmark", "context")


def config_class(kind: str, name: str) -> type:
    classes = {"method": registry.method_class, "benchmark": registry.benchmark_class,
               "context": registry.context_class}
    return classes[kind](name).Config


def build_config(kind: str, name: str, raw: dict[str, Any]) -> Any:
    """A plugin's typed config (kind "method" or "benchmark") from raw key/values,
    rejecting unknown keys and bad values."""
    cls = config_class(kind, name)
    hints = typing.get_type_hints(cls)
    fields = {f.name for f in dataclasses.fields(cls)}
    values = {}
    for key, value in raw.items():
        if key not in fields:
            valid = ", ".join(sorted(fields)) or "none"
            raise UserError(f"{kind} {name!r} has no argument {key!r}; its arguments: {valid}")
        values[key] = coerce(value, hints[key], f"--{kind}-arg {name}.{key}")
    try:
        return cls(**values)
    except (TypeError, ValueError) as exc:
        raise UserError(f"{kind} {name!r}: bad arguments: {exc}") from None


def short_hash(obj: Any) -> str:
    """12 hex digits of the sha256 of `obj` as canonical JSON (identities of configs, runs)."""
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def method_config_hash(method: str, config: Any, llm_settings: Optional[dict[str, Any]] = None) -> str:
    """The method config's hash; with `llm_settings` (`LLMConfig.answer_settings()`, only
    where they differ from the defaults: default runs keep their hashes)."""
    identity: dict[str, Any] = {"method": method, "config": dataclasses.asdict(config)}
    if llm_settings:
        identity["llm"] = llm_settings
    return short_hash(identity)


def benchmark_config_changes(benchmark: str, config: Any) -> dict[str, Any]:
    """The fields of a benchmark config away from their defaults (what records keep as
    `benchmark_config`): a field added later, at its default, changes nothing recorded."""
    defaults = dataclasses.asdict(config_class("benchmark", benchmark)())
    return {k: v for k, v in dataclasses.asdict(config).items() if defaults.get(k) != v}


def benchmark_config_hash(benchmark: str, config: Any) -> str:
    """Empty for a benchmark's default config, so records of default runs need no hash;
    otherwise the hash of the fields that differ from the defaults, so that a field added
    later (at its default) leaves the hashes of earlier records as they were."""
    changed = benchmark_config_changes(benchmark, config)
    return short_hash({"name": benchmark, "config": changed}) if changed else ""


def parse_plugin_flags(kind: str, items: tuple[str, ...], names: tuple[str, ...],
                       flag: str) -> dict[str, dict[str, Any]]:
    """`KEY=VALUE` (for every named plugin that has KEY) or `NAME.KEY=VALUE`."""
    out: dict[str, dict[str, Any]] = {n: {} for n in names}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f"{flag} {item!r}: expected KEY=VALUE or {kind.upper()}.KEY=VALUE")
        target, dot, field_name = key.rpartition(".")
        if dot and target in names:
            out[target][field_name] = value
            continue
        if dot and "." not in field_name:
            # "foo.bar=1" where foo is not a requested plugin: probably a typo
            raise unknown_name(f"{kind} in {flag}", target, names)
        takers = [n for n in names
                  if key in {f.name for f in dataclasses.fields(config_class(kind, n))}]
        if not takers:
            raise UserError(f"{flag} {key!r}: no requested {kind} ({', '.join(names)}) "
                            f"has that argument")
        for n in takers:
            out[n][key] = value
    return {n: args for n, args in out.items() if args}


def context_config_hash(provider: str, config: Any) -> str:
    """Identifies a context config in records (every field, use-time ones included)."""
    return short_hash({"context": provider, "config": dataclasses.asdict(config)})


def context_build_hash(provider: str, config: Any) -> str:
    """Identifies how a context is built: the config without the fields that change only
    what methods are shown (`use_fields`), so one build serves all their values."""
    skip = set(registry.context_class(provider).use_fields)
    fields = {k: v for k, v in dataclasses.asdict(config).items() if k not in skip}
    return short_hash({"context": provider, "config": fields})


def plugin_configs(kind: str, name: str, args: dict[str, Any],
                   grid: dict[str, tuple[Any, ...]]) -> list[Any]:
    """A plugin's configs: its arguments, times every combination of its grid's values
    (in a fixed order, without duplicates)."""
    keys = list(grid)
    configs: dict[str, Any] = {}
    for combination in itertools.product(*(grid[k] for k in keys)):
        built = build_config(kind, name, {**args, **dict(zip(keys, combination))})
        configs.setdefault(short_hash(dataclasses.asdict(built)), built)
    return list(configs.values())


def changed_fields(config: Any) -> str:
    return config_setting(config) or "default config"


def resolve_splits(benchmarks: tuple[str, ...],
                   requested: Union[tuple[str, ...], dict[str, tuple[str, ...]]]
                   ) -> dict[str, tuple[str, ...]]:
    """Splits per benchmark: `NAME` applies to every benchmark that has it,
    `BENCHMARK:NAME` to one; a table maps benchmark to names."""
    if isinstance(requested, dict):
        unknown = set(requested) - set(benchmarks)
        if unknown:
            raise UserError(f"splits given for {', '.join(sorted(unknown))}, which is not among "
                            f"the requested benchmarks ({', '.join(benchmarks)})")
        return {b: tuple(v) for b, v in requested.items()}
    chosen: dict[str, list[str]] = {}
    for name in requested:
        bench, colon, split = name.partition(":")
        if colon:
            if bench not in benchmarks:
                raise unknown_name("benchmark in --split", bench, benchmarks)
            chosen.setdefault(bench, []).append(split)
            continue
        takers = [b for b in benchmarks if registry.get_benchmark(b).has_split(name)]
        if not takers:
            every = {s for b in benchmarks for s in registry.get_benchmark(b).splits()}
            raise unknown_name("split", name, every)
        for b in takers:
            chosen.setdefault(b, []).append(name)
    return {b: tuple(dict.fromkeys(v)) for b, v in chosen.items()}
