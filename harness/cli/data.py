"""`lifebench data status|fetch|sources`: benchmark data that no package registry ships.

    lifebench data status                    every benchmark: where its data is, verified or not
    lifebench data fetch [BENCHMARK|all]     download what is missing into the data home
    lifebench data sources [--json]          upstream URLs and the sha256 pins

The data home is `$LIFEBENCH_DATA` when set and not empty, else the platform's per-user
cache (`~/.cache/lifebench/data`). `fetch` writes one line per benchmark on stderr (ready,
fetched, or skipped with what failed and the command to retry) and exits 0 when every
benchmark asked for has its data, 1 when some could not be fetched; `--print-ready` also
prints, on stdout, the benchmarks that can run (what `make bench` runs). `status` exits 0
when every benchmark is ready, else 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Optional
from urllib.parse import urlsplit

from lifebench import registry
from lifebench.api.data import DATA_ENV, RemoteData, data_home, fetch_command
from lifebench.api.errors import UserError, unknown_name
from lifebench.cli.base import EXIT_INCOMPLETE, EXIT_OK, Parser, SubCommand
from lifebench.cli.listing import unavailable
from lifebench.data import remote_data_of
from lifebench.data.download import FetchFailed, Limits
from lifebench.data.fetch import FetchResult, fetch
from lifebench.data.urls import MIRROR_ENV, mirrored
from lifebench.data.verify import where_found


class Data(SubCommand):
    name = "data"
    help = "benchmark data no package registry ships: status, fetch, sources"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        verbs = parser.add_subparsers(dest="verb", required=True, parser_class=Parser)
        verbs.add_parser("status", help="where each benchmark's data is, verified or not, "
                                        "and the command that gets what is missing")
        get = verbs.add_parser("fetch", help="download what is missing into the data home, "
                                             "verified (LIFEBENCH_MIRROR, LIFEBENCH_OFFLINE)")
        get.add_argument("benchmark", nargs="?", default="all",
                         help="a benchmark, or all (the default)")
        get.add_argument("--force", action="store_true",
                         help="download again, replacing what is there")
        get.add_argument("--timeout", type=float, default=Limits.stall_s, metavar="S",
                         help=f"give up on a server silent for S seconds (default {Limits.stall_s:g})")
        get.add_argument("--deadline", type=float, default=Limits.deadline_s, metavar="S",
                         help=f"give up on a download not done in S seconds "
                              f"(default {Limits.deadline_s:g})")
        get.add_argument("--print-ready", action="store_true",
                         help="print the benchmarks ready to run, comma-separated, on stdout")
        sources = verbs.add_parser("sources", help="each file's upstream URL and pinned sha256")
        sources.add_argument("--json", action="store_true", help="as JSON")

    def run(self, args: argparse.Namespace) -> int:
        if args.verb == "status":
            return _status()
        if args.verb == "sources":
            return _sources(args.json)
        if args.timeout <= 0 or args.deadline <= 0:
            raise UserError("--timeout and --deadline must be positive")
        names = registry.benchmark_names()
        if args.benchmark != "all" and args.benchmark not in names:
            raise unknown_name("benchmark", args.benchmark, ["all", *names])
        chosen = names if args.benchmark == "all" else [args.benchmark]
        limits = Limits(stall_s=args.timeout, deadline_s=args.deadline)
        ready, failed = [], False
        for name in chosen:
            line, fetched, runs = _fetch_one(name, args.force, limits)
            print(f"lifebench data: {name}: {line}", file=sys.stderr, flush=True)
            failed |= not fetched
            ready += [name] if runs else []
        if args.print_ready:
            print(",".join(ready))
        return EXIT_INCOMPLETE if failed else EXIT_OK


def _remote(name: str) -> tuple[Optional[RemoteData], Optional[str]]:
    """A benchmark's remote data (None: none), or why its plugin cannot say."""
    try:
        return remote_data_of(registry.get_benchmark(name)), None
    except UserError as exc:
        return None, str(exc)


def _fetch_one(name: str, force: bool, limits: Limits) -> tuple[str, bool, bool]:
    """(its line, whether its data is here now, whether it can run)."""
    remote, broken = _remote(name)
    if broken:
        return f"skipped: {broken}", False, False
    retry = f"retry: `{fetch_command(name)}`"
    result: Optional[FetchResult] = None
    if remote is not None:
        try:
            result = fetch(remote, force, limits)
        except FetchFailed as exc:
            if not remote.optional:
                return f"skipped: {exc}; {retry}", False, False
            why = unavailable(name)
            if why:
                return f"skipped: {why}", False, False
            return f"runs without {remote.what}: {exc}; {retry}", False, True
    why = unavailable(name)
    done = _done(remote, result)
    if why:
        return (f"{done}; cannot run: {why}" if done else f"skipped: {why}"), True, False
    return done or "ready: its data ships in its package", True, True


def _done(remote: Optional[RemoteData], result: Optional[FetchResult]) -> str:
    if remote is None or result is None:
        return ""
    where = f"{remote.what} verified in {result.check.folder}"
    if result.state == "ready":
        return f"ready: {where}"
    host = urlsplit(mirrored(remote.archive.url if remote.archive else remote.files[0].url or "")).netloc
    note = f" (not used: {result.replaced})" if result.replaced else ""
    return f"fetched {result.files} file(s), {_size(result.bytes)} from {host}: {where}{note}"


def _size(n: int) -> str:
    return f"{n / (1 << 20):.1f} MB" if n >= 1 << 20 else f"{n / 1024:.0f} KB"


def _status() -> int:
    home = "LIFEBENCH_DATA" if os.environ.get(DATA_ENV) else \
        "the per-user cache: LIFEBENCH_DATA is empty or unset"
    print(f"data home: {data_home()} ({home})")
    all_ready = True
    for name in registry.benchmark_names():
        lines, ready = _status_lines(name)
        all_ready &= ready
        for line in lines:
            print(f"{name}: {line}")
    return EXIT_OK if all_ready else EXIT_INCOMPLETE


def _status_lines(name: str) -> tuple[list[str], bool]:
    """A benchmark's status lines (the first says where its data is; one more per kind of
    problem, each with its fix), and whether it can run."""
    remote, broken = _remote(name)
    if broken:
        return [f"unavailable: {broken}"], False
    if remote is None:
        why = unavailable(name)
        return ([f"not ready: {why}"] if why else ["ready: its data ships in its package"]), not why
    found = where_found(remote)
    if found is None:
        looked = ", ".join(str(p) for p in remote.locations())
        missing = f"{remote.what}: not found (looked in {looked}); get them: `{fetch_command(name)}`"
        if not remote.optional:
            return [f"missing: {missing}"], False
        why = unavailable(name)
        return [f"not ready: {why}" if why else f"ready (from its package); {missing}"], not why
    verified = f"{remote.what} in {found.folder}, {found.verified} of {len(found.files)} files verified"
    if found.complete:
        why = unavailable(name)
        return [f"ready: {verified}" + (f"; cannot run: {why}" if why else "")], not why
    fix = f"fix: `{fetch_command(name, force=found.present > 0)}`"
    lines = [f"not ready: {verified}" if not remote.optional else
             f"ready (from its package), but {verified}"]
    lines += [f"{problem}; {fix}" for problem in found.problems()]
    return lines, remote.optional and not unavailable(name)


def _sources(as_json: bool) -> int:
    declared = []
    for name in registry.benchmark_names():
        remote, broken = _remote(name)
        if broken:
            print(f"lifebench data: {name}: {broken}", file=sys.stderr)
        elif remote is not None:
            declared.append(_describe(remote))
    mirror = os.environ.get(MIRROR_ENV) or None
    if as_json:
        print(json.dumps({"data_home": str(data_home()), "mirror": mirror,
                          "benchmarks": declared}, indent=1))
        return EXIT_OK
    if mirror:
        print(f"(fetched through the mirror {mirror}: https://HOST/PATH from {mirror}/HOST/PATH)")
    for entry in declared:
        upstream = entry["upstream"]
        mark = "checked" if upstream["checked"] else "NOT CHECKED FROM HERE"
        print(f"{entry['benchmark']}: {entry['what']} -> {entry['folder']}"
              f"{' (optional)' if entry['optional'] else ''}")
        print(f"  from {upstream['name']} [{mark}: {upstream['note']}]")
        for archive in entry["archives"]:
            pin = archive["sha256"] or "not pinned"
            print(f"  archive {archive['url']}  sha256 {pin}; its members:")
            for member in archive["members"]:
                also = f"  content {member['content_sha256']}" if member["content_sha256"] else ""
                print(f"    {member['member']}  sha256 {member['sha256']}{also}")
        for file in entry["files"]:
            print(f"  {file['url']}  sha256 {file['sha256']}")
    return EXIT_OK


def _describe(remote: RemoteData) -> dict[str, Any]:
    upstream = {"name": remote.upstream.name, "checked": remote.upstream.checked,
                "note": remote.upstream.note}
    members = [{"member": f.member, "target": f.target, "sha256": f.sha256,
                "content_sha256": f.content_sha256} for f in remote.files if f.member]
    archives = [{"url": remote.archive.url, "sha256": remote.archive.sha256,
                 "checked": remote.upstream.checked, "members": members}] if remote.archive else []
    files = [{"url": f.url, "target": f.target, "sha256": f.sha256,
              "checked": remote.upstream.checked} for f in remote.files if f.url]
    return {"benchmark": remote.benchmark, "what": remote.what, "folder": str(remote.home),
            "optional": remote.optional, "upstream": upstream, "archives": archives,
            "files": files}
