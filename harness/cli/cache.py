"""`lifebench cache stats|clear`: the LLM response cache."""

from __future__ import annotations

import argparse
from pathlib import Path

from lifebench.api.errors import UserError
from lifebench.cli.base import SubCommand
from lifebench.config.run import DEFAULT_CACHE_PATH


class Cache(SubCommand):
    name = "cache"
    help = "the LLM response cache: stats or clear"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("action", choices=["stats", "clear"])
        parser.add_argument("--path", default=DEFAULT_CACHE_PATH,
                            help=f"cache file (default {DEFAULT_CACHE_PATH})")

    def run(self, args: argparse.Namespace) -> int:
        from lifebench.llm.cache import ResponseCache

        path = Path(args.path)
        if not path.exists():
            raise UserError(f"no LLM cache at {path}; give its path with --path")
        cache = ResponseCache(path)
        if args.action == "stats":
            stats = cache.stats()
            unreadable = (f", {stats['unreadable']} unreadable (asked again when met; "
                          f"`lifebench cache clear` empties the file)") if stats["unreadable"] else ""
            print(f"{stats['path']}: {stats['entries']} responses of {stats['models']} model(s), "
                  f"{stats['bytes'] / 2**20:.1f} MiB{unreadable}")
        else:
            print(f"removed {cache.clear()} responses from {path}")
        return 0
