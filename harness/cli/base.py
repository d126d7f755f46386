"""What every subcommand shares: the `SubCommand` shape, one-line usage errors, exit codes."""

from __future__ import annotations

import abc
import argparse
from pathlib import Path
from typing import ClassVar, NoReturn, Optional

from lifebench.api.errors import UserError

EXIT_OK = 0
EXIT_INCOMPLETE = 1
EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not a usage dump
        self.exit(EXIT_USER_ERROR, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


class SubCommand(abc.ABC):
    """One `lifebench NAME ...` command: its arguments and what it does."""

    name: ClassVar[str]
    help: ClassVar[str]

    @abc.abstractmethod
    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    @abc.abstractmethod
    def run(self, args: argparse.Namespace) -> int:
        """The exit code; a UserError becomes one line on stderr and exit 2."""


def write_output(path: Optional[str], text: str) -> None:
    """Also write `text` to `path` (the --output of the table commands)."""
    if path:
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text + "\n")
        except OSError as exc:
            raise UserError(f"cannot write {path}: {exc.strerror}; give another --output") from None


def add_trials_argument(parser: argparse.ArgumentParser, help_text: str) -> None:
    from lifebench.api.reporting import TRIAL_AGGREGATIONS

    parser.add_argument("--trials", choices=TRIAL_AGGREGATIONS, help=help_text)


def add_correction_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--correction", default="holm", choices=["holm", "bh", "none"],
                        help="multiple-comparison correction (default holm)")
