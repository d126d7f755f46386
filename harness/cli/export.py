"""`lifebench export DIR... --hf OUT`: records as a Hugging Face dataset;
`lifebench export --submission OUT.tar.gz DIR`: a results directory as one archive to submit
(records, manifests, contexts, trajectories, the answers its LLM calls used unless
--no-responses, the methods' configs and the plugins' versions; see
lifebench.store.submission). `lifebench leaderboard` and `lifebench view` read it as they read
the directory; `lifebench verify` replays it from its answers."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from lifebench.api.errors import UserError
from lifebench.cli.base import SubCommand, results_inputs


class Export(SubCommand):
    name = "export"
    help = "records as a Hugging Face dataset (parquet), or a results directory as a submission"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("dirs", nargs="+", help="results directories (or submissions, for --hf)")
        output = parser.add_mutually_exclusive_group(required=True)
        output.add_argument("--hf", metavar="OUT", help="output directory")
        output.add_argument("--submission", metavar="OUT.tar.gz",
                            help="one archive of one results directory, to submit")
        parser.add_argument("--no-responses", action="store_true",
                            help="with --submission: leave out the model's answers (for a "
                                 "hosted model whose output may not be shared); such a "
                                 "submission is not replayable by `lifebench verify`")

    def run(self, args: argparse.Namespace) -> int:
        if args.no_responses and not args.submission:
            raise UserError("--no-responses is for --submission; add --submission OUT.tar.gz")
        if args.submission:
            return self._submission(args)
        from lifebench.leaderboard.export import export_hf
        from lifebench.leaderboard.loading import load_nonempty

        with results_inputs(args.dirs) as dirs:
            path = export_hf(load_nonempty(dirs), args.hf)
        print(f"wrote a Hugging Face dataset to {path} (load it with "
              f"datasets.load_dataset({str(path)!r}))")
        return 0

    @staticmethod
    def _submission(args: argparse.Namespace) -> int:
        from lifebench.store.submission import write_submission

        if len(args.dirs) != 1:
            raise UserError(f"--submission archives one results directory; got {len(args.dirs)}")
        if not args.submission.endswith((".tar.gz", ".tgz")):
            raise UserError(f"--submission {args.submission}: name it OUT.tar.gz")
        from lifebench.llm import answers
        from lifebench.store.results import ANSWERS_FILE

        kept = Path(args.dirs[0]) / ANSWERS_FILE
        with tempfile.TemporaryDirectory(prefix="lifebench-export-") as tmp:
            copy = None
            if kept.is_file() and not args.no_responses:
                copy = Path(tmp) / ANSWERS_FILE
                answers.copy(kept, copy)  # whole (its WAL included) and compact
            info = write_submission(args.dirs[0], args.submission, copy)
            counted = answers.summary(copy).answers if copy is not None else 0
        plugins = ", ".join(f"{k} {v}" for k, v in sorted(info["plugins"].items()))
        if copy is not None:
            kept_line = (f"with {counted:,} answers ({info['answers_bytes'] / 1e6:.1f} MB, "
                         f"compressed): replayable by `lifebench verify {args.submission}`")
        else:
            why = "--no-responses" if args.no_responses else f"{args.dirs[0]} keeps none"
            kept_line = f"without the model's answers ({why}): not replayable"
        print(f"wrote the submission {args.submission}: {info['episodes']} episodes of "
              f"{', '.join(sorted(info['methods']))} ({len(info['runs'])} run(s); {plugins}), "
              f"{kept_line}; check it with `lifebench leaderboard {args.submission}`")
        return 0
