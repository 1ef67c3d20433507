"""A counting HTTP/1.1 proxy to put in front of an emulator.

Clients use the proxy's URL as their endpoint. Every request is passed on byte for byte (request
line, headers and body, whether the body is sized by Content-Length or sent chunked, JSON or binary
CBOR), and so is every response. Before forwarding, the proxy counts the request under its AWS
operation, taken from the ``X-Amz-Target`` header (``Kinesis_20131202.GetRecords`` counts as
``GetRecords``). Requests without that header count as ``"<METHOD> <path>"``.

Tests use it to assert how many calls the connector makes, for example that an idle trigger does
not call GetRecords on every shard, and to inject faults per operation (:meth:`CountingProxy.inject`):
AWS errors such as ProvisionedThroughputExceededException answered by the proxy in the service's
JSON error format, or a connection cut in the middle of the emulator's response.

Details:

* keep-alive: each client connection gets its own upstream connection and both are reused for
  as many requests as the client sends; ``Connection: close`` (or HTTP/1.0) ends them.
* a request is read whole before it goes upstream; if a reused upstream connection turns out to
  be closed before any answer, the same bytes go once more over a new connection (and are counted
  once), so an emulator's idle timeout never shows up as a client retry.
* ``Expect: 100-continue``: the proxy answers ``100 Continue`` itself to get the body, and still
  forwards the header; an interim answer from upstream is passed on as well.
* HTTP/2 with prior knowledge: the AWS Java SDK's async (Netty) Kinesis client uses it for every
  call, SubscribeToShard included, when the endpoint is plain ``http://``. The connection is
  recognised by its preface and its bytes are passed on unchanged both ways, while the frames are
  read on the side: each request's HEADERS (HPACK-decoded with the ``hpack`` package) count like
  HTTP/1.1 requests, and each response's ``:status`` is recorded. Every HTTP/2 connection also
  counts once as ``"<http2>"``. Without ``hpack`` installed only that last count is kept.
"""

from __future__ import annotations

import contextlib
import json
import random
import select
import socket
import socketserver
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO
from urllib.parse import urlsplit

_HTTP2_PREFACE_LINE = b"PRI * HTTP/2.0\r\n"
_MAX_LINE = 64 * 1024
_CHUNK = 64 * 1024


class ProxyError(Exception):
    """Malformed traffic; the connection is dropped."""


def _read_line(stream: BinaryIO) -> bytes:
    line = stream.readline(_MAX_LINE + 1)
    if len(line) > _MAX_LINE:
        raise ProxyError("header line too long")
    return line


def _read_head(stream: BinaryIO, first: bytes | None = None) -> tuple[bytes, list[bytes]] | None:
    """Read a start line and header lines (raw, with CRLF). ``None`` on a clean EOF."""
    start = first if first is not None else _read_line(stream)
    if not start:
        return None
    lines: list[bytes] = []
    while True:
        line = _read_line(stream)
        if not line:
            raise ProxyError("connection closed inside the headers")
        lines.append(line)
        if line in (b"\r\n", b"\n"):
            return start, lines


def _headers(lines: list[bytes]) -> dict[str, str]:
    """Header names lower-cased; repeated headers joined with a comma."""
    result: dict[str, str] = {}
    for raw in lines:
        name, sep, value = raw.decode("latin-1").partition(":")
        if not sep:
            continue
        key = name.strip().lower()
        value = value.strip()
        result[key] = f"{result[key]}, {value}" if key in result else value
    return result


def _copy_exact(src: BinaryIO, dst: socket.socket, length: int) -> None:
    remaining = length
    while remaining > 0:
        data = src.read(min(remaining, _CHUNK))
        if not data:
            raise ProxyError("connection closed inside a body")
        dst.sendall(data)
        remaining -= len(data)


def _copy_chunked(src: BinaryIO, dst: socket.socket) -> None:
    """Copy a chunked body verbatim (sizes, extensions, data, trailers)."""
    while True:
        size_line = _read_line(src)
        if not size_line:
            raise ProxyError("connection closed inside a chunked body")
        dst.sendall(size_line)
        size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            while True:  # trailers, then the empty line
                trailer = _read_line(src)
                if not trailer:
                    raise ProxyError("connection closed inside chunked trailers")
                dst.sendall(trailer)
                if trailer in (b"\r\n", b"\n"):
                    return
        _copy_exact(src, dst, size + 2)  # data and its CRLF


def _copy_until_eof(src: BinaryIO, dst: socket.socket) -> None:
    while True:
        data = src.read1(_CHUNK)  # type: ignore[attr-defined]
        if not data:
            return
        dst.sendall(data)


def _read_body(src: BinaryIO, headers: dict[str, str]) -> bytes:
    """Read a request body as it came (chunk framing included)."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        parts: list[bytes] = []
        while True:
            size_line = _read_line(src)
            if not size_line:
                raise ProxyError("connection closed inside a chunked body")
            parts.append(size_line)
            size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while True:
                    trailer = _read_line(src)
                    if not trailer:
                        raise ProxyError("connection closed inside chunked trailers")
                    parts.append(trailer)
                    if trailer in (b"\r\n", b"\n"):
                        return b"".join(parts)
            parts.append(_read_exact(src, size + 2))
    if "content-length" in headers:
        return _read_exact(src, int(headers["content-length"].split(",")[0]))
    return b""


def _read_exact(src: BinaryIO, length: int) -> bytes:
    data = src.read(length)
    if len(data) != length:
        raise ProxyError("connection closed inside a body")
    return data


def _is_stale(sock: socket.socket) -> bool:
    """An idle upstream connection that is readable has been closed (or sent junk): replace it."""
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable)


def _copy_body(src: BinaryIO, dst: socket.socket, headers: dict[str, str]) -> None:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        _copy_chunked(src, dst)
    elif "content-length" in headers:
        _copy_exact(src, dst, int(headers["content-length"].split(",")[0]))


def _operation(method: str, target: str | None, path: str) -> str:
    if target:
        return target.rsplit(".", 1)[-1]
    return f"{method} {path.split('?', 1)[0]}"


class _UpstreamGone(Exception):
    """The upstream connection closed before any byte of an answer: safe to send again."""


class _Handler(socketserver.BaseRequestHandler):
    server: CountingProxy._Server

    def handle(self) -> None:
        proxy = self.server.proxy
        client: socket.socket = self.request
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        proxy._track(client, True)
        upstream: socket.socket | None = None
        try:
            client_in = client.makefile("rb")
            first = _read_line(client_in)
            if first == _HTTP2_PREFACE_LINE:
                proxy._record("<http2>", None)
                upstream = proxy._connect()
                upstream.sendall(first)
                _tunnel(proxy, client, client_in, upstream)
                return
            upstream_in: BinaryIO | None = None
            while True:
                head = _read_head(client_in, first)
                first = None
                if head is None:
                    return
                start_line, header_lines = head
                parts = start_line.decode("latin-1").split()
                if len(parts) != 3:
                    raise ProxyError(f"bad request line {start_line!r}")
                method, path, version = parts
                headers = _headers(header_lines)
                operation = _operation(method, headers.get("x-amz-target"), path)
                proxy._record(operation, None)

                if "100-continue" in headers.get("expect", "").lower():
                    # Let the client send its body now; upstream's own 100 is passed on too
                    # (a client ignores an extra 1xx).
                    client.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                # Requests are small (Kinesis caps them at a few MB): hold the whole request so
                # it can be sent again, unchanged, if a reused upstream connection turns out closed.
                request = start_line + b"".join(header_lines) + _read_body(client_in, headers)

                fault = proxy._take_fault(operation)
                if fault is not None and fault.kind != "cut":
                    client.sendall(fault.response())
                    proxy._record(operation, fault.status)
                    continue
                if fault is not None:  # "cut": forward, then drop the connection inside the response
                    cut_upstream = proxy._connect()
                    try:
                        cut_upstream.sendall(request)
                        cut_in = cut_upstream.makefile("rb")
                        answer = _read_head(cut_in)
                        if answer is not None:
                            status_line, answer_lines = answer
                            body = _read_body(cut_in, _headers(answer_lines))
                            # Whole headers, half the body: the client sees a response that breaks off.
                            client.sendall(status_line + b"".join(answer_lines) + body[: len(body) // 2])
                    finally:
                        cut_upstream.close()
                    proxy._record(operation, 0)
                    return

                for attempt in (1, 2):
                    if upstream is not None and _is_stale(upstream):
                        upstream.close()
                        upstream = None
                    if upstream is None:
                        upstream = proxy._connect()
                        upstream_in = upstream.makefile("rb")
                    assert upstream_in is not None
                    try:
                        upstream.sendall(request)
                        keep_alive = self._relay_response(client, upstream_in, method, operation, version, headers)
                        break
                    except (_UpstreamGone, ConnectionResetError, BrokenPipeError):
                        upstream.close()
                        upstream = None
                        if attempt == 2:
                            raise
                if not keep_alive:
                    return
        except (OSError, ProxyError, ValueError, _UpstreamGone):
            return
        finally:
            proxy._track(client, False)
            for sock in (upstream, client):
                if sock is not None:
                    with contextlib.suppress(OSError):
                        sock.close()

    def _relay_response(
        self,
        client: socket.socket,
        upstream_in: BinaryIO,
        method: str,
        operation: str,
        request_version: str,
        request_headers: dict[str, str],
    ) -> bool:
        """Pass one response (and any 1xx before it) back; return whether to keep the connection."""
        proxy = self.server.proxy
        answered = False
        while True:
            try:
                head = _read_head(upstream_in)
            except (ProxyError, ConnectionResetError) as error:
                if answered:
                    raise
                raise _UpstreamGone() from error
            if head is None:
                if answered:
                    raise ProxyError("upstream closed inside a response")
                raise _UpstreamGone()
            status_line, header_lines = head
            client.sendall(status_line + b"".join(header_lines))
            answered = True
            version, status_text = status_line.decode("latin-1").split()[:2]
            status = int(status_text)
            if 100 <= status < 200 and status != 101:
                continue
            break
        headers = _headers(header_lines)
        proxy._record(operation, status)
        no_body = method == "HEAD" or status in (204, 304) or 100 <= status < 200
        until_eof = False
        if not no_body:
            if "chunked" in headers.get("transfer-encoding", "").lower() or ("content-length" in headers):
                _copy_body(upstream_in, client, headers)
            else:
                _copy_until_eof(upstream_in, client)
                until_eof = True
        closing = (
            until_eof
            or "close" in headers.get("connection", "").lower()
            or "close" in request_headers.get("connection", "").lower()
            or version == "HTTP/1.0"
            or request_version == "HTTP/1.0"
        )
        return not closing


class _H2HeaderWatcher:
    """Reads one direction of an HTTP/2 connection and reports each complete header block.

    Bytes are only looked at, never changed. ``skip`` bytes at the start are ignored (the rest of
    the client's connection preface). Decoding errors turn the watcher off, never the connection.
    """

    _HEADERS, _CONTINUATION = 0x1, 0x9
    _END_HEADERS, _PADDED, _PRIORITY = 0x4, 0x8, 0x20

    def __init__(self, on_headers: Callable[[int, list[tuple[str, str]]], None], skip: int = 0):
        try:
            from hpack import Decoder
        except ImportError:
            self._decoder = None
        else:
            self._decoder = Decoder()
            # Our side never sends SETTINGS, so allow what a peer may announce.
            self._decoder.max_allowed_table_size = 1 << 20
        self._on_headers = on_headers
        self._skip = skip
        self._buffer = b""
        self._block = b""
        self._block_stream = 0

    def feed(self, data: bytes) -> None:
        if self._decoder is None:
            return
        try:
            self._feed(data)
        except Exception:
            self._decoder = None

    def _feed(self, data: bytes) -> None:
        assert self._decoder is not None
        if self._skip:
            dropped = min(self._skip, len(data))
            self._skip -= dropped
            data = data[dropped:]
        self._buffer += data
        while len(self._buffer) >= 9:
            length = int.from_bytes(self._buffer[:3], "big")
            if len(self._buffer) < 9 + length:
                return
            kind, flags = self._buffer[3], self._buffer[4]
            stream = int.from_bytes(self._buffer[5:9], "big") & 0x7FFFFFFF
            payload = self._buffer[9 : 9 + length]
            self._buffer = self._buffer[9 + length :]
            if kind == self._HEADERS:
                if flags & self._PADDED:
                    pad = payload[0]
                    payload = payload[1 : len(payload) - pad]
                if flags & self._PRIORITY:
                    payload = payload[5:]
                self._block, self._block_stream = payload, stream
            elif kind == self._CONTINUATION:
                self._block += payload
            else:
                continue
            if flags & self._END_HEADERS:
                headers = self._decoder.decode(self._block)
                self._block = b""
                self._on_headers(self._block_stream, [(str(k), str(v)) for k, v in headers])


def _tunnel(proxy: CountingProxy, client: socket.socket, client_in: BinaryIO, upstream: socket.socket) -> None:
    """Pass raw bytes both ways until either side closes, counting HTTP/2 requests on the way."""
    operations: dict[int, str] = {}

    def on_request(stream: int, headers: list[tuple[str, str]]) -> None:
        fields = dict(headers)
        if ":method" not in fields:
            return  # trailers
        operation = _operation(fields[":method"], fields.get("x-amz-target"), fields.get(":path", "/"))
        operations[stream] = operation
        proxy._record(operation, None)

    def on_response(stream: int, headers: list[tuple[str, str]]) -> None:
        status = dict(headers).get(":status")
        if status is not None and not status.startswith("1") and stream in operations:
            proxy._record(operations.pop(stream), int(status))

    to_upstream = _H2HeaderWatcher(on_request, skip=len(b"\r\nSM\r\n\r\n"))
    to_client = _H2HeaderWatcher(on_response)

    def pump_client() -> None:
        with contextlib.suppress(OSError):
            while True:
                data = client_in.read1(_CHUNK)  # type: ignore[attr-defined]
                if not data:
                    break
                to_upstream.feed(data)
                upstream.sendall(data)
        with contextlib.suppress(OSError):
            upstream.shutdown(socket.SHUT_WR)

    thread = threading.Thread(target=pump_client, daemon=True)
    thread.start()
    with contextlib.suppress(OSError):
        while True:
            data = upstream.recv(_CHUNK)
            if not data:
                break
            to_client.feed(data)
            client.sendall(data)
    with contextlib.suppress(OSError):
        client.shutdown(socket.SHUT_WR)
    thread.join(timeout=5)


_FAULT_ERRORS = {
    "throttle": (400, "ProvisionedThroughputExceededException", "Rate exceeded for shard (injected)"),
    "limit": (400, "LimitExceededException", "Rate exceeded (injected)"),
    "expired": (400, "ExpiredIteratorException", "Iterator expired (injected)"),
    "internal": (500, "InternalFailure", "Internal service error (injected)"),
}


@dataclass(frozen=True)
class Fault:
    """An injected failure: an AWS error answered by the proxy itself, or ``cut`` (the request
    reaches the emulator, and the connection is dropped in the middle of the response)."""

    kind: str

    @property
    def status(self) -> int:
        return _FAULT_ERRORS[self.kind][0]

    def response(self) -> bytes:
        status, code, message = _FAULT_ERRORS[self.kind]
        body = json.dumps({"__type": code, "message": message}).encode()
        reason = "Bad Request" if status == 400 else "Internal Server Error"
        head = (
            f"HTTP/1.1 {status} {reason}\r\n"
            "Content-Type: application/x-amz-json-1.1\r\n"
            f"x-amzn-ErrorType: {code}:\r\n"
            f"x-amzn-RequestId: injected-{random.getrandbits(32):08x}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        return head.encode("latin-1") + body


@dataclass
class _FaultRule:
    fault: Fault
    probability: float
    remaining: int | None


class CountingProxy:
    """A threaded proxy on a free 127.0.0.1 port in front of ``upstream`` (``http://host:port``).

    Use as a context manager, or call :meth:`close`. ``url`` is the endpoint to give clients.
    """

    class _Server(socketserver.ThreadingTCPServer):
        daemon_threads = True
        allow_reuse_address = True
        proxy: CountingProxy

    def __init__(self, upstream: str, *, timeout: float = 300.0, seed: int = 0) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or not parts.hostname or not parts.port:
            raise ValueError(f"upstream must look like http://host:port, got {upstream!r}")
        self.upstream = upstream
        self._target = (parts.hostname, parts.port)
        self._timeout = timeout
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._statuses: Counter[tuple[str, int]] = Counter()
        self._clients: set[socket.socket] = set()
        self._faults: dict[str, list[_FaultRule]] = {}
        self._injected: Counter[str] = Counter()
        self._random = random.Random(seed)
        self._server = CountingProxy._Server(("127.0.0.1", 0), _Handler)
        self._server.proxy = self
        self.port = int(self._server.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self._thread.start()

    # -- what tests use ---------------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        """Requests seen per operation since the start or the last :meth:`reset`."""
        with self._lock:
            return dict(self._counts)

    def count(self, operation: str) -> int:
        with self._lock:
            return self._counts.get(operation, 0)

    def statuses(self) -> dict[tuple[str, int], int]:
        """Responses passed back per (operation, HTTP status)."""
        with self._lock:
            return dict(self._statuses)

    def inject(self, operation: str, kind: str, *, probability: float = 1.0, times: int | None = None) -> None:
        """Fail requests of ``operation`` (``"GetRecords"``, ...) with ``kind`` (see :class:`Fault`).

        Each request fails with ``probability``; at most ``times`` requests fail (unlimited when
        ``None``). Rules add up: each request tries an operation's rules in the order they were
        given, and the first that fires wins. HTTP/2 traffic
        (SubscribeToShard) is tunnelled and never faulted here.
        """
        if kind not in _FAULT_ERRORS and kind != "cut":
            raise ValueError(f"unknown fault {kind!r}; use one of {sorted([*_FAULT_ERRORS, 'cut'])}")
        with self._lock:
            self._faults.setdefault(operation, []).append(_FaultRule(Fault(kind), probability, times))

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def injected(self) -> dict[str, int]:
        """Faults injected so far, per ``"<operation>:<kind>"``."""
        with self._lock:
            return dict(self._injected)

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()
            self._statuses.clear()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            clients = list(self._clients)
        for sock in clients:  # wake up handler threads blocked on idle keep-alive connections
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=5)

    def __enter__(self) -> CountingProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- used by the handler ----------------------------------------------------------------------

    def _record(self, operation: str, status: int | None) -> None:
        with self._lock:
            if status is None:
                self._counts[operation] += 1
            else:
                self._statuses[(operation, status)] += 1

    def _take_fault(self, operation: str) -> Fault | None:
        with self._lock:
            for rule in self._faults.get(operation, []):
                if rule.remaining == 0 or self._random.random() >= rule.probability:
                    continue
                if rule.remaining is not None:
                    rule.remaining -= 1
                self._injected[f"{operation}:{rule.fault.kind}"] += 1
                return rule.fault
            return None

    def _track(self, sock: socket.socket, add: bool) -> None:
        with self._lock:
            if add:
                self._clients.add(sock)
            else:
                self._clients.discard(sock)

    def _connect(self) -> socket.socket:
        sock = socket.create_connection(self._target, timeout=self._timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock
