"""A counting HTTP/1.1 proxy to put in front of an emulator.

Clients use the proxy's URL as their endpoint. Every request is passed on byte for byte (request
line, headers and body, whether the body is sized by Content-Length or sent chunked, JSON or binary
CBOR), and so is every response. Before forwarding, the proxy counts the request under its AWS
operation, taken from the ``X-Amz-Target`` header (``Kinesis_20131202.GetRecords`` counts as
``GetRecords``). Requests without that header count as ``"<METHOD> <path>"``, with ``?list-type`` or ``?delete``
after the path for S3's object listings and multi-object deletes.

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
  recognised by its preface and relayed frame by frame (:class:`_H2Relay`): frames pass unchanged
  except header blocks, which the proxy decodes and encodes again (``hpack`` package) so that it
  can answer a request itself or reset a stream without breaking either side's HPACK state. Each
  request counts like an HTTP/1.1 request and each response's ``:status`` is recorded; every
  HTTP/2 connection also counts once as ``"<http2>"``. Faults work the same way as over HTTP/1.1
  (an AWS error answered on the stream, or a response broken off: see :class:`Fault`).
* service-managed record distribution (:meth:`CountingProxy.distribute_automatically`): for the streams named, the
  proxy acts as Kinesis does for a stream whose ``RecordDistributionStrategy`` is ``AUTO``, which the emulators do
  not know. DescribeStreamSummary answers report ``AUTO``; each record of PutRecord and PutRecords gets a random
  ``ExplicitHashKey`` (so it lands on a shard regardless of its key, as the service places it); a record put without
  a ``PartitionKey`` is given one for the emulator, which requires it, and GetRecords answers leave that invented
  key out again, as Kinesis returns no key for such a record. Over HTTP/1.1 only, JSON and CBOR alike: the HTTP/2
  relay (SubscribeToShard event streams) passes records as they are stored, invented keys included.
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
from typing import Any, BinaryIO
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
    path, _, query = path.partition("?")
    # S3's REST calls that share a method and path with another: a listing (GET ?list-type=2) and a multi-object
    # delete (POST ?delete).
    names = {item.split("=", 1)[0] for item in query.split("&")}
    marker = next((f"?{name}" for name in ("list-type", "delete") if name in names), "")
    return f"{method} {path}{marker}"


def _dechunk(body: bytes, headers: dict[str, str]) -> bytes:
    """The payload of a body read by :func:`_read_body` (chunk framing removed; trailers dropped)."""
    if "chunked" not in headers.get("transfer-encoding", "").lower():
        return body
    out, pos = bytearray(), 0
    while True:
        end = body.index(b"\r\n", pos)
        size = int(body[pos:end].split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            return bytes(out)
        out += body[end + 2 : end + 2 + size]
        pos = end + 2 + size + 2


def _with_length(header_lines: list[bytes], length: int) -> bytes:
    """The header lines (with their final empty line) for a body rewritten to ``length`` bytes: a Content-Length of
    that, no chunked framing, no checksum of the old body."""
    kept = [
        line
        for line in header_lines[:-1]
        if line.split(b":", 1)[0].strip().lower() not in (b"content-length", b"transfer-encoding", b"content-md5")
    ]
    return b"".join(kept) + f"Content-Length: {length}\r\n".encode("latin-1") + header_lines[-1]


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
                _H2Relay(proxy, client, client_in, upstream).run()
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
                rewrite = proxy._auto_rewrite(
                    operation, headers, request[len(start_line) + sum(map(len, header_lines)) :]
                )
                if rewrite is not None:
                    new_body, transform = rewrite
                    request = start_line + _with_length(header_lines, len(new_body)) + new_body
                else:
                    transform = None

                fault = proxy._take_fault(operation)
                if fault is not None:
                    proxy._note_injected(operation, fault.kind)
                if fault is not None and fault.kind in _FAULT_ERRORS:
                    proxy._record(operation, fault.status)  # before the answer: see _H2Relay._answer
                    client.sendall(fault.response())
                    continue
                if fault is not None:  # "cut" or "drop": forward, then drop the connection inside the response
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
                        keep_alive = self._relay_response(
                            client, upstream_in, method, operation, version, headers, transform
                        )
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
        transform: Callable[[int, bytes], bytes] | None = None,
    ) -> bool:
        """Pass one response (and any 1xx before it) back; return whether to keep the connection.

        ``transform(status, body)``, when given, rewrites a final response's (whole, de-chunked) body.
        """
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
            version, status_text = status_line.decode("latin-1").split()[:2]
            status = int(status_text)
            final = not (100 <= status < 200)
            if transform is not None and final and "content-encoding" not in _headers(header_lines):
                body = _dechunk(_read_body(upstream_in, _headers(header_lines)), _headers(header_lines))
                body = transform(status, body)
                client.sendall(status_line + _with_length(header_lines, len(body)) + body)
                proxy._record(operation, status)
                closing = "close" in _headers(header_lines).get("connection", "").lower()
                return not (closing or version == "HTTP/1.0" or request_version == "HTTP/1.0")
            client.sendall(status_line + b"".join(header_lines))
            answered = True
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


# -- HTTP/2 ------------------------------------------------------------------------------------------
#
# The relay reads both directions frame by frame (RFC 9113). Frames are passed on unchanged, except
# header blocks: each one is decoded (HPACK) and encoded again by the proxy, without the dynamic table
# (literals never indexed, static-table references only). That costs a few bytes per block and buys
# freedom: the proxy can leave a request out, answer it itself, or drop the rest of a response, and
# neither side's HPACK state can go out of step, since neither side's compression context is shared
# with the other any more.

_DATA, _HEADERS, _RST_STREAM, _PUSH_PROMISE, _WINDOW_UPDATE, _CONTINUATION = 0x0, 0x1, 0x3, 0x5, 0x8, 0x9
_END_STREAM, _END_HEADERS, _PADDED, _PRIORITY_FLAG = 0x1, 0x4, 0x8, 0x20
_INTERNAL_ERROR, _CANCEL = 0x2, 0x8
_MIN_MAX_FRAME = 16384  # the largest frame payload every HTTP/2 peer must accept
_PREFACE_REST = b"\r\nSM\r\n\r\n"  # what follows the "PRI * HTTP/2.0" line


def _h2_frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


def _read_h2_frame(src: BinaryIO) -> tuple[int, int, int, bytes] | None:
    """(type, flags, stream id, payload) of the next frame; None on a clean EOF between frames."""
    head = src.read(9)
    if not head:
        return None
    if len(head) != 9:
        raise ProxyError("connection closed inside a frame header")
    length = int.from_bytes(head[:3], "big")
    stream = int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
    return head[3], head[4], stream, _read_exact(src, length)


def _split_block_payload(kind: int, flags: int, payload: bytes) -> tuple[bytes, bytes]:
    """Split a HEADERS or PUSH_PROMISE payload into (fixed prefix, header block fragment); padding is dropped.

    The prefix is the 5 priority bytes of a HEADERS frame with the PRIORITY flag, or the promised stream id of a
    PUSH_PROMISE; empty otherwise.
    """
    if flags & _PADDED:
        pad = payload[0]
        payload = payload[1 : len(payload) - pad]
    prefix_length = 4 if kind == _PUSH_PROMISE else (5 if flags & _PRIORITY_FLAG else 0)
    return payload[:prefix_length], payload[prefix_length:]


def _encode_block(kind: int, flags: int, stream: int, prefix: bytes, headers: list[tuple[str, str]]) -> bytes:
    """A header block as HEADERS (or PUSH_PROMISE) + CONTINUATION frames, encoded without the dynamic table."""
    from hpack import Encoder, NeverIndexedHeaderTuple

    # A fresh encoder per block, and nothing indexed: the peer's decoding table never changes.
    block = Encoder().encode([NeverIndexedHeaderTuple(name, value) for name, value in headers])
    first = _MIN_MAX_FRAME - len(prefix)
    pieces = [block[:first]] + [block[i : i + _MIN_MAX_FRAME] for i in range(first, len(block), _MIN_MAX_FRAME)]
    kept = flags & (_END_STREAM | _PRIORITY_FLAG) if kind == _HEADERS else 0
    frames = []
    for index, piece in enumerate(pieces):
        end = _END_HEADERS if index == len(pieces) - 1 else 0
        if index == 0:
            frames.append(_h2_frame(kind, kept | end, stream, prefix + piece))
        else:
            frames.append(_h2_frame(_CONTINUATION, end, stream, piece))
    return b"".join(frames)


def _add_to_block(block: list[Any] | None, kind: int, flags: int, stream: int, payload: bytes) -> list[Any]:
    """The header block being read, as [kind, flags, stream, prefix, fragments], with this frame added: a HEADERS or
    PUSH_PROMISE frame opens a block, a CONTINUATION frame extends the open one."""
    if kind != _CONTINUATION:
        prefix, fragment = _split_block_payload(kind, flags, payload)
        return [kind, flags, stream, prefix, [fragment]]
    assert block is not None
    block[4].append(payload)
    return block


class _H2Relay:
    """One HTTP/2 connection between a client and the upstream, relayed frame by frame.

    Requests are counted per operation and their response statuses recorded, as for HTTP/1.1. A request whose
    operation has a fault rule (:meth:`CountingProxy.inject`) may be

    * answered by the proxy with an AWS error (it never reaches the upstream): HEADERS with ``:status`` and
      ``x-amzn-ErrorType``, then the JSON error body, as Kinesis answers a refused SubscribeToShard;
    * forwarded, and its stream reset (``cut``: RST_STREAM INTERNAL_ERROR to the client, CANCEL to the upstream)
      once ``after_frames`` DATA frames of the response have passed: a subscription broken off mid-stream;
    * forwarded, and the whole connection closed (``drop``) at that point, which ends every stream on it.

    Streams the proxy answered or cut are dead: whatever either side still sends on them is dropped, and the
    flow-control credit of dropped DATA is handed back to the sender so the connection's window does not shrink.
    """

    def __init__(self, proxy: CountingProxy, client: socket.socket, client_in: BinaryIO, upstream: socket.socket):
        from hpack import Decoder

        self.proxy = proxy
        self.client = client
        self.client_in = client_in
        self.upstream = upstream
        self.upstream_in = upstream.makefile("rb")
        self.client_lock = threading.Lock()  # a frame (or a whole header block) is written in one piece
        self.upstream_lock = threading.Lock()
        self.state_lock = threading.Lock()
        self.operations: dict[int, str] = {}  # stream -> operation of its request
        self.local: dict[int, Fault] = {}  # streams to answer with an error once the request has ended
        self.pending_cuts: dict[int, list[Any]] = {}  # stream -> [fault, DATA frames left before the cut]
        self.dead: set[int] = set()
        self.request_decoder = Decoder()
        self.response_decoder = Decoder()
        for decoder in (self.request_decoder, self.response_decoder):
            decoder.max_allowed_table_size = 1 << 20  # the proxy sends no SETTINGS: accept what a peer announces

    def run(self) -> None:
        rest = _read_exact(self.client_in, len(_PREFACE_REST))
        if rest != _PREFACE_REST:
            raise ProxyError("bad HTTP/2 connection preface")
        self.upstream.sendall(_HTTP2_PREFACE_LINE + rest)
        thread = threading.Thread(target=self._guarded, args=(self._client_to_upstream,), daemon=True)
        thread.start()
        self._guarded(self._upstream_to_client)
        thread.join(timeout=5)

    def _guarded(self, pump: Callable[[], None]) -> None:
        """Run one direction; on EOF let the other side know, on any error end the whole connection."""
        try:
            pump()
        except Exception:
            self._close_both()

    def _close_both(self) -> None:
        for sock in (self.client, self.upstream):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def _to_client(self, data: bytes) -> None:
        with self.client_lock:
            self.client.sendall(data)

    def _to_upstream(self, data: bytes) -> None:
        with self.upstream_lock:
            self.upstream.sendall(data)

    def _is_dead(self, stream: int) -> bool:
        with self.state_lock:
            return stream in self.dead

    # -- client -> upstream ---------------------------------------------------------------------------

    def _client_to_upstream(self) -> None:
        block: list[Any] | None = None  # [kind, flags, stream, prefix, fragments] of a header block being read
        while True:
            frame = _read_h2_frame(self.client_in)
            if frame is None:
                break
            kind, flags, stream, payload = frame
            if kind == _HEADERS or (kind == _CONTINUATION and block is not None):
                block = _add_to_block(block, kind, flags, stream, payload)
                if flags & _END_HEADERS:
                    self._request_block(*block)
                    block = None
                continue
            if stream and self._is_dead(stream):
                if kind == _DATA:
                    self._give_back(self._to_client, payload)
                    if flags & _END_STREAM:
                        self._answer(stream)
                continue
            self._to_upstream(_h2_frame(kind, flags, stream, payload))
        with contextlib.suppress(OSError):
            self.upstream.shutdown(socket.SHUT_WR)

    def _request_block(self, kind: int, flags: int, stream: int, prefix: bytes, fragments: list[bytes]) -> None:
        headers = [(str(k), str(v)) for k, v in self.request_decoder.decode(b"".join(fragments))]
        fields = dict(headers)
        if ":method" in fields:  # a request (not trailers)
            operation = _operation(fields[":method"], fields.get("x-amz-target"), fields.get(":path", "/"))
            self.proxy._record(operation, None)
            fault = self.proxy._take_fault(operation)
            with self.state_lock:
                self.operations[stream] = operation
                if fault is not None and fault.kind in _FAULT_ERRORS:
                    self.local[stream] = fault
                    self.dead.add(stream)
                elif fault is not None:
                    self.pending_cuts[stream] = [fault, max(1, fault.after_frames)]
        if self._is_dead(stream):
            if flags & _END_STREAM:
                self._answer(stream)
            return
        self._to_upstream(_encode_block(kind, flags, stream, prefix, headers))

    def _answer(self, stream: int) -> None:
        """Answer a request the proxy kept to itself with its injected AWS error."""
        with self.state_lock:
            fault = self.local.pop(stream, None)
            operation = self.operations.pop(stream, "?")
        if fault is None:
            return
        status, code, _ = _FAULT_ERRORS[fault.kind]
        body = fault.body()
        headers = [
            (":status", str(status)),
            ("content-type", "application/x-amz-json-1.1"),
            ("x-amzn-errortype", f"{code}:"),
            ("x-amzn-requestid", f"injected-{random.getrandbits(32):08x}"),
            ("content-length", str(len(body))),
        ]
        # Counted before the answer leaves, so a client that has the answer also sees it counted.
        self.proxy._record(operation, status)
        self.proxy._note_injected(operation, fault.kind)
        self._to_client(_encode_block(_HEADERS, 0, stream, b"", headers) + _h2_frame(_DATA, _END_STREAM, stream, body))

    # -- upstream -> client ---------------------------------------------------------------------------

    def _upstream_to_client(self) -> None:
        block: list[Any] | None = None
        while True:
            frame = _read_h2_frame(self.upstream_in)
            if frame is None:
                break
            kind, flags, stream, payload = frame
            if kind in (_HEADERS, _PUSH_PROMISE) or (kind == _CONTINUATION and block is not None):
                block = _add_to_block(block, kind, flags, stream, payload)
                if flags & _END_HEADERS:
                    self._response_block(*block)
                    block = None
                continue
            if stream and self._is_dead(stream):
                if kind == _DATA:
                    self._give_back(self._to_upstream, payload)
                continue
            self._to_client(_h2_frame(kind, flags, stream, payload))
            if kind == _DATA:
                self._count_down_cut(stream, flags)
            elif kind == _RST_STREAM:
                with self.state_lock:
                    self.pending_cuts.pop(stream, None)
        with contextlib.suppress(OSError):
            self.client.shutdown(socket.SHUT_WR)

    def _response_block(self, kind: int, flags: int, stream: int, prefix: bytes, fragments: list[bytes]) -> None:
        # Always decoded, even on a dead stream: the upstream's encoder counts on this decoder's table.
        headers = [(str(k), str(v)) for k, v in self.response_decoder.decode(b"".join(fragments))]
        if self._is_dead(stream):
            return
        status = dict(headers).get(":status")
        if kind == _HEADERS and status is not None and not status.startswith("1"):
            with self.state_lock:
                operation = self.operations.get(stream)
            if operation is not None:
                self.proxy._record(operation, int(status))
        self._to_client(_encode_block(kind, flags, stream, prefix, headers))
        if kind == _HEADERS and flags & _END_STREAM:
            with self.state_lock:
                self.pending_cuts.pop(stream, None)
                self.operations.pop(stream, None)

    def _count_down_cut(self, stream: int, flags: int) -> None:
        """After a DATA frame went to the client: cut the stream if a cut is due."""
        with self.state_lock:
            pending = self.pending_cuts.get(stream)
            if pending is None:
                return
            if flags & _END_STREAM:  # the response ended before the cut was due: nothing injected
                del self.pending_cuts[stream]
                return
            pending[1] -= 1
            if pending[1] > 0:
                return
            del self.pending_cuts[stream]
            fault: Fault = pending[0]
            operation = self.operations.pop(stream, "?")
            self.dead.add(stream)
        self.proxy._note_injected(operation, fault.kind)
        self.proxy._record(operation, 0)
        if fault.kind == "drop":
            self._close_both()
            return
        self._to_client(_h2_frame(_RST_STREAM, 0, stream, _INTERNAL_ERROR.to_bytes(4, "big")))
        self._to_upstream(_h2_frame(_RST_STREAM, 0, stream, _CANCEL.to_bytes(4, "big")))

    @staticmethod
    def _give_back(send: Callable[[bytes], None], payload: bytes) -> None:
        """Return the connection-level flow-control credit of a dropped DATA frame to its sender."""
        if payload:
            send(_h2_frame(_WINDOW_UPDATE, 0, 0, len(payload).to_bytes(4, "big")))


_FAULT_ERRORS = {
    "throttle": (400, "ProvisionedThroughputExceededException", "Rate exceeded for shard (injected)"),
    "limit": (400, "LimitExceededException", "Rate exceeded (injected)"),
    "expired": (400, "ExpiredIteratorException", "Iterator expired (injected)"),
    "internal": (500, "InternalFailure", "Internal service error (injected)"),
    "in_use": (400, "ResourceInUseException", "Another subscription to the shard is active (injected)"),
    "denied": (400, "AccessDeniedException", "The caller may not perform this action (injected)"),
}
_CUTS = ("cut", "drop")


@dataclass(frozen=True)
class Fault:
    """An injected failure: an AWS error answered by the proxy itself, or a response broken off.

    ``cut``: the request reaches the emulator and the response breaks off in the middle; over HTTP/1.1 the
    connection is dropped inside the body, over HTTP/2 the stream is reset after ``after_frames`` DATA frames
    (the other streams of the connection go on). ``drop``: the same, except that over HTTP/2 the whole
    connection is closed, ending every stream on it.
    """

    kind: str
    after_frames: int = 2

    def body(self) -> bytes:
        _, code, message = _FAULT_ERRORS[self.kind]
        return json.dumps({"__type": code, "message": message}).encode()

    @property
    def status(self) -> int:
        return _FAULT_ERRORS[self.kind][0]

    def response(self) -> bytes:
        status, code, _ = _FAULT_ERRORS[self.kind]
        body = self.body()
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
        self._auto_streams: set[str] = set()
        self._keyless: set[str] = set()  # sequence numbers of records put without a partition key
        self._captured: dict[str, list[Any]] = {}  # decoded request bodies per operation (see capture)
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

    def inject(
        self,
        operation: str,
        kind: str,
        *,
        probability: float = 1.0,
        times: int | None = None,
        after_frames: int = 2,
    ) -> None:
        """Fail requests of ``operation`` (``"GetRecords"``, ``"SubscribeToShard"``, ...) with ``kind``
        (see :class:`Fault`), over HTTP/1.1 and HTTP/2 alike.

        Each request fails with ``probability``; at most ``times`` requests fail (unlimited when
        ``None``). Rules add up: each request tries an operation's rules in the order they were
        given, and the first that fires wins. ``after_frames`` is where an HTTP/2 ``cut`` or
        ``drop`` happens: after that many DATA frames of the response (for SubscribeToShard the
        first is the initial response, each later one usually an event).
        """
        if kind not in _FAULT_ERRORS and kind not in _CUTS:
            raise ValueError(f"unknown fault {kind!r}; use one of {sorted([*_FAULT_ERRORS, *_CUTS])}")
        with self._lock:
            rule = _FaultRule(Fault(kind, after_frames), probability, times)
            self._faults.setdefault(operation, []).append(rule)

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def injected(self) -> dict[str, int]:
        """Faults injected so far, per ``"<operation>:<kind>"``. An HTTP/2 cut counts when it happens, so a
        cut planned on a response that ended first is not counted."""
        with self._lock:
            return dict(self._injected)

    def distribute_automatically(self, stream: str, enabled: bool = True) -> None:
        """Act, for ``stream``, as Kinesis does for a stream whose ``RecordDistributionStrategy`` is ``AUTO`` (see the
        module's notes), or stop doing so (``enabled=False``: what ``UpdateStreamRecordDistributionStrategy`` back to
        ``USER_PARTITION_KEY`` does)."""
        with self._lock:
            if enabled:
                self._auto_streams.add(stream)
            else:
                self._auto_streams.discard(stream)

    def capture(self, operation: str) -> list[Any]:
        """The list that every later ``operation`` request's body, decoded, is appended to (HTTP/1.1 only)."""
        with self._lock:
            return self._captured.setdefault(operation, [])

    def keyless_records(self) -> int:
        """Records put without a partition key through the proxy so far."""
        with self._lock:
            return len(self._keyless)

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
        """The fault for this request, if a rule fires (the caller reports it with :meth:`_note_injected`)."""
        with self._lock:
            for rule in self._faults.get(operation, []):
                if rule.remaining == 0 or self._random.random() >= rule.probability:
                    continue
                if rule.remaining is not None:
                    rule.remaining -= 1
                return rule.fault
            return None

    def _auto_rewrite(
        self, operation: str, headers: dict[str, str], body: bytes
    ) -> tuple[bytes, Callable[[int, bytes], bytes]] | None:
        """For a request the AUTO service treats differently: its new body and how to rewrite the answer."""
        with self._lock:
            captured = self._captured.get(operation)
        captured_codec = _Codec.of(headers.get("content-type", ""))
        if captured is not None and captured_codec is not None and "content-encoding" not in headers:
            decoded = captured_codec.loads(_dechunk(body, headers))
            with self._lock:
                captured.append(decoded)
        if operation not in ("DescribeStreamSummary", "PutRecord", "PutRecords", "GetRecords"):
            return None
        with self._lock:
            if not self._auto_streams:
                return None
        codec = _Codec.of(headers.get("content-type", ""))
        if codec is None or "content-encoding" in headers:
            return None
        raw = _dechunk(body, headers)
        if operation == "GetRecords":  # the request names no stream: strip what was put keyless through here
            return raw, lambda status, answer: self._strip_keys(codec, status, answer)
        request = codec.loads(raw)
        stream = str(request.get("StreamName") or str(request.get("StreamARN", "")).rsplit("/", 1)[-1])
        with self._lock:
            if stream not in self._auto_streams:
                return None
        if operation == "DescribeStreamSummary":
            return raw, lambda status, answer: _report_auto(codec, status, answer)
        entries = request["Records"] if operation == "PutRecords" else [request]
        keyless = []
        for index, entry in enumerate(entries):
            with self._lock:
                entry["ExplicitHashKey"] = str(self._random.getrandbits(128))
            if entry.get("PartitionKey") is None:  # left out (an empty key goes on: Kinesis refuses it)
                entry["PartitionKey"] = f"invented-by-proxy-{index}"
                keyless.append(index)
        return codec.dumps(request), lambda status, answer: self._note_keyless(
            codec, operation, keyless, status, answer
        )

    def _note_keyless(self, codec: _Codec, operation: str, keyless: list[int], status: int, answer: bytes) -> bytes:
        if status != 200 or not keyless:
            return answer
        response = codec.loads(answer)
        results = response["Records"] if operation == "PutRecords" else [response]
        with self._lock:
            for index in keyless:
                sequence = results[index].get("SequenceNumber")
                if sequence:
                    self._keyless.add(str(sequence))
        return answer

    def _strip_keys(self, codec: _Codec, status: int, answer: bytes) -> bytes:
        with self._lock:
            keyless = set(self._keyless)
        if status != 200 or not keyless:
            return answer
        response = codec.loads(answer)
        for record in response.get("Records", []):
            if str(record.get("SequenceNumber")) in keyless:
                record.pop("PartitionKey", None)
        return codec.dumps(response)

    def _note_injected(self, operation: str, kind: str) -> None:
        with self._lock:
            self._injected[f"{operation}:{kind}"] += 1

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


class _Codec:
    """The two encodings of the Kinesis protocol: JSON (boto3, the KPL) and CBOR (the AWS Java SDK's default)."""

    def __init__(self, cbor_encoded: bool) -> None:
        self.cbor = cbor_encoded

    @staticmethod
    def of(content_type: str) -> _Codec | None:
        if "cbor" in content_type:
            return _Codec(True)
        if "json" in content_type:
            return _Codec(False)
        return None

    def loads(self, data: bytes) -> Any:
        from harness import cbor

        return cbor.loads(data) if self.cbor else json.loads(data or b"{}")

    def dumps(self, value: Any) -> bytes:
        from harness import cbor

        return cbor.dumps(value) if self.cbor else json.dumps(value).encode()


def _report_auto(codec: _Codec, status: int, answer: bytes) -> bytes:
    """A DescribeStreamSummary answer as the service gives it for a stream with service-managed distribution."""
    if status != 200:
        return answer
    response = codec.loads(answer)
    response["StreamDescriptionSummary"]["RecordDistributionStrategy"] = "AUTO"
    return codec.dumps(response)
