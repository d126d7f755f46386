"""`lifebench splits make KIND --n N --seed S`: generate a split, for benchmarks that can."""

from __future__ import annotations

import argparse

from lifebench import registry
from lifebench.api.errors import UserError, unknown_name
from lifebench.cli.base import Parser, SubCommand
from lifebench.config.options import coerce


class Splits(SubCommand):
    name = "splits"
    help = "generate splits (benchmarks that can)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, parser_class=Parser)
        make = actions.add_parser("make", help="generate a split offline, reproducibly")
        make.add_argument("kind", help="what to generate, e.g. textworld-cooking")
        make.add_argument("--n", required=True, help="number of instances")
        make.add_argument("--seed", default="0", help="generation seed (default 0)")

    def run(self, args: argparse.Namespace) -> int:
        makers, kinds = [], set()
        for name in registry.benchmark_names():
            try:
                generators = registry.benchmark_class(name).split_generators
            except UserError:  # a broken plugin cannot generate anything
                continue
            kinds.update(generators)
            if args.kind in generators:
                makers.append(name)
        if not makers:
            raise unknown_name("split generator", args.kind, kinds)
        n = coerce(args.n, int, "--n")
        seed = coerce(args.seed, int, "--seed")
        if n < 1 or seed < 0:
            raise UserError(f"--n must be at least 1 and --seed at least 0, got {n} and {seed}")
        bench = registry.get_benchmark(makers[0])
        bench.check_available()
        split = bench.generate_split(args.kind, n, seed)
        count = len(bench.instances(split))
        print(f"{makers[0]}:{split}: {count} instances (run it with `--benchmark {makers[0]} "
              f"--split {split}`)")
        return 0
