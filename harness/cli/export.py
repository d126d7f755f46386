"""`lifebench export DIR... --hf OUT`: records as a Hugging Face dataset;
`lifebench export --submission OUT.tar.gz DIR`: a results directory as one archive to submit
(records, manifests, contexts, trajectories, the methods' configs and the plugins' versions;
see lifebench.store.submission). `lifebench leaderboard` and `lifebench view` read it as
they read the directory."""

from __future__ import annotations

import argparse

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

    def run(self, args: argparse.Namespace) -> int:
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
        info = write_submission(args.dirs[0], args.submission)
        plugins = ", ".join(f"{k} {v}" for k, v in sorted(info["plugins"].items()))
        print(f"wrote the submission {args.submission}: {info['episodes']} episodes of "
              f"{', '.join(sorted(info['methods']))} ({len(info['runs'])} run(s); {plugins}); "
              f"check it with `lifebench leaderboard {args.submission}`")
        return 0
