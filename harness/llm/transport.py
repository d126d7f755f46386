"""The HTTP under the LLM client: JSON POSTs on pooled keep-alive connections.

One `Endpoint` per base URL and timeout in a process, shared by every stream: it keeps
the idle connections (plain or TLS sockets) and lends one per request, so hundreds of
streams reuse a few hundred sockets instead of opening one per call. An idle connection
the server has closed (keep-alive timeouts) is noticed before it is used: it is readable
(EOF) while no request is pending, and is dropped. Proxies come from the usual
environment variables (`HTTPS_PROXY` by CONNECT, `HTTP_PROXY`, `NO_PROXY`, a user in the
proxy URL). Answers may carry a Content-Length, be chunked, or end with the connection.
Everything the server sends is bounded: the timeout is one deadline for the whole exchange
(connect, send, every read: a server that drips a byte a second is cut off at it), an
answer larger than `max_body` bytes is refused before it is read (by its Content-Length, or
as its chunks or its unlengthed body pass the limit), and header lines and counts are capped.
`Endpoint.download` streams a GET's body to a sink (data files, `lifebench data`) within
one deadline of its own, the endpoint's timeout being the longest wait for the next bytes.

Why not the `openai` package, nor `http.client`: the first cost ~5 ms of CPU per call
building a request through its typed models, the second ~0.2 ms parsing headers with the
e-mail parser; at a few hundred streams on a few cores that is the harness's whole budget
(tests/perf/perf_llm_profile.py). HTTP/1.1 for one POST and its answer is little code.
"""

from __future__ import annotations

import base64
import datetime
import email.utils
import io
import select
import socket
import ssl
import threading
import time
import urllib.request
import zlib
from dataclasses import dataclass, field
from typing import Any, Optional, Protocol
from urllib.parse import unquote, urlsplit

from lifebench.api import cooperative

_LINE_MAX = 65536
_FRESH_S = 1.0
_HEADERS_MAX = 100
DEFAULT_MAX_BODY = 8 << 20  # bytes of an answer: a completion is kilobytes


class TransportTimeout(Exception):
    """No answer within the timeout."""


class TransportFailure(Exception):
    """The connection failed, or closed before a complete answer."""


class _TooLarge(ValueError):
    """An answer over the byte limit."""


class _ClosedUnanswered(ConnectionError):
    """The connection closed before the first byte of an answer."""


class Undecodable(ValueError):
    """A body in a content encoding that cannot be decoded (unknown, or corrupt)."""


@dataclass(frozen=True)
class HTTPAnswer:
    status: int
    body: bytes  # decoded: a gzip or deflate body arrives here as what it encodes
    # the headers a client reads (lower-case names): retry-after, date
    headers: dict[str, str] = field(default_factory=dict)


_KEPT_HEADERS = (b"retry-after", b"date")
_DECODED = (b"gzip", b"x-gzip", b"deflate")


class WriteFailure(Exception):
    """The sink of a download could not write (a full disk); `error` is its OSError."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


class Sink(Protocol):
    """Where `Endpoint.download` puts a body: told its length (None: unknown) before the
    first bytes, then given them in pieces."""

    def begin(self, length: Optional[int]) -> None: ...

    def write(self, data: bytes) -> None: ...


@dataclass(frozen=True)
class Downloaded:
    """A download's answer: its status, the bytes given to the sink (a 200's body only),
    and where a redirect points."""
    status: int
    size: int
    location: Optional[str]


class _SocketReader(io.RawIOBase):
    """The socket's reads, each waiting through the hub when streams are greenlets (see
    lifebench.api.cooperative), else blocking up to the socket's timeout."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.deadline = float("inf")  # of the exchange in progress (time.monotonic())

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("timed out")
        wait = min(self.sock.gettimeout() or left, left)
        if not cooperative.wait_readable(self.sock, wait):
            raise socket.timeout("timed out")
        return self.sock.recv_into(buffer)


class _Connection:
    """A socket and its buffered reader."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.raw = _SocketReader(sock)
        self.reader = io.BufferedReader(self.raw)
        self.used = time.monotonic()
        self.reused = False  # it has carried an answer and was kept alive

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


class Endpoint:
    """Keep-alive connections to one server; thread-safe."""

    def __init__(self, base_url: str, timeout_s: float, max_body: int = DEFAULT_MAX_BODY) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self.tls = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.tls else 80)
        self.prefix = parts.path.rstrip("/")
        self.timeout_s = timeout_s
        self.max_body = max_body
        self._authority = self.host if parts.port is None else f"{self.host}:{self.port}"
        if ":" in self.host:  # an IPv6 literal keeps its brackets in Host and URLs
            self._authority = f"[{self.host}]" + ("" if parts.port is None else f":{self.port}")
        self._proxy = _proxy_for(parts.scheme, self.host)
        self._ssl = ssl.create_default_context() if self.tls else None
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()

    def post(self, path: str, body: bytes, headers: dict[str, str]) -> HTTPAnswer:
        """POST `body` to the base URL + `path`; raises TransportTimeout or
        TransportFailure (the connection is then discarded)."""
        return self.request("POST", path, body, headers)

    def get(self, path: str, headers: dict[str, str]) -> HTTPAnswer:
        """GET the base URL + `path` (the model list), bounded as a POST is."""
        return self.request("GET", path, b"", headers)

    def request(self, method: str, path: str, body: bytes, headers: dict[str, str]) -> HTTPAnswer:
        """One request and its answer within the endpoint's deadline (connect to last byte)
        and byte limit."""
        request = self._request_bytes(method, path, body, headers)
        deadline = time.monotonic() + self.timeout_s
        conn: Optional[_Connection] = None
        try:
            conn = self._take(deadline)
            try:
                return self._exchange(conn, request, deadline)
            except _ClosedUnanswered:
                if not conn.reused:
                    raise
            # A kept-alive connection the server closed as this request went out (its idle
            # timeout): the request was not answered; send it once more on a new one.
            conn = self._connect(deadline)
            return self._exchange(conn, request, deadline)
        except (socket.timeout, TimeoutError):
            if conn is not None:
                conn.close()
            raise TransportTimeout() from None
        except (OSError, ValueError) as exc:
            if conn is not None:
                conn.close()
            why = "an answer over the size limit" if isinstance(exc, _TooLarge) else \
                str(exc) if isinstance(exc, Undecodable) else type(exc).__name__
            raise TransportFailure(why) from None

    def _request_bytes(self, method: str, path: str, body: bytes, headers: dict[str, str]) -> bytes:
        target = self.prefix + path
        if self._proxy and not self.tls:  # a plain-HTTP proxy takes the absolute URL
            target = f"http://{self._authority}{target}"
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self._authority}"]
        lines += [f"Content-Length: {len(body)}"] if method == "POST" else []
        # a body as it is; a gateway that encodes anyway is decoded (`_decoded`)
        lines += ["Accept-Encoding: identity"] if "Accept-Encoding" not in headers else []
        lines += [f"{name}: {value}" for name, value in headers.items()]
        if self._proxy and not self.tls and self._proxy.authorization:
            lines.append(f"Proxy-Authorization: {self._proxy.authorization}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    def download(self, path: str, headers: dict[str, str], sink: Sink, deadline_s: float,
                 max_bytes: int) -> Downloaded:
        """GET the base URL + `path` on a connection of its own and stream a 200's body to
        `sink`, all within `deadline_s` (connect to last byte); each wait for bytes is at
        most the endpoint's timeout (a stalled server is cut off there). Other answers give
        their status (and a redirect's `Location`), their body unread. A body over
        `max_bytes`, or that ends before its length or last chunk (a truncated download),
        is a TransportFailure; a sink that cannot write raises WriteFailure."""
        request = self._request_bytes("GET", path, b"", {**headers, "Connection": "close"})
        deadline = time.monotonic() + deadline_s
        conn: Optional[_Connection] = None
        try:
            # a host that never answers the connection waits the stall time, not the deadline
            conn = self._connect(min(deadline, time.monotonic() + self.timeout_s))
            conn.raw.deadline = deadline
            reader = _BoundedReads(conn, self.timeout_s)
            conn.sock.settimeout(reader.wait())
            conn.sock.sendall(request)
            status, length, chunked, location = _download_head(reader)
            if status != 200:
                return Downloaded(status, 0, location)
            if length is not None and length > max_bytes:
                raise _TooLarge(f"an answer of {length} bytes, over the limit of {max_bytes}")
            _write(sink.begin, length)
            size = _stream_body(reader, length, chunked, max_bytes, sink)
            return Downloaded(status, size, location)
        except (socket.timeout, TimeoutError):
            raise TransportTimeout() from None
        except (OSError, ValueError) as exc:
            raise TransportFailure(_download_failure(exc)) from None
        finally:
            if conn is not None:
                conn.close()

    def _exchange(self, conn: _Connection, request: bytes, deadline: float) -> HTTPAnswer:
        conn.raw.deadline = deadline
        try:
            conn.sock.settimeout(_left(deadline))
            conn.sock.sendall(request)
        except (BrokenPipeError, ConnectionResetError):
            raise _ClosedUnanswered() from None
        finally:
            conn.sock.settimeout(self.timeout_s)
        head = _read_head(conn.reader)
        status, length, chunked, keep = head.status, head.length, head.chunked, head.keep
        data = _read_body(conn.reader, status, length, chunked, self.max_body)
        conn.raw.deadline = float("inf")
        if keep and length is not None or keep and chunked:
            conn.used = time.monotonic()
            conn.reused = True
            with self._lock:
                self._idle.append(conn)
        else:
            conn.close()
        return HTTPAnswer(status, _decoded(data, head.encoding, self.max_body), head.headers)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def _take(self, deadline: float) -> _Connection:
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return self._connect(deadline)
            # a connection used a moment ago is open: servers keep idle ones for seconds,
            # and the check is a system call (a hand-off of the GIL at 256 streams)
            if time.monotonic() - conn.used < _FRESH_S or not _closed_by_peer(conn.sock):
                return conn
            conn.close()

    def _connect(self, deadline: float) -> _Connection:
        proxy = self._proxy
        address = (proxy.host, proxy.port) if proxy else (self.host, self.port)
        sock = socket.create_connection(address, timeout=_left(deadline))
        try:
            sock.settimeout(self.timeout_s)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if proxy and self.tls:
                _tunnel(sock, self._authority, proxy.authorization)
            if self._ssl is not None:
                sock = self._ssl.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise
        return _Connection(sock)


@dataclass(frozen=True)
class _Head:
    status: int
    length: Optional[int]
    chunked: bool
    keep: bool
    encoding: bytes = b""  # Content-Encoding, lower case ("" or identity: none)
    headers: dict[str, str] = field(default_factory=dict)  # _KEPT_HEADERS'


def _read_head(reader: Any) -> _Head:
    """The status line and headers."""
    while True:
        buffered = reader.peek(1)  # an answer's head usually arrives whole: split it at once
        if not buffered:
            raise _ClosedUnanswered()
        end = buffered.find(b"\r\n\r\n")
        if 0 <= end < _LINE_MAX:
            lines = reader.read(end + 4)[:end].split(b"\r\n")
        else:
            lines = _head_lines(reader)
        head = _parse_head(lines)
        if head.status >= 200 or head.status == 101:  # 1xx interim answers precede the real one
            return head


def _head_lines(reader: Any) -> list[bytes]:
    """The head line by line (it came in pieces, or with bare newlines)."""
    lines = []
    for _ in range(_HEADERS_MAX + 1):
        line = reader.readline(_LINE_MAX)
        if line in (b"\r\n", b"\n", b""):
            if not lines:
                raise _ClosedUnanswered()
            return lines
        lines.append(line.rstrip(b"\r\n"))
    raise ValueError("too many headers")


def _parse_head(lines: list[bytes]) -> _Head:
    version, _, rest = lines[0].partition(b" ")
    if not version.startswith(b"HTTP/"):
        raise ValueError("not an HTTP status line")
    if len(lines) > _HEADERS_MAX + 1:
        raise ValueError("too many headers")
    status = int(rest[:3])
    keep = version == b"HTTP/1.1"
    length: Optional[int] = None
    chunked = False
    encoding = b""
    kept: dict[str, str] = {}
    for line in lines[1:]:
        name, _, raw = line.partition(b":")
        name, value = name.strip().lower(), raw.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding":
            chunked = value.endswith(b"chunked")
        elif name == b"connection":
            keep = value == b"keep-alive" if not keep else value != b"close"
        elif name == b"content-encoding":
            encoding = value[:40]
        elif name in _KEPT_HEADERS:
            kept[name.decode("ascii", "replace")] = raw.strip()[:200].decode("latin-1")
    return _Head(status, length, chunked, keep, encoding, kept)


def retry_after_s(headers: dict[str, str]) -> Optional[float]:
    """The seconds an answer's Retry-After asks to wait (RFC 9110: a number of seconds, or an
    HTTP-date, timed against the answer's own Date where it has one, so that the two clocks'
    difference does not count); None when it has none that can be read."""
    value = headers.get("retry-after", "").strip()
    if not value:
        return None
    if value.isdigit():
        return float(min(int(value[:12]), 10**9))
    try:
        until = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if until is None or until.tzinfo is None:
        return None
    try:
        now = email.utils.parsedate_to_datetime(headers["date"])
    except (KeyError, TypeError, ValueError, IndexError):
        now = None
    if now is None or now.tzinfo is None:
        now = datetime.datetime.now(datetime.timezone.utc)
    return max(0.0, (until - now).total_seconds())


def _decoded(data: bytes, encoding: bytes, max_body: int) -> bytes:
    """`data` as it was before a gzip or deflate Content-Encoding, within `max_body`
    bytes decoded (a small body that decodes to gigabytes is cut there, as an oversized
    body is); an encoding that cannot be decoded is named."""
    if encoding in (b"", b"identity") or not data:
        return data
    shown = encoding.decode("ascii", "replace")
    if encoding not in _DECODED:
        raise Undecodable(f"a reply encoded as {shown!r} (its Content-Encoding), which lifebench "
                          f"does not decode")
    # gzip's header, or zlib's (deflate as servers send it), or a bare deflate stream
    modes = (16 + zlib.MAX_WBITS,) if encoding != b"deflate" else (zlib.MAX_WBITS, -zlib.MAX_WBITS)
    for mode in modes:
        decoder = zlib.decompressobj(mode)
        try:
            out = decoder.decompress(data, max_body + 1)
        except zlib.error:
            continue
        if len(out) > max_body or decoder.unconsumed_tail:
            raise _TooLarge(f"a {shown} answer decoding to over the limit of {max_body} bytes")
        return out
    raise Undecodable(f"a reply encoded as {shown!r} (its Content-Encoding) that does not decode")


def _left(deadline: float) -> float:
    """Seconds to the deadline; a timeout when none are left."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise socket.timeout("timed out")
    return left


def _read_body(reader: Any, status: int, length: Optional[int], chunked: bool,
               max_body: int = DEFAULT_MAX_BODY) -> bytes:
    if status in (204, 304):
        return b""
    if chunked:
        return _read_chunks(reader, max_body)
    if length is not None:
        if length > max_body:
            raise _TooLarge(f"an answer of {length} bytes, over the limit of {max_body}")
        return _exactly(reader, length)
    data = reader.read(max_body + 1)  # no length: the body ends with the connection
    if len(data) > max_body:
        raise _TooLarge(f"an answer over the limit of {max_body} bytes")
    return data


def _read_chunks(reader: Any, max_body: int = DEFAULT_MAX_BODY) -> bytes:
    """A chunked body: sized chunks up to a chunk of size 0, then trailer lines to a blank."""
    parts = []
    total = 0
    while True:
        size_line = reader.readline(_LINE_MAX).split(b";")[0].strip()
        if not size_line:
            raise ConnectionError("closed in the middle of a chunked answer")
        size = int(size_line[:16], 16) if len(size_line) <= 16 else max_body + 1  # not hex: ValueError
        if size == 0:
            break
        total += size
        if total > max_body:
            raise _TooLarge(f"a chunked answer over the limit of {max_body} bytes")
        parts.append(_exactly(reader, size))
        reader.readline(_LINE_MAX)  # the chunk's line end
    for _ in range(_HEADERS_MAX + 1):  # the trailers, ignored
        if reader.readline(_LINE_MAX) in (b"\r\n", b"\n", b""):
            return b"".join(parts)
    raise ValueError("too many trailer lines")


def _exactly(reader: Any, size: int) -> bytes:
    data = reader.read(size)
    if len(data) != size:
        raise ConnectionError("closed in the middle of an answer")
    return data


_STREAM_PIECE = 1 << 16


class _BoundedReads:
    """A connection's reader whose every read that may block waits at most the stall time
    and never past the deadline (outside a hub a read blocks for the socket's timeout: it
    is set before each one)."""

    def __init__(self, conn: _Connection, stall_s: float) -> None:
        self.conn = conn
        self.stall_s = stall_s

    def wait(self) -> float:
        return min(self.stall_s, _left(self.conn.raw.deadline))

    def readline(self, limit: int) -> bytes:
        self.conn.sock.settimeout(self.wait())
        return self.conn.reader.readline(limit)

    def read1(self, size: int) -> bytes:
        self.conn.sock.settimeout(self.wait())
        return self.conn.reader.read1(size)


class _Truncated(ConnectionError):
    """A download's connection closed before its body's end."""


def _download_head(reader: _BoundedReads) -> tuple[int, Optional[int], bool, Optional[str]]:
    """A download's answer head: (status, content length, chunked, Location)."""
    while True:
        lines = _head_lines(reader)
        head = _parse_head(lines)
        status, length, chunked = head.status, head.length, head.chunked
        if status >= 200:
            location = next((value.strip().decode("latin-1") for name, _, value in
                             (line.partition(b":") for line in lines[1:])
                             if name.strip().lower() == b"location"), None)
            return status, length, chunked, location


def _stream_body(reader: _BoundedReads, length: Optional[int], chunked: bool, max_bytes: int,
                 sink: Sink) -> int:
    """Copy a body to `sink` piece by piece; the bytes copied."""
    if chunked:
        total = 0
        while True:
            size_line = reader.readline(_LINE_MAX).split(b";")[0].strip()
            if not size_line:
                raise _Truncated("the connection closed in the middle of the download")
            size = int(size_line[:16], 16) if len(size_line) <= 16 else max_bytes + 1
            if size == 0:
                return total
            if total + size > max_bytes:
                raise _TooLarge(f"a chunked answer over the limit of {max_bytes} bytes")
            total += _copy_exactly(reader, size, sink)
            reader.readline(_LINE_MAX)  # the chunk's line end
    if length is not None:
        return _copy_exactly(reader, length, sink)
    total = 0
    while True:  # no length: the body ends with the connection
        piece = reader.read1(_STREAM_PIECE)
        if not piece:
            return total
        total += len(piece)
        if total > max_bytes:
            raise _TooLarge(f"an answer over the limit of {max_bytes} bytes")
        _write(sink.write, piece)


def _copy_exactly(reader: _BoundedReads, size: int, sink: Sink) -> int:
    left = size
    while left:
        piece = reader.read1(min(left, _STREAM_PIECE))
        if not piece:
            raise _Truncated(f"the connection closed after {size - left:,} of {size:,} bytes")
        _write(sink.write, piece)
        left -= len(piece)
    return size


def _write(to: Any, value: Any) -> None:
    """Give the sink `value` (`to` is its `write` or `begin`); its OSError is the disk's
    failure, not the connection's."""
    try:
        to(value)
    except OSError as exc:
        raise WriteFailure(exc) from None


def _download_failure(exc: BaseException) -> str:
    """What went wrong, in words a one-line error can use."""
    if isinstance(exc, (_TooLarge, _Truncated)):
        return str(exc)
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, socket.gaierror):
        return "unknown host"
    if isinstance(exc, _ClosedUnanswered):
        return "the server closed the connection without answering"
    if isinstance(exc, ssl.SSLError):
        return f"TLS failed ({exc.reason or exc})"
    if isinstance(exc, ValueError):
        return "not an HTTP answer"
    return exc.strerror or type(exc).__name__ if isinstance(exc, OSError) else type(exc).__name__


def _tunnel(sock: socket.socket, authority: str, authorization: Optional[str]) -> None:
    """CONNECT through an HTTP proxy to reach an https endpoint."""
    lines = [f"CONNECT {authority} HTTP/1.1", f"Host: {authority}"]
    if authorization:
        lines.append(f"Proxy-Authorization: {authorization}")
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    with sock.makefile("rb") as reader:  # nothing follows the answer until TLS starts
        status = _read_head(reader).status
    if status != 200:
        raise ConnectionError(f"the proxy refused the tunnel ({status})")


def _closed_by_peer(sock: socket.socket) -> bool:
    """An idle keep-alive socket that is readable has been closed (or sent garbage)."""
    try:
        poller = select.poll()  # not select(): descriptors past 1024 are common at 256 streams
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return True


@dataclass(frozen=True)
class _Proxy:
    host: str
    port: int
    authorization: Optional[str]  # "Basic ..." when the proxy URL holds a user


def _proxy_for(scheme: str, host: str) -> Optional[_Proxy]:
    proxies = urllib.request.getproxies_environment()
    url = proxies.get(scheme)
    if not url or urllib.request.proxy_bypass_environment(host, proxies):
        return None
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if not parts.hostname:
        return None
    authorization = None
    if parts.username:
        user = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        authorization = "Basic " + base64.b64encode(user.encode()).decode()
    return _Proxy(parts.hostname, parts.port or 80, authorization)


_endpoints_lock = threading.Lock()
_endpoints: dict[tuple[str, float, int], Endpoint] = {}


def endpoint(base_url: str, timeout_s: float, max_body: int = DEFAULT_MAX_BODY) -> Endpoint:
    """The process's one `Endpoint` for a base URL, timeout and answer limit."""
    with _endpoints_lock:
        found = _endpoints.get((base_url, timeout_s, max_body))
        if found is None:
            found = _endpoints[(base_url, timeout_s, max_body)] = Endpoint(base_url, timeout_s,
                                                                           max_body)
        return found
