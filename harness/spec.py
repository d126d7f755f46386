"""Run specifications: what to run (RunSpec) and the streams it expands into (StreamSpec).

A RunSpec is the grid methods × benchmarks × splits × seeds × budgets, read from CLI flags
or a TOML file and validated here, so every bad value fails before any episode starts with
one line that names the valid choices.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import sys
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from harness.errors import UserError, unknown_name
from harness import registry

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULT_TIMEOUT_S = 1800.0
DEFAULT_RETRIES = 2


@dataclass(frozen=True)
class LLMRunSettings:
    """The endpoint and cache of a run's LLM methods. The API key is read, in the worker,
    from the environment variable named here: it is never part of a spec or a record."""

    base_url: Optional[str] = None
    api_key_env: str = "OPENAI_API_KEY"
    cache: str = "rw"
    cache_path: str = str(Path("results") / "llm-cache.sqlite")
    timeout_s: float = 120.0
    max_retries: int = 6
    concurrency: int = 16
    # JSON {"model": [USD per 1M input tokens, USD per 1M output tokens]}: records get a cost
    prices: Optional[str] = None


@dataclass(frozen=True)
class RunSpec:
    """The grid to run. Execution options (out dir, workers) are not part of it."""

    benchmarks: tuple[str, ...]
    methods: tuple[str, ...]
    # Per benchmark; a benchmark missing here runs its default splits.
    splits: dict[str, tuple[str, ...]] = field(default_factory=dict)
    seeds: tuple[int, ...] = (0,)
    trials: int = 1
    # None: each benchmark's default budget.
    budgets: Optional[tuple[int, ...]] = None
    method_args: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Per method, arguments to sweep: {"how2": {"strategy": ("base", "how2")}} runs one
    # config per combination (on top of method_args).
    method_grid: dict[str, dict[str, tuple[Any, ...]]] = field(default_factory=dict)
    # Per benchmark, e.g. {"scienceworld": {"simplification": "openDoors"}}.
    benchmark_args: dict[str, dict[str, Any]] = field(default_factory=dict)
    limit: Optional[int] = None
    instances: Optional[tuple[str, ...]] = None
    model: Optional[str] = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    retries: int = DEFAULT_RETRIES
    run_id: Optional[str] = None
    # How LLM methods reach their model; not part of the records' identity.
    llm: "LLMRunSettings" = field(default_factory=lambda: LLMRunSettings())

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def identity_hash(self) -> str:
        """What determines the records (not timeouts or retries), with method arguments
        in their typed form, so a TOML file and the same flags give the same run id."""
        configs: dict[str, Any] = {}
        for m in self.methods:
            hashes = [method_config_hash(m, c) for c in method_configs(self, m)]
            configs[m] = hashes[0] if len(hashes) == 1 else hashes
        benchmarks = {b: benchmark_config_hash(b, build_config("benchmark", b,
                                                               self.benchmark_args.get(b, {})))
                      for b in self.benchmarks}
        return _short_hash({
            "benchmarks": benchmarks, "methods": configs,
            "splits": {b: self.splits.get(b) for b in self.benchmarks}, "seeds": self.seeds,
            "trials": self.trials, "budgets": self.budgets, "limit": self.limit,
            "instances": self.instances, "model": self.model,
        })

    @property
    def resolved_run_id(self) -> str:
        return self.run_id or f"run-{self.identity_hash()}"


@dataclass(frozen=True)
class StreamSpec:
    """One method on one benchmark split with one seed and budget: the unit of execution.

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
    # None: each instance's default budget (`Benchmark.budget`), e.g. ScienceWorld's 37/70.
    budget_steps: Optional[int]
    trials: int
    instance_ids: tuple[str, ...]
    timeout_s: float
    retries: int
    # The budget of each instance, aligned with instance_ids.
    instance_budgets: tuple[int, ...] = ()
    # Set for methods that need an LLM.
    llm: Optional[LLMRunSettings] = None

    @property
    def stream_id(self) -> str:
        model = f".{_safe(self.model)}" if self.model else ""
        bench = f"{self.benchmark}-{self.benchmark_config_hash}" if self.benchmark_config_hash \
            else self.benchmark
        return (f"{bench}.{self.split}.{self.method}-{self.method_config_hash}{model}"
                f".s{self.seed}.b{self.budget_steps or 'default'}")

    def budget_at(self, position: int) -> int:
        return self.instance_budgets[position // self.trials]

    @property
    def episodes(self) -> list[tuple[str, int]]:
        """(instance_id, trial) in stream order; the position is the episode_index."""
        return [(iid, t) for iid in self.instance_ids for t in range(self.trials)]


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def _short_hash(obj: Any) -> str:
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


# ---------------------------------------------------------------- method configs

def _coerce(value: Any, annotation: Any, where: str) -> Any:
    """Coerce a CLI string or TOML value to a config field's declared type."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
            if type(None) in args:
                return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, where)
            except UserError as exc:
                errors.append(str(exc))
        raise UserError(errors[0] if errors else f"{where}: bad value {value!r}")
    if origin is typing.Literal:
        for choice in args:
            if str(choice) == str(value):
                return choice
        raise UserError(f"{where}: {value!r} is not one of {', '.join(map(str, args))}")
    if annotation is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise UserError(f"{where}: expected true or false, got {value!r}")
    if annotation in (int, float):
        try:
            if isinstance(value, bool):
                raise ValueError
            if annotation is int and isinstance(value, float):
                return _exact_int(value)
            return annotation(str(value).strip())
        except (TypeError, ValueError):
            raise UserError(f"{where}: expected {annotation.__name__}, got {value!r}") from None
    if annotation is str:
        return str(value)
    if origin in (list, tuple) and isinstance(value, (list, tuple, str)):
        items = value.split(",") if isinstance(value, str) else value
        inner = args[0] if args else str
        return tuple(_coerce(v, inner, where) for v in items)
    return value


def _exact_int(value: float) -> int:
    if not float(value).is_integer():
        raise ValueError
    return int(value)


def _config_class(kind: str, name: str) -> type:
    cls = registry.method_class(name) if kind == "method" else registry.benchmark_class(name)
    return cls.Config


def build_config(kind: str, name: str, raw: dict[str, Any]) -> Any:
    """A plugin's typed config (kind "method" or "benchmark") from raw key/values,
    rejecting unknown keys and bad values."""
    config_cls = _config_class(kind, name)
    hints = typing.get_type_hints(config_cls)
    fields = {f.name: f for f in dataclasses.fields(config_cls)}
    values = {}
    for key, value in raw.items():
        if key not in fields:
            valid = ", ".join(sorted(fields)) or "none"
            raise UserError(f"{kind} {name!r} has no argument {key!r}; its arguments: {valid}")
        values[key] = _coerce(value, hints[key], f"--{kind}-arg {name}.{key}")
    try:
        return config_cls(**values)
    except (TypeError, ValueError) as exc:
        raise UserError(f"{kind} {name!r}: bad arguments: {exc}") from None


def build_method_config(method: str, raw: dict[str, Any]) -> Any:
    return build_config("method", method, raw)


def config_hash(name: str, config: Any) -> str:
    return _short_hash({"name": name, "config": dataclasses.asdict(config)})


def method_config_hash(method: str, config: Any) -> str:
    return _short_hash({"method": method, "config": dataclasses.asdict(config)})


def benchmark_config_hash(benchmark: str, config: Any) -> str:
    """Empty for a benchmark's default config, so records of default runs need no hash."""
    if config == _config_class("benchmark", benchmark)():
        return ""
    return config_hash(benchmark, config)


def parse_plugin_args(kind: str, items: list[str], names: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """`KEY=VALUE` (for every named plugin that has KEY) or `NAME.KEY=VALUE`."""
    flag = f"--{kind}-arg"
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
                  if key in {f.name for f in dataclasses.fields(_config_class(kind, n))}]
        if not takers:
            raise UserError(f"{flag} {key!r}: no requested {kind} ({', '.join(names)}) "
                            f"has that argument")
        for n in takers:
            out[n][key] = value
    return out


def parse_method_args(items: list[str], methods: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    return parse_plugin_args("method", items, methods)


def parse_method_grid(items: list[str], methods: tuple[str, ...]) -> dict[str, dict[str, tuple[Any, ...]]]:
    """`--method-grid KEY=V1,V2` (or NAME.KEY=...): the values to sweep."""
    parsed = parse_plugin_args("method", items, methods)
    return {m: {k: tuple(v.strip() for v in str(values).split(",") if v.strip())
                for k, values in args.items()} for m, args in parsed.items() if args}


def _changed_fields(config: Any) -> str:
    default = type(config)()
    changed = [f"{f.name}={getattr(config, f.name)}" for f in dataclasses.fields(config)
               if getattr(config, f.name) != getattr(default, f.name)]
    return ", ".join(changed) or "default config"


def method_configs(spec: "RunSpec", method: str) -> list[Any]:
    """The method's configs in the run: method_args, times every combination of its
    method_grid values (in a fixed order, without duplicates)."""
    base = spec.method_args.get(method, {})
    grid = spec.method_grid.get(method, {})
    for key, values in grid.items():
        if not isinstance(values, (list, tuple)) or not values:
            raise UserError(f"method_grid {method}.{key}: give a non-empty list of values")
    keys = list(grid)
    configs: dict[str, Any] = {}
    for combination in itertools.product(*(grid[k] for k in keys)):
        config = build_method_config(method, {**base, **dict(zip(keys, combination))})
        configs.setdefault(method_config_hash(method, config), config)
    return list(configs.values())


# ---------------------------------------------------------------- building and validating

def parse_int_list(text: str | list | tuple | int, what: str, minimum: int) -> tuple[int, ...]:
    items = text if isinstance(text, (list, tuple)) else [text] if isinstance(text, int) \
        else [t for t in str(text).split(",") if t.strip()]
    out = []
    for item in items:
        try:
            if isinstance(item, bool):
                raise ValueError
            value = int(str(item).strip())
        except ValueError:
            raise UserError(f"{what}: {item!r} is not an integer") from None
        if value < minimum:
            raise UserError(f"{what}: {value} must be at least {minimum}")
        out.append(value)
    if not out:
        raise UserError(f"{what}: give at least one value")
    if len(set(out)) != len(out):
        raise UserError(f"{what}: duplicate values in {list(out)}")
    return tuple(out)


def split_names(text: str | list | tuple | None) -> tuple[str, ...]:
    if text is None:
        return ()
    items = text if isinstance(text, (list, tuple)) else [text]
    names: list[str] = []
    for item in items:
        names.extend(t.strip() for t in str(item).split(",") if t.strip())
    return tuple(dict.fromkeys(names))


def resolve_splits(benchmarks: tuple[str, ...], split_items: Any) -> dict[str, tuple[str, ...]]:
    """Splits per benchmark from `--split` values: `NAME` applies to every benchmark that
    has it, `BENCHMARK:NAME` to one; a table (TOML) maps benchmark to names."""
    if isinstance(split_items, dict):
        unknown = set(split_items) - set(benchmarks)
        if unknown:
            raise UserError(f"splits given for {', '.join(sorted(unknown))}, which is not among "
                            f"the requested benchmarks ({', '.join(benchmarks)})")
        return {b: split_names(v) for b, v in split_items.items()}
    chosen: dict[str, list[str]] = {}
    for name in split_names(split_items):
        bench, colon, split = name.partition(":")
        if colon:
            if bench not in benchmarks:
                raise unknown_name("benchmark in --split", bench, benchmarks)
            chosen.setdefault(bench, []).append(split)
            continue
        takers = [b for b in benchmarks if registry.get_benchmark(b).has_split(name)]
        if not takers:
            all_splits = {f"{b}:{s}" for b in benchmarks for s in registry.get_benchmark(b).splits()}
            raise unknown_name("split", name, {s.partition(":")[2] for s in all_splits})
        for b in takers:
            chosen.setdefault(b, []).append(name)
    return {b: tuple(dict.fromkeys(v)) for b, v in chosen.items()}


def validate(spec: RunSpec) -> None:
    """Check every name and value; raises UserError with the fix."""
    if not spec.benchmarks:
        raise UserError("no benchmark given; use --benchmark NAME (see `lifebench list benchmarks`)")
    if not spec.methods:
        raise UserError("no method given; use --method NAME (see `lifebench list methods`)")
    unknown = set(spec.benchmark_args) - set(spec.benchmarks)
    if unknown:
        raise unknown_name("benchmark in benchmark_args", sorted(unknown)[0], spec.benchmarks)
    for b in spec.benchmarks:
        bench = registry.get_benchmark(b, build_config("benchmark", b, spec.benchmark_args.get(b, {})))
        for s in spec.splits.get(b, ()):
            bench.check_split(s)
    for m in spec.methods:
        registry.method_class(m)
        method_configs(spec, m)
    for table in ("method_args", "method_grid"):
        unknown = set(getattr(spec, table)) - set(spec.methods)
        if unknown:
            raise unknown_name(f"method in {table}", sorted(unknown)[0], spec.methods)
    if spec.trials < 1:
        raise UserError(f"--trials must be at least 1, got {spec.trials}")
    if spec.limit is not None and spec.limit < 1:
        raise UserError(f"--limit must be at least 1, got {spec.limit}")
    if spec.budgets is not None and any(b < 1 for b in spec.budgets):
        raise UserError(f"--max-steps must be at least 1, got {list(spec.budgets)}")
    if not spec.timeout_s > 0:
        raise UserError(f"--timeout must be positive seconds, got {spec.timeout_s}")
    if spec.retries < 0:
        raise UserError(f"--retries must be 0 or more, got {spec.retries}")
    if any(s < 0 for s in spec.seeds):
        raise UserError(f"--seeds must be non-negative, got {list(spec.seeds)}")
    from harness.llm.cache import MODES

    if spec.llm.cache not in MODES:
        raise UserError(f"--cache {spec.llm.cache!r}: choose from {', '.join(MODES)}")
    if spec.llm.base_url is not None and not spec.llm.base_url.startswith(("http://", "https://")):
        raise UserError(f"--base-url {spec.llm.base_url!r} is not an http(s) URL")
    if spec.llm.concurrency < 1 or not spec.llm.timeout_s > 0:
        raise UserError("--llm-concurrency must be at least 1 and --llm-timeout positive")
    if spec.llm.prices is not None:
        load_prices(spec.llm.prices)


def load_prices(path: str) -> dict[str, tuple[float, float]]:
    """A price table: {"model": [input, output]} in USD per million tokens."""
    try:
        table = json.loads(Path(path).read_text())
        return {str(m): (float(p[0]), float(p[1])) for m, p in table.items()}
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        raise UserError(f"--prices {path}: expected a JSON file like "
                        f'{{"model-name": [0.15, 0.60]}} (USD per million input, output tokens)') from None


def expand(spec: RunSpec) -> list[StreamSpec]:
    """The streams of a validated spec, in a fixed order."""
    validate(spec)
    run_id = spec.resolved_run_id
    streams = []
    skipped: list[str] = []
    for b in spec.benchmarks:
        bench_config = build_config("benchmark", b, spec.benchmark_args.get(b, {}))
        bench_hash = benchmark_config_hash(b, bench_config)
        bench = registry.get_benchmark(b, bench_config)
        bench.check_available()
        splits = spec.splits.get(b) or bench.default_splits
        for split in splits:
            by_id = {inst.instance_id: inst for inst in bench.instances(split)}
            ids = list(by_id)
            if spec.instances is not None:
                known = set(ids)
                missing = [i for i in spec.instances if i not in known]
                if missing:
                    raise unknown_name(f"instance of {b}:{split}", missing[0], ids[:20] +
                                       (["..."] if len(ids) > 20 else []))
                wanted = set(spec.instances)
                ids = [i for i in ids if i in wanted]
            if spec.limit is not None:
                ids = ids[: spec.limit]
            for m in spec.methods:
                cls = registry.method_class(m)
                needs = cls.needs
                if needs.llm and not (spec.model and spec.llm.base_url):
                    raise UserError(f"method {m!r} needs an LLM; give --model NAME and --base-url URL")
                if (needs.oracle or needs.teacher) and not bench.has_oracle:
                    # A grid (e.g. make bench's random+oracle on every benchmark) runs the
                    # pairs that can run; a request for this pair alone fails below.
                    what = "oracle" if needs.oracle else "teacher (it has no oracle)"
                    print(f"lifebench: skipping {m} on {b}: {b} has no {what}", file=sys.stderr)
                    continue
                for config in method_configs(spec, m):
                    problem = cls.stream_problem(config, bench, split)
                    if problem:
                        skipped.append(f"{m} ({_changed_fields(config)}) on {b}:{split}: {problem}")
                        continue
                    chash = method_config_hash(m, config)
                    for seed in spec.seeds:
                        for budget in spec.budgets or (None,):
                            budgets = tuple(budget or bench.budget(by_id[i]) for i in ids)
                            streams.append(StreamSpec(
                                run_id=run_id, benchmark=b, split=split, method=m,
                                benchmark_config=bench_config, benchmark_config_hash=bench_hash,
                                method_config=config, method_config_hash=chash,
                                model=spec.model if needs.llm else None, seed=seed,
                                budget_steps=budget, trials=spec.trials, instance_ids=tuple(ids),
                                timeout_s=spec.timeout_s, retries=spec.retries,
                                instance_budgets=budgets, llm=spec.llm if needs.llm else None))
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


# ---------------------------------------------------------------- TOML spec files

LLM_KEYS = {"base_url": "base_url", "api_key_env": "api_key_env", "cache": "cache",
            "cache_path": "cache_path", "llm_timeout": "timeout_s", "llm_retries": "max_retries",
            "llm_concurrency": "concurrency", "prices": "prices"}

SPEC_KEYS = {
    "run_id", "benchmarks", "splits", "methods", "method_args", "method_grid", "benchmark_args",
    "seeds", "trials",
    "max_steps", "limit", "instances", "model", "timeout", "retries", *LLM_KEYS,
    # execution options, allowed in the file for convenience
    "out", "workers", "executor", "concurrency", "ray_address",
}


def load_toml(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    if not p.is_file():
        raise UserError(f"spec file {str(p)!r} not found; give a TOML file (see README, 'Spec files')")
    try:
        data = tomllib.loads(p.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"spec file {str(p)!r} is not valid TOML: {exc}") from None
    unknown = set(data) - SPEC_KEYS
    if unknown:
        raise unknown_name(f"key in {p.name}", sorted(unknown)[0], SPEC_KEYS)
    return data


def spec_from_values(values: dict[str, Any]) -> RunSpec:
    """A RunSpec from merged TOML/CLI values (CLI already split into lists)."""
    benchmarks = split_names(values.get("benchmarks"))
    methods = split_names(values.get("methods"))
    for b in benchmarks:
        registry.benchmark_class(b)
    for m in methods:
        registry.method_class(m)
    method_args = values.get("method_args") or {}
    method_grid = values.get("method_grid") or {}
    benchmark_args = values.get("benchmark_args") or {}
    for key, table in (("method_args", method_args), ("method_grid", method_grid),
                       ("benchmark_args", benchmark_args)):
        if not isinstance(table, dict) or not all(isinstance(v, dict) for v in table.values()):
            raise UserError(f"{key} must be a table of tables: [{key}.NAME] KEY = VALUE")
    budgets = values.get("max_steps")
    limit = values.get("limit")
    instances = values.get("instances")
    try:
        timeout = float(values.get("timeout", DEFAULT_TIMEOUT_S))
    except (TypeError, ValueError):
        raise UserError(f"--timeout: {values.get('timeout')!r} is not a number of seconds") from None
    return RunSpec(
        benchmarks=benchmarks,
        methods=methods,
        splits=resolve_splits(benchmarks, values.get("splits")),
        seeds=parse_int_list(values.get("seeds", 0), "--seeds", 0),
        trials=parse_int_list(values.get("trials", 1), "--trials", 1)[0],
        budgets=parse_int_list(budgets, "--max-steps", 1) if budgets is not None else None,
        method_args={m: dict(a) for m, a in method_args.items()},
        method_grid={m: {k: tuple(v) if isinstance(v, (list, tuple)) else v for k, v in a.items()}
                     for m, a in method_grid.items()},
        benchmark_args={b: dict(a) for b, a in benchmark_args.items()},
        limit=parse_int_list(limit, "--limit", 1)[0] if limit is not None else None,
        instances=split_names(instances) if instances is not None else None,
        model=values.get("model"),
        timeout_s=timeout,
        retries=parse_int_list(values.get("retries", DEFAULT_RETRIES), "--retries", 0)[0],
        run_id=values.get("run_id"),
        llm=llm_settings(values),
    )


def llm_settings(values: dict[str, Any]) -> LLMRunSettings:
    given = {field_name: values[key] for key, field_name in LLM_KEYS.items()
             if values.get(key) is not None}
    typed = typing.get_type_hints(LLMRunSettings)
    for name, value in given.items():
        annotation = typed[name]
        inner = [a for a in typing.get_args(annotation) if a is not type(None)]
        given[name] = _coerce(value, inner[0] if inner else annotation, f"--{name.replace('_', '-')}")
    return LLMRunSettings(**given)
