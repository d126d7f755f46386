"""What a run asks for: the grid (`RunConfig`), the LLM endpoint (`LLMConfig`) and how to
execute it (`ExecutionConfig`). Each option is one field (see `options`): its flag, spec
file key, help and default live there, and nowhere else.

Names of plugins are checked against the registry here; whether splits, instances and
plugin arguments fit the benchmarks is checked when the grid is expanded (the runner).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Optional, Union

from lifebench import registry
from lifebench.api.budget import DEFAULT_BUDGET, Budget
from lifebench.api.errors import UserError, unknown_name
from lifebench.api.evaluation import EvaluationProtocol
from lifebench.config.options import check_toml_keys, from_sources, option, split_list
from lifebench.config.plugins import (
    benchmark_config_hash,
    build_config,
    context_config_hash,
    method_config_hash,
    parse_plugin_flags,
    plugin_configs,
    resolve_splits,
    short_hash,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULT_CACHE_PATH = str(Path("results") / "llm-cache.sqlite")


# ---------------------------------------------------------------- value parsers

def parse_names(value: Any, where: str) -> tuple[str, ...]:
    """Names, comma-separated or listed, without repeats, in order."""
    if isinstance(value, dict) or any(not isinstance(v, str) for v in split_list(value)):
        raise UserError(f"{where}: expected names, got {value!r}")
    names = [str(v) for v in split_list(value)]
    return tuple(dict.fromkeys(names))


MAX_INT = 2**63 - 1  # records are stored as 64-bit integers (parquet, SQLite)


def parse_ints(minimum: int):
    def parse(value: Any, where: str) -> tuple[int, ...]:
        if isinstance(value, bool) or isinstance(value, dict):
            raise UserError(f"{where}: expected integers, got {value!r}")
        out = []
        for item in split_list(value if not isinstance(value, int) else [value]):
            try:
                if isinstance(item, bool) or (isinstance(item, float) and not item.is_integer()):
                    raise ValueError
                number = int(item) if isinstance(item, (int, float)) else int(str(item).strip())
            except (TypeError, ValueError):
                raise UserError(f"{where}: {item!r} is not an integer") from None
            if not minimum <= number <= MAX_INT:
                raise UserError(f"{where}: {number} must be from {minimum} to {MAX_INT}")
            out.append(number)
        if not out:
            raise UserError(f"{where}: give at least one value")
        if len(set(out)) != len(out):
            raise UserError(f"{where}: duplicate values in {out}")
        return tuple(out)
    return parse


def parse_budgets(value: Any, where: str) -> tuple[Budget, ...]:
    items = split_list(value if not isinstance(value, (int, float)) else [value])
    try:
        budgets = tuple(Budget.parse(item) for item in items)
    except ValueError as exc:
        raise UserError(f"{where}: {exc}") from None
    if not budgets:
        raise UserError(f"{where}: give at least one budget")
    if len(set(budgets)) != len(budgets):
        raise UserError(f"{where}: duplicate budgets in {[str(b) for b in budgets]}")
    return budgets


def parse_splits(value: Any, where: str) -> Union[tuple[str, ...], dict[str, tuple[str, ...]]]:
    """`NAME` (every requested benchmark that has it) or `BENCHMARK:NAME`, listed; or, in a
    spec file, a table from benchmark to names."""
    if isinstance(value, dict):
        return {str(b): parse_names(v, f"{where}.{b}") for b, v in value.items()}
    names = parse_names(value, where)
    if not names:
        raise UserError(f"{where}: give a split name (leave {where} out for each benchmark's "
                        f"default splits)")
    return names


def parse_tables(value: Any, where: str) -> dict[str, dict[str, Any]]:
    """A table of tables: [NAME] KEY = VALUE."""
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise UserError(f"{where} must be a table of tables: [{where}.NAME] KEY = VALUE")
    return {str(name): dict(args) for name, args in value.items()}


def parse_grid(value: Any, where: str) -> dict[str, dict[str, tuple[Any, ...]]]:
    tables = parse_tables(value, where)
    out: dict[str, dict[str, tuple[Any, ...]]] = {}
    for name, args in tables.items():
        out[name] = {}
        for key, values in args.items():
            values = split_list(values)
            if not values:
                raise UserError(f"{where} {name}.{key}: give a non-empty list of values")
            out[name][key] = tuple(values)
    return out


def parse_text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise UserError(f"{where}: expected text, got {value!r}")
    return value


_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def parse_run_id(value: Any, where: str) -> str:
    """A run id names the default results directory: a plain name, no path."""
    text = parse_text(value, where)
    if not _RUN_ID.fullmatch(text):
        raise UserError(f"{where} {text!r}: use letters, digits, '.', '_' and '-' (at most 128, "
                        f"not starting with '.' or '-'); --out chooses the directory")
    return text


def parse_positive(value: Any, where: str) -> float:
    try:
        if isinstance(value, (bool, dict, list, tuple)):
            raise ValueError
        number = float(str(value).strip())
    except (TypeError, ValueError):
        raise UserError(f"{where}: {value!r} is not a number of seconds") from None
    if not number > 0:
        raise UserError(f"{where} must be positive seconds, got {value}")
    return number


_HARNESS_FIELDS = ("model", "messages", "tools", "stream", "n")


def parse_extra_body(value: Any, where: str) -> str:
    """A JSON object of server options (text on the command line, a table in a spec file),
    kept as canonical JSON text: the config stays hashable and its hash stable."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise UserError(f"{where}: not JSON ({exc}); give an object like "
                            f"'{{\"chat_template_kwargs\": {{\"enable_thinking\": false}}}}'") from None
    if not isinstance(value, dict):
        raise UserError(f"{where}: expected a JSON object of request fields, got {value!r}")
    taken = sorted(set(value) & set(_HARNESS_FIELDS))
    if taken:
        raise UserError(f"{where}: {taken[0]!r} is set by lifebench itself; leave it out")
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def parse_url(value: Any, where: str) -> str:
    text = parse_text(value, where)
    if not text.startswith(("http://", "https://")):
        raise UserError(f"{where} {text!r} is not an http(s) URL")
    return text


# ---------------------------------------------------------------- the configs

@dataclass(frozen=True)
class LLMConfig:
    """How LLM methods reach their model: not part of the records' identity. The API key is
    read, in the worker, from the environment variable named here: it is never part of a
    config, a manifest or a record."""

    base_url: Optional[str] = option(None, parse=parse_url, help="OpenAI-compatible "
                                     "endpoint, e.g. http://localhost:8000/v1")
    api_key_env: str = option("OPENAI_API_KEY", parse=parse_text,
                              help="environment variable holding the API key")
    cache: Literal["rw", "replay", "off"] = option(
        "rw", help="LLM response cache: rw, replay (a miss is an error), off")
    cache_path: str = option(DEFAULT_CACHE_PATH, parse=parse_text, help="LLM cache file")
    timeout_s: float = option(120.0, flag="--llm-timeout", toml="llm_timeout",
                              parse=parse_positive, help="seconds per LLM call attempt, "
                              "connect to last byte")
    max_response_mb: float = option(8.0, flag="--llm-max-response-mb", toml="llm_max_response_mb",
                                    parse=parse_positive, help="largest answer an LLM call "
                                    "reads, in MiB (a larger one is a failed attempt)")
    max_retries: int = option(6, flag="--llm-retries", toml="llm_retries", minimum=0,
                              help="retries of a failed LLM call")
    concurrency: int = option(16, flag="--llm-concurrency", toml="llm_concurrency", minimum=1,
                              help="LLM requests in flight per endpoint in each worker "
                                   "process, or in the whole cluster with --executor ray")
    send_seed: bool = option(True, flag="--no-llm-seed", toml="llm_send_seed",
                             help="do not send the stream's seed with each request (for "
                                  "endpoints that reject the field; it still keys the cache)")
    max_tokens: Optional[int] = option(None, flag="--max-tokens", toml="max_tokens", minimum=1,
                                       help="cap on every role's completion tokens, replacing "
                                            "the methods' own caps (raise it for reasoning "
                                            "models); part of each stream's identity")
    extra_body: Optional[str] = option(None, flag="--llm-extra-body", toml="llm_extra_body",
                                       parse=parse_extra_body, metavar="JSON",
                                       help="a JSON object merged into every request (server "
                                            "options, e.g. chat_template_kwargs); part of each "
                                            "stream's identity")
    tool_protocol: Literal["native", "text"] = option(
        "native", flag="--llm-tool-protocol", toml="llm_tool_protocol",
        help="how methods that call tools offer them: native (the tools field) or text (the "
             "tools described in the prompt, the call read from a JSON reply), for servers "
             "without tool calling; part of the identity of streams of methods that offer tools")
    context_window: Optional[int] = option(
        None, flag="--context-window", toml="context_window", minimum=256,
        help="the model's context window in tokens (default: what the server reports in "
             "/v1/models, e.g. vLLM's max_model_len, or in /props, llama.cpp's n_ctx); prompts "
             "are fitted to it")
    trim: bool = option(True, flag="--no-trim", toml="trim",
                        help="send prompts as the methods built them, even past the context "
                             "window (a refused one ends its episode as context_overflow); "
                             "part of each stream's identity")
    prices: Optional[str] = option(None, parse=parse_text, help='a JSON price table '
                                   '{"model": [in, out]} in USD per million tokens; records '
                                   'then carry cost_usd')
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = option(
        "max_tokens", flag="--llm-max-tokens-field", toml="llm_max_tokens_field",
        help="the request field that carries the completion cap (max_completion_tokens for "
             "endpoints that refuse max_tokens; otherwise learned from the first refusal)")
    # The results directory's answers file (`lifebench.llm.answers`), set by the runner for
    # the streams it runs; and the answers a replay gives (`lifebench verify`). Never a user's.
    answers_path: Optional[str] = option(None, flag=None, toml=None, help="the run's answers file")
    replay_answers: Optional[str] = option(None, flag=None, toml=None,
                                           help="the answers file a replay takes its answers from")
    # The chat template's tokens around the messages (`lifebench.llm.server_tokens.Framing`,
    # encoded), as the run's start learned them from the server: set by the runner, and by a
    # replay from the manifest. Never a user's.
    prompt_framing: Optional[str] = option(None, flag=None, toml=None,
                                           help="the template's framing prompts are fitted with")
    # Backoff between retries: exponential from backoff_s, capped, with full jitter.
    backoff_s: float = option(1.0, flag=None, toml=None, minimum=0, help="first backoff")
    backoff_max_s: float = option(60.0, flag=None, toml=None, minimum=0, help="longest backoff")

    def answer_settings(self, tools: bool = True) -> dict[str, Any]:
        """The settings that change what the model answers, where they differ from the
        defaults: they join the method config's hash (a stream's identity), so records
        made under other settings are never pooled with these. `tools`: whether the method
        offers tools (the tool protocol changes nothing for one that does not)."""
        out: dict[str, Any] = {}
        if self.max_tokens is not None:
            out["max_tokens"] = self.max_tokens
        if self.extra_body is not None:
            out["extra_body"] = json.loads(self.extra_body)
        if self.tool_protocol != "native" and tools:
            out["tool_protocol"] = self.tool_protocol
        if not self.trim:
            out["trim"] = False
        return out


@dataclass(frozen=True)
class RunConfig:
    """The grid to run: methods x benchmarks x splits x seeds x budgets, and what every
    episode gets. Execution (where results go, how many workers) is `ExecutionConfig`."""

    benchmarks: tuple[str, ...] = option((), flag="--benchmark", parse=parse_names, repeat=True,
                                         help="benchmark name (repeatable or comma-separated)")
    splits: Union[tuple[str, ...], dict[str, tuple[str, ...]]] = option(
        (), flag="--split", parse=parse_splits, repeat=True,
        help="split name, or BENCHMARK:SPLIT (repeatable; default: each benchmark's "
             "default splits)")
    methods: tuple[str, ...] = option((), flag="--method", parse=parse_names, repeat=True,
                                      help="method name (repeatable or comma-separated)")
    seeds: tuple[int, ...] = option((0,), parse=parse_ints(0), help="comma-separated seeds")
    trials: Optional[int] = option(None, minimum=1, help="episodes per instance (default: each "
                                   "method's protocol on each benchmark, e.g. Reflexion's 3; "
                                   "see `lifebench list methods`)")
    smoke: bool = option(False, help="prepare at each method's smoke scale (its protocol's "
                                     "smoke arguments: fewer training iterations, a smaller "
                                     "manual); the grid table labels such cells", show_default=False)
    baseline: Optional[str] = option(None, parse=parse_text, help="the method the grid table "
                                     "compares every other with (paired, Holm-corrected)")
    budgets: tuple[Budget, ...] = option(
        (DEFAULT_BUDGET,), flag="--budget", aliases=("--max-steps",), toml="budget",
        toml_aliases=("max_steps",), parse=parse_budgets, metavar="N,...",
        help="step budget(s), comma-separated: a number of steps or `default` (the "
             "benchmark's, which may vary by task); one stream per budget")
    method_args: dict[str, dict[str, Any]] = option(
        flag=None, parse=parse_tables, factory=dict, help="per method, its config values")
    method_grid: dict[str, dict[str, tuple[Any, ...]]] = option(
        flag=None, parse=parse_grid, factory=dict,
        help="per method, argument values to sweep: one config per combination")
    benchmark_args: dict[str, dict[str, Any]] = option(
        flag=None, parse=parse_tables, factory=dict, help="per benchmark, its config values")
    limit: Optional[int] = option(None, minimum=1, help="only the first N instances of each split")
    instances: Optional[tuple[str, ...]] = option(None, parse=parse_names,
                                                  help="only these instance ids (comma-separated)")
    model: Optional[str] = option(None, parse=parse_text, help="model name, for LLM methods")
    timeout_s: float = option(1800.0, flag="--timeout", toml="timeout", parse=parse_positive,
                              help="wall-clock seconds per episode")
    retries: int = option(2, minimum=0, help="retries of an episode after an infrastructure "
                                             "failure")
    allow_unconfined_code: bool = option(
        False, help="let methods that run model-written code run it where the operating system "
                    "cannot confine it (rlimits only); recorded in the manifest",
        show_default=False)
    run_id: Optional[str] = option(None, parse=parse_run_id, help="run id recorded in every "
                                   "record (default: a hash of what determines the records)")
    contexts: tuple[str, ...] = option(
        (registry.NO_CONTEXT,), flag="--context", parse=parse_names, repeat=True,
        help="instance context provider(s) every method is given (see `lifebench list "
             "contexts`); `none,autocontext` runs the grid without and with one")
    context_args: dict[str, dict[str, Any]] = option(
        flag=None, parse=parse_tables, factory=dict, help="per context provider, its config values")
    context_grid: dict[str, dict[str, tuple[Any, ...]]] = option(
        flag=None, parse=parse_grid, factory=dict,
        help="per context provider, argument values to sweep (e.g. its ablations)")
    context_model: Optional[str] = option(None, parse=parse_text, help="model that builds "
                                          "instance contexts (default: --model)")
    llm: LLMConfig = dataclasses.field(default_factory=LLMConfig)
    # Plugin arguments as flags, merged into the tables above by `from_sources`.
    method_arg: tuple[str, ...] = option((), toml=None, repeat=True, metavar="KEY=VALUE",
                                         parse=lambda v, w: tuple(split_list_keep(v)),
                                         help="a method's config value; METHOD.KEY=VALUE "
                                              "targets one method (repeatable)")
    method_grid_arg: tuple[str, ...] = option(
        (), flag="--method-grid", toml=None, repeat=True, metavar="KEY=V1,V2",
        parse=lambda v, w: tuple(split_list_keep(v)),
        help="sweep a method argument: one config per value (or combination of values); "
             "METHOD.KEY=... for one method (repeatable)")
    benchmark_arg: tuple[str, ...] = option(
        (), toml=None, repeat=True, metavar="KEY=VALUE", parse=lambda v, w: tuple(split_list_keep(v)),
        help="a benchmark's config value, e.g. scienceworld.simplification=openDoors (repeatable)")
    context_arg: tuple[str, ...] = option(
        (), toml=None, repeat=True, metavar="KEY=VALUE", parse=lambda v, w: tuple(split_list_keep(v)),
        help="a context provider's config value; PROVIDER.KEY=VALUE targets one (repeatable)")
    context_grid_arg: tuple[str, ...] = option(
        (), flag="--context-grid", toml=None, repeat=True, metavar="KEY=V1,V2",
        parse=lambda v, w: tuple(split_list_keep(v)),
        help="sweep a context provider argument: one context config per value (repeatable)")

    @classmethod
    def from_sources(cls, file_values: Optional[dict[str, Any]] = None, args: Any = None,
                     **given: Any) -> "RunConfig":
        """Defaults < a spec file < flags; plugin flags merged into their tables and
        plugin names checked."""
        return from_sources(cls, file_values, args, **given).with_plugin_flags_merged()

    def with_plugin_flags_merged(self) -> "RunConfig":
        """This config with its plugin flags merged into its tables (flags win), every plugin
        name checked."""
        for b in self.benchmarks:
            registry.benchmark_class(b)
        for m in self.methods:
            registry.method_class(m)
        for c in self.providers:
            registry.context_class(c)
        merged = {}
        for table, flags, kind, names, flag in (
                ("method_args", self.method_arg, "method", self.methods, "--method-arg"),
                ("benchmark_args", self.benchmark_arg, "benchmark", self.benchmarks, "--benchmark-arg"),
                ("method_grid", self.method_grid_arg, "method", self.methods, "--method-grid"),
                ("context_args", self.context_arg, "context", self.providers, "--context-arg"),
                ("context_grid", self.context_grid_arg, "context", self.providers, "--context-grid")):
            current = getattr(self, table)
            unknown = sorted(set(current) - set(names))
            if unknown:
                raise unknown_name(f"{kind} in {table}", unknown[0], names)
            given = parse_plugin_flags(kind, flags, names, flag) if flags else {}
            if table in ("method_grid", "context_grid"):
                given = {n: {k: tuple(split_list(v)) for k, v in args.items()} for n, args in given.items()}
            merged[table] = {n: {**current.get(n, {}), **given.get(n, {})}
                             for n in names if current.get(n) or given.get(n)}
        return dataclasses.replace(self, method_arg=(), benchmark_arg=(), method_grid_arg=(),
                                   context_arg=(), context_grid_arg=(), **merged)

    @property
    def providers(self) -> tuple[str, ...]:
        """The context providers asked for (`--context` without `none`)."""
        return tuple(c for c in self.contexts if c != registry.NO_CONTEXT)

    def protocol(self, method: str, benchmark: str) -> EvaluationProtocol:
        """The method's declared protocol on the benchmark (with its config of this run)."""
        bench = registry.get_benchmark(benchmark, self.benchmark_config(benchmark))
        return registry.method_class(method).protocol(bench)

    def method_configs(self, method: str, benchmark: Optional[str] = None) -> list[Any]:
        """The method's typed configs in this run (one per combination of its grid); on a
        benchmark, over its protocol's arguments there (the run's own win)."""
        args = self.method_args.get(method, {})
        if benchmark is not None:
            args = {**self.protocol(method, benchmark).args(self.smoke), **args}
        return plugin_configs("method", method, args, self.method_grid.get(method, {}))

    def trials_for(self, method: str, benchmark: str) -> int:
        """Episodes per instance: --trials, else the method's protocol on the benchmark."""
        return self.trials if self.trials is not None else self.protocol(method, benchmark).trials

    def context_configs(self, provider: str) -> list[Any]:
        """A context provider's typed configs in this run (one per combination of its grid)."""
        return plugin_configs("context", provider, self.context_args.get(provider, {}),
                              self.context_grid.get(provider, {}))

    def benchmark_config(self, benchmark: str) -> Any:
        return build_config("benchmark", benchmark, self.benchmark_args.get(benchmark, {}))

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["budgets"] = [str(b) if b.is_default else b.steps for b in self.budgets]
        for flags in ("method_arg", "method_grid_arg", "benchmark_arg", "context_arg",
                      "context_grid_arg"):
            data.pop(flags)  # merged into the tables
        return data

    def identity_hash(self) -> str:
        """What determines the records (not timeouts, retries or the endpoint), with plugin
        arguments in their typed form, so a spec file and the same flags give the same id."""
        configs: dict[str, Any] = {}
        for m in self.methods:
            hashes = [method_config_hash(m, c) for c in self.method_configs(m)]
            configs[m] = hashes[0] if len(hashes) == 1 else hashes
        benchmarks = {b: benchmark_config_hash(b, self.benchmark_config(b)) for b in self.benchmarks}
        splits = resolve_splits(self.benchmarks, self.splits)
        if all(b.is_default for b in self.budgets):
            budgets: Any = None  # as the first release hashed "the benchmark's default"
        else:
            budgets = [b.steps if b.steps is not None else str(b) for b in self.budgets]
        identity = {
            "benchmarks": benchmarks, "methods": configs,
            "splits": {b: splits.get(b) for b in self.benchmarks}, "seeds": self.seeds,
            "trials": self._trials_identity(), "budgets": budgets, "limit": self.limit,
            "instances": self.instances, "model": self.model,
        }
        protocol_args = {m: {b: {k: v for k, v in self.protocol(m, b).args(self.smoke).items()
                                 if k not in self.method_args.get(m, {})}  # the run's own win
                             for b in self.benchmarks} for m in self.methods}
        protocol_args = {m: {b: a for b, a in per.items() if a} for m, per in protocol_args.items()}
        if any(protocol_args.values()):  # runs no protocol changes keep their ids
            identity["protocol_args"] = {m: per for m, per in protocol_args.items() if per}
        if self.smoke:
            identity["smoke"] = True
        if self.contexts != (registry.NO_CONTEXT,):  # runs without contexts keep their ids
            identity["contexts"] = {
                c: [context_config_hash(c, k) for k in self.context_configs(c)]
                if c != registry.NO_CONTEXT else None for c in self.contexts}
            identity["context_model"] = self.context_model
        if self.model and self.llm.answer_settings():  # runs with the defaults keep their ids
            identity["llm"] = self.llm.answer_settings()
        return short_hash(identity)

    def _trials_identity(self) -> Any:
        if self.trials is not None:
            return self.trials
        per = {m: {b: self.trials_for(m, b) for b in self.benchmarks} for m in self.methods}
        flat = {t for by_bench in per.values() for t in by_bench.values()}
        return 1 if flat <= {1} else per  # one trial everywhere: the id of `--trials 1`

    @property
    def resolved_run_id(self) -> str:
        return self.run_id or f"run-{self.identity_hash()}"


def run_config_of(spec: dict[str, Any]) -> RunConfig:
    """The RunConfig a run's manifest recorded as its `spec` (`RunConfig.to_dict`), read back
    through the options' own parsers (a value no longer valid is a UserError naming it)."""
    from lifebench.config.options import options

    if not isinstance(spec, dict):
        raise UserError("the manifest's spec is not a table of options")
    values: dict[str, Any] = {}
    for opt in options(RunConfig):
        value: Any = spec
        for name in opt.path:
            value = value.get(name) if isinstance(value, dict) else None
        if opt.toml is not None and value not in (None, [], {}):
            values[opt.toml] = value
    return RunConfig.from_sources(values)


def split_list_keep(value: Any) -> list[str]:
    """Repeated KEY=VALUE flags: each flag is one item (a value may hold commas)."""
    items = value if isinstance(value, (list, tuple)) else [value]
    return [str(item) for item in items]


WORKERS_ENV = "LIFEBENCH_WORKERS"


def default_workers() -> int:
    """`--workers` when not given: `$LIFEBENCH_WORKERS` (a machine's or a suite's own
    default; 0 plays in the calling process), else one worker per core."""
    text = os.environ.get(WORKERS_ENV, "").strip()
    if text:
        if not text.isdigit():
            raise UserError(f"{WORKERS_ENV}={text!r} is not a number of workers: set it to 0 "
                            f"(in the calling process), 1, 2, ... or unset it (one per core)")
        return int(text)
    return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class ExecutionConfig:
    """How and where a run executes; nothing here changes a record."""

    out: Optional[str] = option(None, parse=parse_text,
                                help="results directory (default: results/<run id>)")
    workers: int = option(factory=default_workers, minimum=0, show_default=False,
                          help="worker processes (default: $LIFEBENCH_WORKERS, else cores; 0 runs in "
                               "this process)")
    executor: Literal["local", "ray"] = option(
        "local", help="local, or ray (pip install 'lifebench[ray]')")
    concurrency: int = option(1, minimum=1, help="streams played at once in each worker (for "
                                                 "LLM-bound runs)")
    scheduler: Literal["threads", "greenlets"] = option(
        "threads", help="how a worker interleaves its --concurrency streams: one thread each, "
        "or greenlets of one thread switching where they wait for the LLM (for hundreds of "
        "streams; not for simulators behind a socket, e.g. ScienceWorld)")
    ray_address: Optional[str] = option(None, parse=parse_text, help="with --executor ray: "
                                        "the cluster to join (auto, or ray://HOST:PORT); default: "
                                        "start a local Ray instance with --workers CPUs")
    progress: bool = option(True, flag="--no-progress", toml=None, help="no progress bar",
                            show_default=False)
    context_cache: Optional[str] = option(
        None, parse=parse_text, help="a results directory whose instance contexts this run "
        "reuses instead of building them again (they are copied into --out)")
    trajectories: bool = option(True, flag="--no-trajectories", toml=None,
                                help="do not write trajectories", show_default=False)
    probe: bool = option(True, flag="--no-probe", toml=None, show_default=False,
                         help="do not ask the endpoint whether it does tool calling before the "
                              "first episode (methods that offer tools then use the native "
                              "protocol unless --llm-tool-protocol says otherwise)")

    def __post_init__(self) -> None:
        if self.ray_address and self.executor != "ray":
            raise ValueError("--ray-address is for --executor ray")


# ---------------------------------------------------------------- spec files

# A spec file's table that the run ignores: what `lifebench check --spec` compares how.
CHECK_TABLE = "check"


# A spec file's several runs: [[part]] tables, each a name and the values it lays over the
# file's (`lifebench run` runs them in turn into one results directory).
PARTS_TABLE = "part"


def _spec_toml(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    if not p.is_file():
        raise UserError(f"spec file {str(p)!r} not found; give a TOML file (see docs/cli.md, 'Spec files')")
    try:
        return tomllib.loads(p.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"spec file {str(p)!r} is not valid TOML: {exc}") from None


def load_spec_file(path: str | Path) -> dict[str, Any]:
    """A TOML spec file's values, its keys checked against every option's key; a spec of
    several parts is refused (`lifebench run` and `lifebench grid` run parts)."""
    parts = spec_parts(path)
    if len(parts) > 1 or parts[0][0]:
        raise UserError(f"{Path(path).name} holds {len(parts)} runs ([[{PARTS_TABLE}]]: "
                        f"{', '.join(name for name, _ in parts)}); give it to `lifebench run`, "
                        f"which runs them in turn")
    return parts[0][1]


def spec_parts(path: str | Path) -> list[tuple[str, dict[str, Any]]]:
    """The runs a spec file describes, in file order, as (name, values): its top-level
    values alone (name ""), or, with `[[part]]` tables, each part's values laid over them,
    tables merged key by key (a part's `[part.method_args.react]` adds to the file's
    `[method_args.react]`). Every key is checked against every option's key."""
    data = _spec_toml(path)
    data.pop(CHECK_TABLE, None)
    where = Path(path).name
    parts = data.pop(PARTS_TABLE, None)
    check_toml_keys(data, (RunConfig, ExecutionConfig), where)
    if parts is None:
        return [("", data)]
    if not isinstance(parts, list) or not parts or not all(isinstance(p, dict) for p in parts):
        raise UserError(f"{where}: `{PARTS_TABLE}` must be one or more [[{PARTS_TABLE}]] tables")
    out: list[tuple[str, dict[str, Any]]] = []
    for number, part in enumerate(parts, 1):
        values = dict(part)
        name = values.pop("name", None)
        if not isinstance(name, str) or not name.strip() or name != name.strip():
            raise UserError(f"{where}: [[{PARTS_TABLE}]] number {number} needs a name "
                            f'(name = "textworld", ...)')
        if name in (n for n, _ in out):
            raise UserError(f"{where}: two [[{PARTS_TABLE}]] tables are named {name!r}; "
                            f"give each its own name")
        check_toml_keys(values, (RunConfig, ExecutionConfig), f"{where} [[{PARTS_TABLE}]] {name}")
        out.append((name, _laid_over(data, values)))
    return out


def _laid_over(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in top.items():
        below = merged.get(key)
        merged[key] = _laid_over(below, value) if isinstance(value, dict) and isinstance(below, dict) \
            else value
    return merged


def spec_check_table(path: str | Path) -> dict[str, Any]:
    """The spec file's `[check]` table ({} when it has none)."""
    table = _spec_toml(path).get(CHECK_TABLE, {})
    if not isinstance(table, dict):
        raise UserError(f"{Path(path).name}: `{CHECK_TABLE}` must be a table ([{CHECK_TABLE}])")
    return table
