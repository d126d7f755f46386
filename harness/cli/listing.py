"""`lifebench list benchmarks|methods|splits|contexts`."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Optional

from lifebench import registry
from lifebench.api.errors import UserError
from lifebench.cli.base import SubCommand


class List(SubCommand):
    name = "list"
    help = "list installed benchmarks, methods, splits or context providers"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("what", choices=["benchmarks", "methods", "splits", "contexts"])
        parser.add_argument("--benchmark", help="only this benchmark's splits")
        parser.add_argument("--available", action="store_true",
                            help="benchmarks only: those whose package and data are here (the "
                                 "others are named on stderr with what is missing)")

    def run(self, args: argparse.Namespace) -> int:
        if args.what == "benchmarks":
            self._benchmarks(args.available)
        elif args.what == "methods":
            self._methods()
        elif args.what == "contexts":
            self._contexts()
        else:
            self._splits(args.benchmark)
        return 0

    @staticmethod
    def _benchmarks(available_only: bool) -> None:
        for name in registry.benchmark_names():
            if available_only:
                reason = unavailable(name)
                if reason:
                    print(f"lifebench: skipping {name}: {reason}", file=sys.stderr)
                    continue
            print(name)

    @staticmethod
    def _methods() -> None:
        for name in registry.method_names():
            try:
                cls = registry.method_class(name)
            except UserError as exc:  # one broken plugin must not hide the others
                print(f"{name}  (unavailable: {exc})")
                continue
            needs = [k for k, v in dataclasses.asdict(cls.needs).items() if v]
            notes = [f"needs: {', '.join(needs)}"] if needs else []
            notes += ["no instance contexts"] if cls.context_use is None else []
            notes += _protocol_notes(cls)
            print(f"{name}" + (f"  ({'; '.join(notes)})" if notes else ""))

    @staticmethod
    def _contexts() -> None:
        print(f"{registry.NO_CONTEXT}  (no instance context: the baseline)")
        for name in registry.context_names():
            try:
                cls = registry.context_class(name)
            except UserError as exc:
                print(f"{name}  (unavailable: {exc})")
                continue
            print(f"{name}" + ("  (needs: llm)" if cls.needs_llm else ""))

    @staticmethod
    def _splits(benchmark: Optional[str]) -> None:
        for name in [benchmark] if benchmark else registry.benchmark_names():
            try:
                bench = registry.get_benchmark(name)
            except UserError as exc:
                print(f"{name}  (unavailable: {exc})")
                continue
            for split in bench.splits():
                marker = " (default)" if split in bench.default_splits else ""
                print(f"{name}:{split}{marker}")


def _protocol_notes(cls: type) -> list[str]:
    """What the method's protocol sets on the installed benchmarks, where it sets anything:
    "3 trials, scored max", and arguments per benchmark."""
    seen: dict[str, list[str]] = {}
    for name in registry.benchmark_names():
        try:
            protocol = cls.protocol(registry.get_benchmark(name))
        except UserError:
            continue
        parts = [f"{protocol.trials} trials"] if protocol.trials != 1 else []
        parts += [f"scored {protocol.scored_trial}"] if protocol.scored_trial else []
        parts += [f"{k}={v}" for k, v in sorted(protocol.method_args.items())]
        if parts:
            seen.setdefault(", ".join(parts), []).append(name)
    if len(seen) == 1 and len(next(iter(seen.values()))) == len(registry.benchmark_names()):
        return [f"protocol: {next(iter(seen))}"]
    return [f"protocol on {', '.join(benches)}: {text}" for text, benches in seen.items()]


def unavailable(name: str) -> Optional[str]:
    """Why a benchmark cannot run its default splits here (package or data missing)."""
    try:
        bench = registry.get_benchmark(name)
        bench.check_available()
        for split in bench.default_splits:
            bench.instances(split)
    except UserError as exc:
        return str(exc)
    return None
