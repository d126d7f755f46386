"""What every subcommand shares: the `SubCommand` shape, one-line usage errors, exit codes."""

from __future__ import annotations

import abc
import argparse
import contextlib
import tempfile
from pathlib import Path
from typing import ClassVar, Iterator, NoReturn, Optional

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


def add_baseline_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--baseline", metavar="METHOD",
                        help="mark the grid table's cells significantly better or worse than "
                             "this method's (▲/▼; default: the grid spec's `baseline`)")


def add_correction_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--correction", default="holm", choices=["holm", "bh", "by", "none"],
                        help="multiple-comparison correction over the comparisons of each "
                             "metric: holm (familywise, default), bh (false discovery rate, "
                             "independent or positively dependent tests), by (false discovery "
                             "rate under any dependence)")


@contextlib.contextmanager
def results_inputs(paths: list[str], keep_in: Optional[Path] = None) -> Iterator[list[str]]:
    """The results directories named by `paths`, where a path may also be a submission
    archive (`lifebench export --submission`): each is checked and unpacked into a temporary
    directory that lives for the block, or, with `keep_in`, into a folder there that stays
    (replaced on the next call). A corrupt or foreign archive is a UserError."""
    import shutil

    from lifebench.store.submission import is_submission_path, open_submission

    if not any(is_submission_path(p) for p in paths):
        yield list(paths)
        return
    with tempfile.TemporaryDirectory(prefix="lifebench-submissions-") as tmp:
        base = keep_in if keep_in is not None else Path(tmp)
        out = []
        for index, path in enumerate(paths):
            if is_submission_path(path):
                target = base / f"{index}-{Path(path).name.split('.')[0] or 'submission'}"
                if keep_in is not None and target.is_dir():
                    shutil.rmtree(target)
                out.append(str(open_submission(path, target)))
                _keep_verification(Path(path), target)
            else:
                out.append(path)
        yield out


def _keep_verification(archive: Path, unpacked: Path) -> None:
    """Put `lifebench verify`'s report of `archive` (beside it) into its unpacked folder, where
    the site looks for it: only a report of this very archive (its SHA-256)."""
    import shutil

    from lifebench.store.verification import VERIFICATION_FILE, read_report, report_path, sha256_of

    found = read_report(report_path(archive))
    if found is not None and found.subject_sha256 == sha256_of(archive):
        shutil.copyfile(report_path(archive), unpacked / VERIFICATION_FILE)
