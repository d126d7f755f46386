"""`lifebench view DIR...`: the results site (a static folder that opens from file://),
optionally served on 127.0.0.1."""

from __future__ import annotations

import argparse
from pathlib import Path

from lifebench.api.errors import UserError
from lifebench.cli.base import (SubCommand, add_baseline_argument, add_correction_argument,
                                add_trials_argument, results_inputs)

DEFAULT_PORT = 8000


class View(SubCommand):
    name = "view"
    help = "a results site (static HTML: leaderboard, comparisons, plots, episodes)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("dirs", nargs="+", help="results directories or submissions (.tar.gz)")
        parser.add_argument("--output", metavar="SITE",
                            help="the site's folder (default: DIR/site of the first directory, or site/ beside a submission)")
        add_trials_argument(parser, "how an instance's trials count (default: the "
                                    "benchmark's protocol), as in `lifebench leaderboard`")
        parser.add_argument("--metric", action="append",
                            help="metrics of the paired comparisons (default: success and "
                                 "score); repeatable, as in `lifebench compare`")
        add_correction_argument(parser)
        add_baseline_argument(parser)
        parser.add_argument("--serve", action="store_true",
                            help="then serve the site on 127.0.0.1 until Ctrl-C")
        parser.add_argument("--port", type=int,
                            help=f"the port of --serve (default {DEFAULT_PORT}; 0: any free port)")

    def run(self, args: argparse.Namespace) -> int:
        from lifebench.leaderboard.site import build_site

        if args.port is not None and not args.serve:
            raise UserError("--port is for --serve; add --serve, or leave --port out")
        first = Path(args.dirs[0])
        output = args.output or str((first if first.is_dir() or not first.suffix else first.parent)
                                    / "site")
        # submissions are unpacked beside the site, into SITE-submissions/, so the results
        # directories its pages name stay there
        kept = Path(output).with_name(Path(output).name + "-submissions")
        with results_inputs(args.dirs, keep_in=kept) as dirs:
            site = build_site(dirs, output, trials=args.trials,
                              metrics=args.metric or ["success", "score"], correction=args.correction,
                              baseline=args.baseline)
        print(f"wrote the results site of {site.episodes} episodes ({site.streams} streams, "
              f"{site.bytes / 1e6:.1f} MB of data) to {site.output}; open "
              f"{site.index.resolve().as_uri()}")
        if args.serve:
            self._serve(site.output, DEFAULT_PORT if args.port is None else args.port)
        return 0

    @staticmethod
    def _serve(directory: Path, port: int) -> None:
        from lifebench.leaderboard.site.serve import make_server, url_of

        server = make_server(directory, port)
        print(f"serving {directory} at {url_of(server)} (Ctrl-C stops)", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            print("stopped serving")
        finally:
            server.server_close()
