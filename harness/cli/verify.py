"""`lifebench verify SUBMISSION|DIR [--sample N] [--workers W]`: replay a submission (or a
results directory) from the answers it keeps, offline, in a scratch directory, and compare
every replayed record with the submitted one; `verification.json` beside it says what was
found (`lifebench view` marks it). Exit 0: every episode replayed exactly (or within what
its method declares not bit-reproducible); 1: one differed or diverged; 2: it cannot be
verified (no answers, another version of lifebench or of a plugin, a plugin missing, a
corrupt archive)."""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Iterator, Optional

from lifebench.api.errors import UserError
from lifebench.cli.base import SubCommand
from lifebench.config.run import default_workers

SHOWN_DIFFERENCES = 10


class Verify(SubCommand):
    name = "verify"
    help = "replay a submission or a results directory from its answers and compare every record"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("subject", metavar="SUBMISSION|DIR",
                            help="a submission (.tar.gz) or a results directory")
        parser.add_argument("--sample", type=_positive_int, metavar="N",
                            help="replay only N of its streams (each from its start), chosen "
                                 "with --sample-seed")
        parser.add_argument("--sample-seed", type=int, default=0, metavar="S",
                            help="the seed that chooses --sample's streams (default 0)")
        parser.add_argument("--llm-only", action="store_true",
                            help="replay only its runs of a model (the others keep no answers: "
                                 "their replay is a re-run, which `make check` does beside it)")
        parser.add_argument("--workers", type=int, default=None, metavar="W",
                            help="worker processes of the replay (default: cores)")
        parser.add_argument("--scratch", metavar="DIR",
                            help="replay into DIR (kept; default: a temporary directory, removed)")
        parser.add_argument("--report", metavar="FILE",
                            help="write verification.json there (default: beside the "
                                 "submission, or in the directory)")

    def run(self, args: argparse.Namespace) -> int:
        from lifebench.runner.verify import verify_directory
        from lifebench.store.verification import Verification, report_path, sha256_of, write_report

        subject = Path(args.subject)
        if not subject.exists():
            raise UserError(f"{subject} does not exist; give a submission (.tar.gz) or a "
                            f"results directory")
        workers = default_workers() if args.workers is None else args.workers
        digest = sha256_of(subject) if subject.is_file() else None
        with _scratch(args.scratch) as scratch:
            try:
                with _opened(subject, scratch) as directory:
                    found = verify_directory(directory, scratch / "replay", workers,
                                             args.sample, args.sample_seed, args.llm_only)
            except UserError as exc:  # a corrupt or foreign archive
                found = Verification("unverifiable", reason=str(exc))
        found.subject, found.subject_sha256 = str(subject), digest
        report = Path(args.report) if args.report else report_path(subject)
        try:
            write_report(report, found)
        except OSError as exc:
            print(f"note: cannot write {report} ({exc.strerror}); the verdict is below",
                  file=sys.stderr)
        _print(found, report)
        return found.exit_code


def _print(found, report: Path) -> None:
    for note in found.notes:
        print(f"note: {note}", file=sys.stderr)
    if found.exit_code == 2:
        print(f"lifebench verify: {found.summary_line()}", file=sys.stderr)
        return
    shown = [d for d in found.differences if not d.within_tolerance][:SHOWN_DIFFERENCES]
    for difference in shown:
        print(difference.line())
    if found.differences_total > len(shown) and shown:
        print(f"... {found.differences_total - len(shown)} more in {report}")
    print(f"{found.summary_line()} (in {found.seconds:g} s; {report})")


@contextlib.contextmanager
def _scratch(given: Optional[str]) -> Iterator[Path]:
    if given:
        path = Path(given)
        if path.exists() and any(path.iterdir()):
            raise UserError(f"--scratch {given} is not empty; give a new or empty directory")
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    path = Path(tempfile.mkdtemp(prefix="lifebench-verify-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def _opened(subject: Path, scratch: Path) -> Iterator[Path]:
    """The results directory of `subject`: itself, or a submission checked and unpacked."""
    from lifebench.store.submission import is_submission_path, open_submission

    if is_submission_path(subject):
        yield open_submission(subject, scratch / "submitted")
    else:
        yield subject


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value
