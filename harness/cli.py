"""The `lifebench` command line."""

from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
from pathlib import Path
from typing import Any, NoReturn, Optional

from harness.errors import UserError, unknown_name

EXIT_USER_ERROR = 2
EXIT_INCOMPLETE = 1


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not a usage dump
        self.exit(EXIT_USER_ERROR, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def _list(args: argparse.Namespace) -> int:
    from harness import registry

    if args.what == "benchmarks":
        for name in registry.benchmark_names():
            if args.available:
                reason = _unavailable(name)
                if reason:
                    print(f"lifebench: skipping {name}: {reason}", file=sys.stderr)
                    continue
            print(name)
    elif args.what == "methods":
        for name in registry.method_names():
            try:
                cls = registry.method_class(name)
            except UserError as exc:  # one broken plugin must not hide the others
                print(f"{name}  (unavailable: {exc})")
                continue
            needs = [k for k, v in dataclasses.asdict(cls.needs).items() if v]
            print(f"{name}" + (f"  (needs: {', '.join(needs)})" if needs else ""))
    else:
        names = [args.benchmark] if args.benchmark else registry.benchmark_names()
        for name in names:
            try:
                bench = registry.get_benchmark(name)
            except UserError as exc:
                print(f"{name}  (unavailable: {exc})")
                continue
            for split in bench.splits():
                marker = " (default)" if split in bench.default_splits else ""
                print(f"{name}:{split}{marker}")
    return 0


def _unavailable(name: str) -> Optional[str]:
    """Why a benchmark cannot run its default splits here (package or data missing)."""
    from harness import registry

    try:
        bench = registry.get_benchmark(name)
        bench.check_available()
        for split in bench.default_splits:
            bench.instances(split)
    except UserError as exc:
        return str(exc)
    return None


def _splits_make(args: argparse.Namespace) -> int:
    from harness import registry
    from harness.spec import parse_int_list

    makers = []
    for name in registry.benchmark_names():
        try:
            if args.kind in registry.benchmark_class(name).split_generators:
                makers.append(name)
        except UserError:  # a broken plugin cannot generate anything
            continue
    if not makers:
        kinds = set()
        for name in registry.benchmark_names():
            try:
                kinds.update(registry.benchmark_class(name).split_generators)
            except UserError:
                continue
        raise unknown_name("split generator", args.kind, kinds)
    n = parse_int_list(args.n, "--n", 1)[0]
    seed = parse_int_list(args.seed, "--seed", 0)[0]
    bench = registry.get_benchmark(makers[0])
    bench.check_available()
    split = bench.generate_split(args.kind, n, seed)
    count = len(bench.instances(split))
    print(f"{makers[0]}:{split}: {count} instances (run it with `--benchmark {makers[0]} "
          f"--split {split}`)")
    return 0


def _spec_values(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    """Merge a TOML spec file and CLI flags (flags win). Returns (spec values, options)."""
    from harness.spec import load_toml

    values: dict[str, Any] = load_toml(args.spec) if args.spec else {}
    flag_map = {"benchmark": "benchmarks", "method": "methods", "split": "splits",
                "seeds": "seeds", "trials": "trials", "max_steps": "max_steps", "limit": "limit",
                "instances": "instances", "model": "model", "timeout": "timeout",
                "retries": "retries", "run_id": "run_id", "base_url": "base_url",
                "api_key_env": "api_key_env", "cache": "cache", "cache_path": "cache_path",
                "llm_timeout": "llm_timeout", "llm_retries": "llm_retries",
                "llm_concurrency": "llm_concurrency", "prices": "prices"}
    for flag, key in flag_map.items():
        value = getattr(args, flag)
        if value is not None and value != []:
            values[key] = value
    keys = ("out", "workers", "executor", "concurrency", "ray_address")
    options = {k: values.pop(k) for k in keys if k in values}
    for key in keys:
        if getattr(args, key) is not None:
            options[key] = getattr(args, key)
    return values, options


def _run(args: argparse.Namespace) -> int:
    from harness.run import RunOptions, default_workers, execute, failure_hint, summary_line
    from harness.spec import parse_plugin_args, spec_from_values

    values, options = _spec_values(args)
    spec = spec_from_values(values)
    for kind, items, names, field_name in (
            ("method", args.method_arg, spec.methods, "method_args"),
            ("benchmark", args.benchmark_arg, spec.benchmarks, "benchmark_args")):
        if items:
            given = parse_plugin_args(kind, items, names)
            current = getattr(spec, field_name)
            merged = {n: {**current.get(n, {}), **given.get(n, {})} for n in names}
            spec = dataclasses.replace(spec, **{field_name: {n: a for n, a in merged.items() if a}})
    if args.method_grid:
        from harness.spec import parse_method_grid

        given_grid = parse_method_grid(args.method_grid, spec.methods)
        spec = dataclasses.replace(spec, method_grid={
            n: {**spec.method_grid.get(n, {}), **given_grid.get(n, {})}
            for n in spec.methods if spec.method_grid.get(n) or given_grid.get(n)})
    out = Path(options.get("out") or Path("results") / spec.resolved_run_id)
    try:
        workers = int(options.get("workers", default_workers()))
    except (TypeError, ValueError):
        raise UserError(f"--workers: {options.get('workers')!r} is not an integer") from None
    try:
        concurrency = int(options.get("concurrency", 1))
    except (TypeError, ValueError):
        raise UserError(f"--concurrency: {options.get('concurrency')!r} is not an integer") from None
    run_options = RunOptions(out=out, workers=workers, executor=options.get("executor", "local"),
                             progress=not args.no_progress, trajectories=not args.no_trajectories,
                             concurrency=concurrency, ray_address=options.get("ray_address"))
    if run_options.ray_address and run_options.executor != "ray":
        raise UserError("--ray-address is for --executor ray")
    outcome = execute(spec, run_options)
    print(summary_line(outcome, out))
    hint = failure_hint(outcome)
    if hint:
        print(f"error: {hint}", file=sys.stderr)
        return EXIT_INCOMPLETE
    return 0


def _cache(args: argparse.Namespace) -> int:
    from harness.llm.cache import ResponseCache

    path = Path(args.path)
    if not path.exists():
        raise UserError(f"no LLM cache at {path}; give its path with --path")
    cache = ResponseCache(path)
    if args.action == "stats":
        stats = cache.stats()
        print(f"{stats['path']}: {stats['entries']} responses of {stats['models']} model(s), "
              f"{stats['bytes'] / 2**20:.1f} MiB")
    else:
        print(f"removed {cache.clear()} responses from {path}")
    return 0


def _leaderboard(args: argparse.Namespace) -> int:
    from leaderboard.report import leaderboard_report

    plots = args.plots or (str(Path(args.output).parent) if args.output else None)
    text = leaderboard_report(args.dirs, fmt=args.format, trials=args.trials,
                              plots=None if args.no_plots else plots)
    _write_output(args.output, text)
    print(text)
    return 0


def _write_output(path: Optional[str], text: str) -> None:
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text + "\n")


def _records(dirs: list[str]) -> list:
    from harness.results import load_records

    records = load_records(dirs)
    if not records:
        raise UserError(f"no episode records in {', '.join(dirs)}; run `lifebench run ... --out DIR` first")
    return records


def _alpha(text: str) -> float:
    try:
        alpha = float(text)
    except ValueError:
        raise UserError(f"--alpha {text!r} is not a number") from None
    if not 0 < alpha < 1:
        raise UserError(f"--alpha must be between 0 and 1, got {alpha}")
    return alpha


def _compare(args: argparse.Namespace) -> int:
    import json

    from leaderboard.report import render

    records = _records(args.dirs)
    metrics = args.metric or ["success"]
    if args.anova:
        from leaderboard.anova import two_way_anova

        factors = [f.strip() for f in args.anova.split(",") if f.strip()]
        if len(factors) != 2:
            raise UserError(f"--anova takes two factors, e.g. extra.how2_strategy,extra.how2_teacher; got {args.anova!r}")
        rows = [row for m in metrics for row in two_way_anova(records, m, (factors[0], factors[1]), args.trials)]
        if not rows:
            raise UserError(f"no group has at least two levels of both {factors[0]} and {factors[1]}")
        if args.format == "json":
            text = json.dumps(rows, indent=2)
        else:
            headers = list(rows[0])
            text = render(headers, [[_cell(row[h]) for h in headers] for row in rows], args.format)
    else:
        from leaderboard.compare import compare, comparison_rows

        comparisons = compare(records, metrics, correction=args.correction, trials=args.trials)
        if not comparisons:
            raise UserError("nothing to compare: each benchmark split holds results of one arm "
                            "only (compare needs two methods, configs or models on it)")
        if args.format == "json":
            text = json.dumps([c.to_json() for c in comparisons], indent=2)
        else:
            headers, rows = comparison_rows(comparisons)
            text = render(headers, rows, args.format)
    _write_output(args.output, text)
    print(text)
    return 0


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "—" if value is None else str(value)


def _check(args: argparse.Namespace) -> int:
    from leaderboard.check import DEFAULT_METRICS, regression_check

    report = regression_check(_records([args.baseline]), _records([args.candidate]),
                              metrics=tuple(args.metric or DEFAULT_METRICS),
                              alpha=_alpha(args.alpha), correction=args.correction)
    print("\n".join(report.lines()))
    return EXIT_INCOMPLETE if report.failed else 0


def _export(args: argparse.Namespace) -> int:
    from leaderboard.export import export_hf

    path = export_hf(_records(args.dirs), args.hf)
    print(f"wrote a Hugging Face dataset to {path} (load it with datasets.load_dataset({str(path)!r}))")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="lifebench", description="Run LLM planning agents on planning "
                     "benchmarks under identical conditions, and compare them.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p_list = sub.add_parser("list", help="list installed benchmarks, methods or splits")
    p_list.add_argument("what", choices=["benchmarks", "methods", "splits"])
    p_list.add_argument("--benchmark", help="only this benchmark's splits")
    p_list.add_argument("--available", action="store_true",
                        help="benchmarks only: those whose package and data are here (the "
                             "others are named on stderr with what is missing)")
    p_list.set_defaults(func=_list)

    p_splits = sub.add_parser("splits", help="generate splits (benchmarks that can)")
    splits_sub = p_splits.add_subparsers(dest="action", required=True, parser_class=_Parser)
    p_make = splits_sub.add_parser("make", help="generate a split offline, reproducibly")
    p_make.add_argument("kind", help="what to generate, e.g. textworld-cooking")
    p_make.add_argument("--n", required=True, help="number of instances")
    p_make.add_argument("--seed", default="0", help="generation seed (default 0)")
    p_make.set_defaults(func=_splits_make)

    p_run = sub.add_parser("run", help="run methods on benchmarks (resumes into an existing --out)")
    p_run.add_argument("spec", nargs="?", help="a TOML spec file; flags override its values")
    p_run.add_argument("--benchmark", action="append", default=[],
                       help="benchmark name (repeatable or comma-separated)")
    p_run.add_argument("--split", action="append", default=[],
                       help="split name, or BENCHMARK:SPLIT (repeatable; default: the "
                            "benchmark's default splits)")
    p_run.add_argument("--method", action="append", default=[],
                       help="method name (repeatable or comma-separated)")
    p_run.add_argument("--seeds", help="comma-separated seeds (default 0)")
    p_run.add_argument("--trials", help="episodes per instance (default 1)")
    p_run.add_argument("--max-steps", dest="max_steps",
                       help="step budget(s), comma-separated (default: the benchmark's)")
    p_run.add_argument("--method-arg", action="append", default=[], metavar="KEY=VALUE",
                       help="a method's config value; METHOD.KEY=VALUE targets one method")
    p_run.add_argument("--method-grid", action="append", default=[], metavar="KEY=V1,V2",
                       help="sweep a method argument: one config per value (or combination "
                            "of values); NAME.KEY=... for one method")
    p_run.add_argument("--benchmark-arg", action="append", default=[], metavar="KEY=VALUE",
                       help="a benchmark's config value, e.g. scienceworld.simplification=openDoors")
    p_run.add_argument("--limit", help="only the first N instances of each split")
    p_run.add_argument("--instances", help="only these instance ids (comma-separated)")
    p_run.add_argument("--model", help="model name, for LLM methods")
    p_run.add_argument("--base-url", dest="base_url",
                       help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1")
    p_run.add_argument("--api-key-env", dest="api_key_env",
                       help="environment variable holding the API key (default OPENAI_API_KEY)")
    p_run.add_argument("--cache", help="LLM response cache: rw (default), replay (a miss is "
                                       "an error), off")
    p_run.add_argument("--cache-path", dest="cache_path",
                       help="LLM cache file (default results/llm-cache.sqlite)")
    p_run.add_argument("--llm-timeout", dest="llm_timeout", help="seconds per LLM call (default 120)")
    p_run.add_argument("--llm-retries", dest="llm_retries",
                       help="retries of a failed LLM call (default 6)")
    p_run.add_argument("--llm-concurrency", dest="llm_concurrency",
                       help="LLM requests in flight per endpoint in each worker process, or in "
                            "the whole cluster with --executor ray (default 16)")
    p_run.add_argument("--prices", help='a JSON price table {"model": [in, out]} in USD per '
                                        'million tokens; records then carry extra.cost_usd')
    p_run.add_argument("--timeout", help="wall-clock seconds per episode (default 1800)")
    p_run.add_argument("--retries", help="retries of an episode after an infrastructure "
                                         "failure (default 2)")
    p_run.add_argument("--run-id", dest="run_id", help="run id recorded in every record "
                                                       "(default: a hash of the spec)")
    p_run.add_argument("--workers", help="worker processes (default: cores; 0 runs in this process)")
    p_run.add_argument("--executor", help="local (default), or ray (pip install 'lifebench[ray]')")
    p_run.add_argument("--ray-address", dest="ray_address",
                       help="with --executor ray: the cluster to join (auto, or ray://HOST:PORT); "
                            "default: start a local Ray instance with --workers CPUs")
    p_run.add_argument("--concurrency", help="streams played at once in each worker, one "
                                             "thread each (default 1; for LLM-bound runs)")
    p_run.add_argument("--out", help="results directory (default results/<run id>)")
    p_run.add_argument("--no-progress", action="store_true", help="no progress bar")
    p_run.add_argument("--no-trajectories", action="store_true",
                       help="do not write trajectories")
    p_run.set_defaults(func=_run)

    p_cache = sub.add_parser("cache", help="the LLM response cache: stats or clear")
    p_cache.add_argument("action", choices=["stats", "clear"])
    p_cache.add_argument("--path", default=str(Path("results") / "llm-cache.sqlite"),
                         help="cache file (default results/llm-cache.sqlite)")
    p_cache.set_defaults(func=_cache)

    p_lb = sub.add_parser("leaderboard", help="tables from one or more results directories")
    p_lb.add_argument("dirs", nargs="+", help="results directories")
    p_lb.add_argument("--format", default="markdown", choices=["markdown", "latex", "html", "csv"])
    p_lb.add_argument("--output", help="also write the table to this file")
    p_lb.add_argument("--trials", choices=["all", "max", "last", "first"],
                      help="how an instance's trials count: every episode, or one per "
                           "instance and seed (default: the benchmark's protocol; "
                           "ScienceWorld: max)")
    p_lb.add_argument("--plots", help="write figures (PNG, SVG) into this directory "
                      "(default: beside --output)")
    p_lb.add_argument("--no-plots", action="store_true", help="no figures")
    p_lb.set_defaults(func=_leaderboard)

    p_cmp = sub.add_parser("compare", help="paired tests between the arms of results, corrected "
                           "for multiple comparisons")
    p_cmp.add_argument("dirs", nargs="+", help="results directories")
    p_cmp.add_argument("--metric", action="append",
                       help="success (default), score, steps, ... or extra.KEY; repeatable")
    p_cmp.add_argument("--correction", default="holm", choices=["holm", "bh", "none"],
                       help="multiple-comparison correction (default holm)")
    p_cmp.add_argument("--anova", metavar="FACTOR,FACTOR",
                       help="a two-way ANOVA over two factors instead (record fields or extra.KEY, "
                            "e.g. extra.how2_strategy,extra.how2_teacher)")
    p_cmp.add_argument("--format", default="markdown", choices=["markdown", "json", "latex", "html", "csv"])
    p_cmp.add_argument("--output", help="also write the result to this file")
    p_cmp.add_argument("--trials", choices=["all", "max", "last", "first"],
                       help="how trials count (default: the benchmark's protocol)")
    p_cmp.set_defaults(func=_compare)

    p_check = sub.add_parser("check", help="exit 1 when a candidate run is significantly worse "
                             "than a baseline")
    p_check.add_argument("--baseline", required=True, help="results directory of the baseline")
    p_check.add_argument("--candidate", required=True, help="results directory of the candidate")
    p_check.add_argument("--alpha", default="0.05", help="significance level (default 0.05)")
    p_check.add_argument("--metric", action="append", help="metrics (default: success and score)")
    p_check.add_argument("--correction", default="holm", choices=["holm", "bh", "none"])
    p_check.set_defaults(func=_check)

    p_export = sub.add_parser("export", help="records as a Hugging Face dataset (parquet)")
    p_export.add_argument("dirs", nargs="+", help="results directories")
    p_export.add_argument("--hf", required=True, metavar="OUT", help="output directory")
    p_export.set_defaults(func=_export)
    return parser


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: Optional[list[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # SIGTERM stops a run like Ctrl-C: workers and their simulators are shut down.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        return args.func(args)
    except UserError as exc:
        print(f"lifebench: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("lifebench: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
