"""The little CBOR (RFC 8949) needed to talk to an emulator the way the AWS Java SDK does.

The Java SDK sends Kinesis requests as CBOR (``application/x-amz-cbor-1.1``) unless the system
property ``aws.cborEnabled=false`` is set. boto3 always uses JSON. This lets tests and
``harness.measure`` send a CBOR request and look at how the answer encodes timestamps: the Java
SDK expects CBOR tag 1 followed by an integer of epoch *milliseconds*.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Tagged:
    tag: int
    value: Any


def _head(major: int, value: int) -> bytes:
    if value < 24:
        return bytes([major << 5 | value])
    for info, fmt in ((24, ">B"), (25, ">H"), (26, ">I"), (27, ">Q")):
        if value < 1 << (8 * struct.calcsize(fmt)):
            return bytes([major << 5 | info]) + struct.pack(fmt, value)
    raise ValueError("integer too large for CBOR")


def dumps(value: Any) -> bytes:
    if isinstance(value, bool):
        return b"\xf5" if value else b"\xf4"
    if value is None:
        return b"\xf6"
    if isinstance(value, int):
        return _head(0, value) if value >= 0 else _head(1, -1 - value)
    if isinstance(value, float):
        return b"\xfb" + struct.pack(">d", value)
    if isinstance(value, bytes):
        return _head(2, len(value)) + value
    if isinstance(value, str):
        data = value.encode("utf-8")
        return _head(3, len(data)) + data
    if isinstance(value, (list, tuple)):
        return _head(4, len(value)) + b"".join(dumps(v) for v in value)
    if isinstance(value, dict):
        return _head(5, len(value)) + b"".join(dumps(k) + dumps(v) for k, v in value.items())
    if isinstance(value, Tagged):
        return _head(6, value.tag) + dumps(value.value)
    raise TypeError(f"cannot encode {type(value).__name__}")


def loads(data: bytes) -> Any:
    value, end = _decode(data, 0)
    if end != len(data):
        raise ValueError(f"{len(data) - end} trailing bytes")
    return value


_BREAK = object()


def _decode(data: bytes, pos: int) -> tuple[Any, int]:
    initial = data[pos]
    pos += 1
    major, info = initial >> 5, initial & 0x1F
    if major == 7:
        if info == 20:
            return False, pos
        if info == 21:
            return True, pos
        if info in (22, 23):
            return None, pos
        if info == 25:
            return _half(data[pos : pos + 2]), pos + 2
        if info == 26:
            return struct.unpack(">f", data[pos : pos + 4])[0], pos + 4
        if info == 27:
            return struct.unpack(">d", data[pos : pos + 8])[0], pos + 8
        if info == 31:
            return _BREAK, pos
        raise ValueError(f"unsupported simple value {info}")
    if info < 24:
        arg: int | None = info
    elif info in (24, 25, 26, 27):
        size = 1 << (info - 24)
        arg = int.from_bytes(data[pos : pos + size], "big")
        pos += size
    elif info == 31:
        arg = None  # indefinite length
    else:
        raise ValueError(f"bad additional info {info}")
    if major == 0:
        return arg, pos
    if major == 1:
        assert arg is not None
        return -1 - arg, pos
    if major in (2, 3):
        if arg is None:
            parts = []
            while True:
                part, pos = _decode(data, pos)
                if part is _BREAK:
                    break
                parts.append(part)
            joined = b"".join(p if isinstance(p, bytes) else p.encode() for p in parts)
            return (joined if major == 2 else joined.decode("utf-8")), pos
        raw = data[pos : pos + arg]
        return (raw if major == 2 else raw.decode("utf-8")), pos + arg
    if major == 4:
        items = []
        while arg is None or len(items) < arg:
            item, pos = _decode(data, pos)
            if item is _BREAK:
                break
            items.append(item)
        return items, pos
    if major == 5:
        result = {}
        while arg is None or len(result) < arg:
            key, pos = _decode(data, pos)
            if key is _BREAK:
                break
            result[key], pos = _decode(data, pos)
        return result, pos
    if major == 6:
        assert arg is not None
        inner, pos = _decode(data, pos)
        return Tagged(arg, inner), pos
    raise AssertionError(major)


def _half(raw: bytes) -> float:
    half = int.from_bytes(raw, "big")
    exp, mant = (half >> 10) & 0x1F, half & 0x3FF
    if exp == 0:
        value = mant * 2.0**-24
    elif exp == 31:
        value = float("inf") if mant == 0 else float("nan")
    else:
        value = (mant + 1024) * 2.0 ** (exp - 25)
    return -value if half & 0x8000 else value


def call(endpoint: str, operation: str, body: dict[str, Any], *, timeout: float = 10.0) -> tuple[int, str, Any]:
    """POST one Kinesis operation as CBOR; return (status, content type, decoded body or text)."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(endpoint)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=timeout)
    try:
        conn.request(
            "POST",
            "/",
            body=dumps(body),
            headers={
                "Content-Type": "application/x-amz-cbor-1.1",
                "X-Amz-Target": f"Kinesis_20131202.{operation}",
                # Emulators do not check signatures, but some look for the header's shape.
                "Authorization": "AWS4-HMAC-SHA256 Credential=test-access-key/20240101/us-east-1/"
                "kinesis/aws4_request, SignedHeaders=host, Signature=0",
                "X-Amz-Date": "20240101T000000Z",
            },
        )
        response = conn.getresponse()
        payload = response.read()
        content_type = response.getheader("Content-Type", "")
    finally:
        conn.close()
    if "cbor" in content_type:
        return response.status, content_type, loads(payload)
    return response.status, content_type, payload.decode("utf-8", errors="replace")
