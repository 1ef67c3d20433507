"""A forward HTTP proxy with Basic proxy authentication, for tests of the connector's proxy options.

Clients are configured to use it as their proxy (not as their endpoint, unlike
:mod:`harness.proxy`). It serves both kinds of proxied request:

* ``CONNECT host:port``: a tunnel, opened after the credentials are checked, then bytes copied both
  ways unchanged (TLS to kinesis-local's TLS port, or h2c to its plain port). Counted per target
  under ``"CONNECT host:port"``.
* an absolute-form request (``POST http://host:port/ HTTP/1.1``): passed on to the origin in origin
  form, without the ``Proxy-*`` headers, and its answer passed back; keep-alive is honoured.
  Counted under its AWS operation (``X-Amz-Target``: ``Kinesis_20131202.GetRecords`` counts as
  ``GetRecords``), else ``"<METHOD> <path>"``.

Host names given as ``aliases`` resolve, in this proxy only, to the address given: an endpoint URL
with such a name can be reached through the proxy and in no other way, so a client that bypassed it
would fail.

A request without the right ``Proxy-Authorization: Basic ...`` is answered ``407 Proxy
Authentication Required`` (with a ``Proxy-Authenticate`` challenge) and counted under ``"407"``;
it never reaches the origin. The proxy also records every ``Proxy-Authorization`` value it saw, so
a test can tell which client sent credentials.
"""

from __future__ import annotations

import base64
import contextlib
import select
import socket
import socketserver
import threading
from collections import Counter
from urllib.parse import urlsplit

_MAX_LINE = 64 * 1024
_CHUNK = 64 * 1024


class ForwardProxy:
    """A forward proxy on 127.0.0.1 (port chosen by the system); use as a context manager."""

    def __init__(
        self, username: str | None = None, password: str | None = None, aliases: dict[str, str] | None = None
    ) -> None:
        self._expected = (
            None if username is None else "Basic " + base64.b64encode(f"{username}:{password or ''}".encode()).decode()
        )
        # Host names only this proxy resolves (to the given address): a client that reaches one went through it.
        self._aliases = {k.lower(): v for k, v in (aliases or {}).items()}
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self.authorizations: list[str] = []
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                proxy._serve(self.request)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self._server = Server(("127.0.0.1", 0), Handler)
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> ForwardProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def host(self) -> str:
        return "127.0.0.1"

    def counts(self) -> Counter[str]:
        """A copy of the counts so far."""
        with self._lock:
            return Counter(self._counts)

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()
            self.authorizations.clear()

    def _count(self, key: str, authorization: str | None = None) -> None:
        with self._lock:
            self._counts[key] += 1
            if authorization is not None:
                self.authorizations.append(authorization)

    def _resolve(self, host: str) -> str:
        return self._aliases.get(host.lower(), host)

    # --- serving one client connection -------------------------------------------------------------

    def _serve(self, client: socket.socket) -> None:
        client_in = _Reader(client)
        upstream: socket.socket | None = None
        upstream_in: _Reader | None = None
        upstream_at: tuple[str, int] | None = None
        try:
            while True:
                head = _read_head(client_in)
                if head is None:
                    return
                request_line, headers = head
                method, target, version = request_line.split(" ", 2)
                authorization = _header(headers, "proxy-authorization")
                if self._expected is not None and authorization != self._expected:
                    self._count("407", authorization)
                    _skip_body(client_in, headers)
                    client.sendall(
                        b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                        b'Proxy-Authenticate: Basic realm="test"\r\nContent-Length: 0\r\n\r\n'
                    )
                    continue
                if method.upper() == "CONNECT":
                    self._count(f"CONNECT {target}", authorization)
                    host, _, port = target.rpartition(":")
                    tunnel = socket.create_connection((self._resolve(host.strip("[]")), int(port)), timeout=10)
                    client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    _pump(client, client_in, tunnel)
                    return
                parts = urlsplit(target)
                origin = (self._resolve(parts.hostname or ""), parts.port or 80)
                op = _header(headers, "x-amz-target")
                self._count(op.rsplit(".", 1)[-1] if op else f"{method} {parts.path or '/'}", authorization)
                if upstream is None or upstream_at != origin:
                    if upstream is not None:
                        upstream.close()
                    upstream = socket.create_connection(origin, timeout=30)
                    upstream_in = _Reader(upstream)
                    upstream_at = origin
                path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
                kept = [(k, v) for k, v in headers if not k.lower().startswith("proxy-")]
                out = f"{method} {path} {version}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in kept) + "\r\n"
                upstream.sendall(out.encode("latin-1") + _read_body(client_in, headers))
                assert upstream_in is not None
                status_line, response_headers = _read_head(upstream_in) or ("", [])
                body = _read_body(upstream_in, response_headers, response=True)
                reply = status_line + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in response_headers) + "\r\n"
                client.sendall(reply.encode("latin-1") + body)
                if (_header(headers, "connection") or "").lower() == "close":
                    return
        except (OSError, ValueError):
            return
        finally:
            if upstream is not None:
                with contextlib.suppress(OSError):
                    upstream.close()
            with contextlib.suppress(OSError):
                client.close()


class _Reader:
    """Buffered reads from a socket that can hand over what it buffered (for a tunnel)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = bytearray()

    def _fill(self) -> bool:
        data = self._sock.recv(_CHUNK)
        self._buffer += data
        return bool(data)

    def readline(self, limit: int = _MAX_LINE) -> bytes:
        while b"\n" not in self._buffer and len(self._buffer) < limit:
            if not self._fill():
                break
        end = self._buffer.find(b"\n")
        end = len(self._buffer) if end < 0 else end + 1
        line = bytes(self._buffer[:end])
        del self._buffer[:end]
        return line

    def read(self, n: int | None = None) -> bytes:
        if n is None:
            while self._fill():
                pass
            n = len(self._buffer)
        while len(self._buffer) < n:
            if not self._fill():
                break
        data = bytes(self._buffer[:n])
        del self._buffer[:n]
        return data

    def take_buffer(self) -> bytes:
        data = bytes(self._buffer)
        self._buffer.clear()
        return data


def _read_head(stream: _Reader) -> tuple[str, list[tuple[str, str]]] | None:
    line = stream.readline(_MAX_LINE)
    if not line:
        return None
    first = line.decode("latin-1").rstrip("\r\n")
    headers: list[tuple[str, str]] = []
    while True:
        raw = stream.readline(_MAX_LINE)
        if raw in (b"\r\n", b"\n", b""):
            return first, headers
        name, _, value = raw.decode("latin-1").partition(":")
        headers.append((name.strip(), value.strip()))


def _header(headers: list[tuple[str, str]], name: str) -> str | None:
    return next((v for k, v in headers if k.lower() == name), None)


def _read_body(stream: _Reader, headers: list[tuple[str, str]], *, response: bool = False) -> bytes:
    """The body, re-encoded as sent: sized by Content-Length, or chunked (passed on chunked)."""
    if (_header(headers, "transfer-encoding") or "").lower() == "chunked":
        out = bytearray()
        while True:
            size_line = stream.readline(_MAX_LINE)
            out += size_line
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while True:
                    trailer = stream.readline(_MAX_LINE)
                    out += trailer
                    if trailer in (b"\r\n", b"\n", b""):
                        return bytes(out)
            out += stream.read(size + 2)
    length = _header(headers, "content-length")
    if length is not None:
        return stream.read(int(length))
    return stream.read(None) if response else b""


def _skip_body(stream: _Reader, headers: list[tuple[str, str]]) -> None:
    _read_body(stream, headers)


def _pump(client: socket.socket, client_in: _Reader, tunnel: socket.socket) -> None:
    """Copies bytes both ways until either side closes (what the client sent early is passed on first)."""
    buffered = client_in.take_buffer()
    if buffered:
        tunnel.sendall(buffered)
    sockets = [client, tunnel]
    try:
        while True:
            readable, _, _ = select.select(sockets, [], [], 60)
            if not readable:
                return
            for source in readable:
                data = source.recv(_CHUNK)
                if not data:
                    return
                (tunnel if source is client else client).sendall(data)
    finally:
        with contextlib.suppress(OSError):
            tunnel.close()
