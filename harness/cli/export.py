"""`lifebench export DIR... --hf OUT`: records as a Hugging Face dataset."""

from __future__ import annotations

import argparse

from lifebench.cli.base import SubCommand


class Export(SubCommand):
    name = "export"
    help = "records as a Hugging Face dataset (parquet)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("dirs", nargs="+", help="results directories")
        parser.add_argument("--hf", required=True, metavar="OUT", help="output directory")

    def run(self, args: argparse.Namespace) -> int:
        from lifebench.leaderboard.export import export_hf
        from lifebench.leaderboard.loading import load_nonempty

        path = export_hf(load_nonempty(args.dirs), args.hf)
        print(f"wrote a Hugging Face dataset to {path} (load it with "
              f"datasets.load_dataset({str(path)!r}))")
        return 0
