"""The `lifebench` command line: one module per subcommand, on top of everything else
(nothing imports this package)."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any, Optional

from lifebench.api.errors import UserError
from lifebench.cli.base import EXIT_INTERRUPTED, Parser, SubCommand
from lifebench.cli.cache import Cache
from lifebench.cli.check import Check
from lifebench.cli.compare import Compare
from lifebench.cli.data import Data
from lifebench.cli.doctor import Doctor
from lifebench.cli.export import Export
from lifebench.cli.grid import Grid
from lifebench.cli.leaderboard import Leaderboard
from lifebench.cli.listing import List
from lifebench.cli.new import New
from lifebench.cli.run import Run
from lifebench.cli.serve import Serve
from lifebench.cli.splits import Splits
from lifebench.cli.verify import Verify
from lifebench.cli.view import View

COMMANDS: tuple[type[SubCommand], ...] = (List, Splits, Data, Run, Grid, Doctor, Serve, Cache,
                                          Leaderboard, Compare, Check, Export, Verify, View, New)


def build_parser() -> Parser:
    parser = Parser(prog="lifebench", description="Run LLM planning agents on planning "
                    "benchmarks under identical conditions, and compare them.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for command_class in COMMANDS:
        command = command_class()
        command.add_arguments(sub.add_parser(command.name, help=command.help))
    return parser


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: Optional[list[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    command = next(c for c in COMMANDS if c.name == args.command)()
    # SIGTERM stops a run like Ctrl-C: workers and their simulators are shut down.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        return command.run(args)
    except UserError as exc:
        print(f"lifebench: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("lifebench: interrupted; rerun the same command to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader stopped reading (`lifebench leaderboard DIR | head`): nothing to say
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
