"""A mirror of the benchmark data upstreams, built from a data folder, and a loopback HTTP
server for it with faults on request: so tests (and `tests/data/whole_path.py`) run the real
download code of `lifebench data fetch` without the internet.

    python -m lifebench.testing.datamirror --from ../shared/data --into MIRROR [--serve]
        [--port P] [-- COMMAND ... {url} ...]   (serve while COMMAND runs, then stop)

The layout is `LIFEBENCH_MIRROR`'s: upstream `https://HOST/PATH` is `MIRROR/HOST/PATH`, so
any static file server over the folder is a mirror (an air-gapped site can serve one built
from a data home that `lifebench data fetch` filled). Each benchmark's files come from
`SOURCE/<its data folder>/`; an archive is rebuilt as a zip of the members the benchmark
needs (in the upstream archive's layout), not the upstream archive itself.

Faults (`MirrorServer.fault(path, kind, times)`): `corrupt` (the body with its first bytes
changed), `truncate` (a Content-Length for the whole file, then half of it and the
connection closed), `stall` (the head and half the body, then nothing until the server
stops), `oversize` (a Content-Length of 10^12), `redirect` (a 302 to the same path, as
GitHub's release downloads redirect), `missing` (404).
"""

from __future__ import annotations

import argparse
import collections
import http.server
import os
import subprocess
import sys
import threading
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from lifebench import registry
from lifebench.api.data import RemoteData
from lifebench.api.errors import UserError
from lifebench.data import remote_data_of

FAULT_KINDS = ("corrupt", "truncate", "stall", "oversize", "redirect", "missing")


def mirror_path(root: Path, url: str) -> Path:
    """Where `url` (https) lives in a mirror folder."""
    if not url.startswith("https://"):
        raise ValueError(f"not an https URL: {url}")
    return root / url[len("https://"):]


def declared(benchmarks: Optional[Iterable[str]] = None) -> list[RemoteData]:
    """The remote data of the benchmarks named (default: every installed one that loads)."""
    found = []
    for name in registry.benchmark_names() if benchmarks is None else list(benchmarks):
        try:
            found.append(remote_data_of(registry.get_benchmark(name)))
        except UserError as exc:
            print(f"datamirror: leaving out {name}: {exc}", file=sys.stderr)
    return [r for r in found if r is not None]


def build_mirror(source: Path, into: Path, remotes: Iterable[RemoteData],
                 members: Optional[set[str]] = None) -> Path:
    """A mirror folder at `into` for `remotes`, from `source/<folder>/<target>`: files are
    hard-linked (copied across devices), archives zipped from their members (only those in
    `members`, when given). Returns `into`."""
    for remote in remotes:
        folder = Path(source) / remote.folder
        for file in remote.files:
            if file.url:
                _link(folder / file.target, mirror_path(into, file.url))
        if remote.archive is not None:
            target = mirror_path(into, remote.archive.url)
            target.parent.mkdir(parents=True, exist_ok=True)
            with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
                for file in remote.files:
                    if file.member and (members is None or file.member in members):
                        archive.write(folder / file.target, file.member)
    return into


def _link(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    try:
        os.link(source, target)
    except OSError:  # another device, or links not allowed
        target.write_bytes(source.read_bytes())


@dataclass
class _Fault:
    kind: str
    times: int  # how many more requests it hits


class MirrorServer:
    """The mirror folder over HTTP on 127.0.0.1, in a background thread."""

    def __init__(self, root: Path, port: int = 0) -> None:
        self.root = Path(root).resolve()
        self.requests: collections.Counter[str] = collections.Counter()
        self._faults: dict[str, _Fault] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                server._answer(self)

            def log_message(self, *args: object) -> None:
                pass

        self._http = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._http.daemon_threads = True
        self.port = self._http.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._http.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def fault(self, path: str, kind: str, times: int = 1) -> None:
        """The next `times` requests of `path` (the URL's path, or an https URL) fail so."""
        if kind not in FAULT_KINDS:
            raise ValueError(f"fault {kind!r} is not one of {FAULT_KINDS}")
        with self._lock:
            self._faults[self._key(path)] = _Fault(kind, times)

    def count(self, url: str) -> int:
        return self.requests[self._key(url)]

    @staticmethod
    def _key(path: str) -> str:
        return "/" + (path[len("https://"):] if path.startswith("https://") else path.lstrip("/"))

    def _take_fault(self, path: str) -> Optional[str]:
        with self._lock:
            fault = self._faults.get(path)
            if fault is None or fault.times <= 0:
                return None
            fault.times -= 1
            return fault.kind

    def _answer(self, handler: http.server.BaseHTTPRequestHandler) -> None:
        path = handler.path.split("?", 1)[0]
        with self._lock:
            self.requests[path] += 1
        file = (self.root / path.lstrip("/")).resolve()
        kind = self._take_fault(path)
        if kind == "missing" or self.root not in file.parents or not file.is_file():
            body = b"not found\n"
            handler.send_response(404)
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
            return
        if kind == "redirect":
            handler.send_response(302)
            handler.send_header("Location", f"{path}?redirected=1")
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        data = file.read_bytes()
        if kind == "corrupt":
            data = bytes(b ^ 0xFF for b in data[:16]) + data[16:]
        handler.send_response(200)
        handler.send_header("Content-Length", str(10**12 if kind == "oversize" else len(data)))
        handler.send_header("Content-Type", "application/octet-stream")
        handler.end_headers()
        if kind in ("truncate", "stall", "oversize"):
            handler.wfile.write(data[: len(data) // 2])
            handler.wfile.flush()
            if kind == "stall":
                self._stopping.wait()
            handler.close_connection = True
            return
        handler.wfile.write(data)

    def close(self) -> None:
        self._stopping.set()
        self._http.shutdown()
        self._http.server_close()

    def __enter__(self) -> "MirrorServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lifebench.testing.datamirror",
                                     description="build (and serve) a mirror of the benchmark "
                                                 "data upstreams from a data folder")
    parser.add_argument("--from", dest="source", required=True, help="a data folder "
                        "(e.g. ../shared/data, or a data home that `lifebench data fetch` filled)")
    parser.add_argument("--into", required=True, help="the mirror folder to write")
    parser.add_argument("--serve", action="store_true", help="serve it on 127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="-- COMMAND ...: serve while it runs ({url} is the mirror's URL)")
    args = parser.parse_args(argv)
    root = build_mirror(Path(args.source), Path(args.into), declared())
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not (args.serve or command):
        print(root)
        return 0
    with MirrorServer(root, args.port) as server:
        print(f"mirror of {args.source} at {server.url} (LIFEBENCH_MIRROR={server.url})",
              file=sys.stderr, flush=True)
        if command:
            return subprocess.call([part.replace("{url}", server.url) for part in command])
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
