"""An independent decoder of the KPL aggregation format, written from its specification.

Layout of an aggregated Kinesis record: magic ``F3 89 9A C2``, a protobuf ``AggregatedRecord``, then
the MD5 of the protobuf bytes. ``AggregatedRecord { repeated string partition_key_table = 1;
repeated string explicit_hash_key_table = 2; repeated Record records = 3; }`` and ``Record {
required uint64 partition_key_index = 1; optional uint64 explicit_hash_key_index = 2; required
bytes data = 3; repeated Tag tags = 4; }``. The protobuf is decoded by hand here, so that the sink's
output is checked by code that shares nothing with the connector or with the KPL.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

MAGIC = b"\xf3\x89\x9a\xc2"


@dataclass(frozen=True)
class UserRecord:
    partition_key: str
    explicit_hash_key: str | None
    data: bytes

    def hash_key(self) -> int:
        """Where Kinesis places the record: the explicit hash key, else MD5(partition key) as a 128-bit integer."""
        if self.explicit_hash_key is not None:
            return int(self.explicit_hash_key)
        return int.from_bytes(hashlib.md5(self.partition_key.encode("utf-8")).digest(), "big")


class FormatError(ValueError):
    """The bytes carry the magic but are not a valid aggregate."""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise FormatError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(buf: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) pairs of one protobuf message: ints for varints, bytes for length-delimited."""
    fields: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(buf):
        tag, pos = _varint(buf, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            fields.append((number, value))
        elif wire == 2:
            length, pos = _varint(buf, pos)
            if pos + length > len(buf):
                raise FormatError("truncated field")
            fields.append((number, buf[pos : pos + length]))
            pos += length
        else:
            raise FormatError(f"unexpected wire type {wire}")
    return fields


def is_aggregated(data: bytes) -> bool:
    return data.startswith(MAGIC) and len(data) >= len(MAGIC) + 16


def decode(data: bytes) -> list[UserRecord]:
    """The user records of one aggregated Kinesis record; raises FormatError if it is not a valid aggregate."""
    if not is_aggregated(data):
        raise FormatError("no KPL magic")
    body, digest = data[len(MAGIC) : -16], data[-16:]
    if hashlib.md5(body).digest() != digest:
        raise FormatError("MD5 does not match")
    keys: list[str] = []
    hash_keys: list[str] = []
    raw_records: list[bytes] = []
    for number, value in _fields(body):
        assert isinstance(value, bytes), f"field {number} must be length-delimited"
        if number == 1:
            keys.append(value.decode("utf-8"))
        elif number == 2:
            hash_keys.append(value.decode("utf-8"))
        elif number == 3:
            raw_records.append(value)
    records = []
    for raw in raw_records:
        key_index: int | None = None
        hash_index: int | None = None
        payload: bytes | None = None
        for number, value in _fields(raw):
            if number == 1 and isinstance(value, int):
                key_index = value
            elif number == 2 and isinstance(value, int):
                hash_index = value
            elif number == 3 and isinstance(value, bytes):
                payload = value
        if key_index is None or payload is None:
            raise FormatError("a record lacks its partition key index or its data")
        records.append(UserRecord(keys[key_index], None if hash_index is None else hash_keys[hash_index], payload))
    return records


def user_records(client: Any, stream: str) -> list[bytes]:
    """Every user record in the stream, read with GetRecords from each shard's start, KPL aggregates decoded."""
    from harness.kinesis import list_shards, read_shard

    found: list[bytes] = []
    for shard in list_shards(client, stream):
        for record in read_shard(client, stream, shard["ShardId"], max_calls=200)[0]:
            data = bytes(record["Data"])
            if is_aggregated(data):
                found.extend(user.data for user in decode(data))
            else:
                found.append(data)
    return found
