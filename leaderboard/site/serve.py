"""Serving a written site over HTTP on this machine only (127.0.0.1): the same files the
page reads from `file://`, for a browser elsewhere through an SSH tunnel or for one that
restricts local files."""

from __future__ import annotations

import functools
import http.server
from pathlib import Path

from lifebench.api.errors import UserError

HOST = "127.0.0.1"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base's name)
        pass


def make_server(directory: str | Path, port: int = 8000) -> http.server.ThreadingHTTPServer:
    """A server for `directory` on 127.0.0.1:`port` (0: any free port), not yet serving."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    try:
        return http.server.ThreadingHTTPServer((HOST, port), handler)
    except OSError as exc:
        raise UserError(f"cannot serve on {HOST}:{port}: {exc.strerror or exc}; give another "
                        f"--port") from None


def url_of(server: http.server.ThreadingHTTPServer) -> str:
    return f"http://{HOST}:{server.server_address[1]}/index.html"
