"""Small boto3 helpers for tests: streams, plain and KPL-aggregated puts, resharding.

Every helper takes a boto3 Kinesis client (see :func:`harness.emulators.kinesis_client`), so the
same code works against kinesis-local, ministack, or a counting proxy in front of either.
"""

from __future__ import annotations

import base64
import re
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

MAX_HASH_KEY = 2**128 - 1
_PUT_RECORDS_MAX = 500


def unique_stream_name(hint: str = "test") -> str:
    """A stream name that no other test uses: ``<hint>-<random>``, valid for Kinesis (<= 128)."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", hint).strip("-.") or "test"
    return f"{cleaned[:100]}-{uuid.uuid4().hex[:12]}"


def wait_for_status(client: Any, stream: str, wanted: str = "ACTIVE", *, timeout: float = 30.0) -> dict[str, Any]:
    """Poll DescribeStreamSummary until the stream has status ``wanted``; return the summary."""
    deadline = time.monotonic() + timeout
    status = None
    while True:
        summary = client.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]
        status = summary["StreamStatus"]
        if status == wanted:
            return dict(summary)
        if time.monotonic() > deadline:
            raise TimeoutError(f"stream {stream} is {status}, not {wanted}, after {timeout}s")
        time.sleep(0.05)


def create_stream(client: Any, name: str, shards: int = 1, *, timeout: float = 30.0) -> str:
    """Create a provisioned stream with ``shards`` shards and wait until it is ACTIVE."""
    client.create_stream(StreamName=name, ShardCount=shards)
    wait_for_status(client, name, "ACTIVE", timeout=timeout)
    return name


def delete_stream(client: Any, name: str, *, timeout: float = 30.0) -> None:
    """Delete a stream (and its consumers) and wait until it is gone. Missing streams are fine."""
    try:
        client.delete_stream(StreamName=name, EnforceConsumerDeletion=True)
    except client.exceptions.ResourceNotFoundException:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            client.describe_stream_summary(StreamName=name)
        except client.exceptions.ResourceNotFoundException:
            return
        time.sleep(0.05)
    raise TimeoutError(f"stream {name} still exists {timeout}s after DeleteStream")


def list_shards(client: Any, stream: str) -> list[dict[str, Any]]:
    """All shards of the stream (open and closed, as the emulator reports them), in order."""
    shards: list[dict[str, Any]] = []
    response = client.list_shards(StreamName=stream)
    shards.extend(response["Shards"])
    while response.get("NextToken"):
        response = client.list_shards(NextToken=response["NextToken"])
        shards.extend(response["Shards"])
    return shards


def open_shards(client: Any, stream: str) -> list[dict[str, Any]]:
    return [s for s in list_shards(client, stream) if "EndingSequenceNumber" not in s["SequenceNumberRange"]]


@dataclass(frozen=True)
class Put:
    """Where one put landed."""

    shard_id: str
    sequence_number: str
    user_records: int = 1  # > 1 for a KPL aggregated record


Record = bytes | str | tuple[str, bytes | str]


def _normalise(records: Iterable[Record]) -> list[tuple[str, bytes]]:
    result = []
    for index, record in enumerate(records):
        if isinstance(record, tuple):
            key, data = record
        else:
            key, data = f"pk-{index}", record
        result.append((key, data.encode("utf-8") if isinstance(data, str) else data))
    return result


def put_plain(client: Any, stream: str, records: Iterable[Record], *, attempts: int = 10) -> list[Put]:
    """Write records with PutRecords (500 per call), retrying the ones that fail.

    ``records`` items are data (``bytes`` or ``str``; the partition key is then ``pk-<index>``) or
    ``(partition_key, data)`` pairs. Returns one :class:`Put` per record, in input order.
    """
    items = _normalise(records)
    results: list[Put | None] = [None] * len(items)
    for start in range(0, len(items), _PUT_RECORDS_MAX):
        pending = list(range(start, min(start + _PUT_RECORDS_MAX, len(items))))
        for attempt in range(attempts):
            response = client.put_records(
                StreamName=stream,
                Records=[{"Data": items[i][1], "PartitionKey": items[i][0]} for i in pending],
            )
            failed = []
            for index, entry in zip(pending, response["Records"], strict=True):
                if entry.get("ErrorCode"):
                    failed.append(index)
                else:
                    results[index] = Put(entry["ShardId"], entry["SequenceNumber"])
            if not failed:
                break
            pending = failed
            time.sleep(min(0.05 * 2**attempt, 1.0))
        else:
            raise RuntimeError(f"{len(pending)} records still failing after {attempts} attempts")
    return [r for r in results if r is not None]


def put_aggregated(
    client: Any,
    stream: str,
    records: Iterable[Record],
    *,
    records_per_aggregate: int | None = None,
    explicit_hash_key: str | None = None,
) -> list[Put]:
    """Write records in the KPL aggregated format (aws-kinesis-agg), one PutRecord per aggregate.

    User records are packed in input order; a new aggregate starts when the current one is full
    (1 MB) or holds ``records_per_aggregate`` records. The aggregate's partition key is the one of
    its first user record (as the KPL does), so all its user records land on one shard;
    ``explicit_hash_key`` sends every aggregate to the shard owning that hash key.
    Returns one :class:`Put` per aggregated Kinesis record.
    """
    from aws_kinesis_agg.aggregator import RecordAggregator

    aggregator = RecordAggregator()
    puts: list[Put] = []

    def send(aggregate: Any) -> None:
        key, ehk, data = aggregate.get_contents()
        request: dict[str, Any] = {"StreamName": stream, "PartitionKey": key, "Data": data}
        if explicit_hash_key is not None:
            request["ExplicitHashKey"] = explicit_hash_key
        elif ehk:
            request["ExplicitHashKey"] = ehk
        response = client.put_record(**request)
        puts.append(Put(response["ShardId"], response["SequenceNumber"], aggregate.get_num_user_records()))

    for key, data in _normalise(records):
        full = aggregator.add_user_record(key, data)
        if full is not None:
            send(full)
        if records_per_aggregate and aggregator.get_num_user_records() >= records_per_aggregate:
            send(aggregator.clear_and_get())
    rest = aggregator.clear_and_get()
    if rest is not None:
        send(rest)
    return puts


KPL_MAGIC = b"\xf3\x89\x9a\xc2"


def deaggregate(records: Sequence[dict[str, Any]]) -> list[bytes]:
    """User-record payloads of boto3 GetRecords records, aggregated or not (to check test data)."""
    from aws_kinesis_agg.deaggregator import iter_deaggregate_records

    payloads: list[bytes] = []
    for record in records:
        if not bytes(record["Data"]).startswith(KPL_MAGIC):
            payloads.append(bytes(record["Data"]))
            continue
        # The library hands back user records of an aggregate base64-encoded.
        for user_record in iter_deaggregate_records([record], data_format="Boto3"):
            payloads.append(base64.b64decode(user_record["kinesis"]["data"]))
    return payloads


def split_shard(
    client: Any,
    stream: str,
    shard_id: str,
    new_starting_hash_key: int | None = None,
    *,
    timeout: float = 30.0,
) -> list[str]:
    """Split ``shard_id`` (in the middle of its range by default); wait until the stream is ACTIVE.

    Returns the ids of the two child shards.
    """
    shard = next((s for s in list_shards(client, stream) if s["ShardId"] == shard_id), None)
    if shard is None:
        raise ValueError(f"stream {stream} has no shard {shard_id}")
    if new_starting_hash_key is None:
        low = int(shard["HashKeyRange"]["StartingHashKey"])
        high = int(shard["HashKeyRange"]["EndingHashKey"])
        new_starting_hash_key = (low + high) // 2 + 1
    client.split_shard(StreamName=stream, ShardToSplit=shard_id, NewStartingHashKey=str(new_starting_hash_key))
    return _wait_after_reshard(
        client,
        stream,
        timeout,
        lambda shards: [s["ShardId"] for s in shards if s.get("ParentShardId") == shard_id],
        2,
        f"split of {shard_id}",
    )


def merge_shards(client: Any, stream: str, shard_id: str, adjacent_shard_id: str, *, timeout: float = 30.0) -> str:
    """Merge two adjacent shards; wait until the stream is ACTIVE; return the child shard id."""
    client.merge_shards(StreamName=stream, ShardToMerge=shard_id, AdjacentShardToMerge=adjacent_shard_id)
    parents = {shard_id, adjacent_shard_id}
    children = _wait_after_reshard(
        client,
        stream,
        timeout,
        lambda shards: [
            s["ShardId"] for s in shards if {s.get("ParentShardId"), s.get("AdjacentParentShardId")} == parents
        ],
        1,
        f"merge of {shard_id} and {adjacent_shard_id}",
    )
    return children[0]


def _wait_after_reshard(client: Any, stream: str, timeout: float, children_of: Any, count: int, what: str) -> list[str]:
    """Wait until the stream lists the reshard's ``count`` children and is ACTIVE again; return the children.

    Some emulators flip to UPDATING a moment after the call returns, so an ACTIVE status alone could be the old
    state: the children listed are what shows the reshard happened.
    """
    deadline = time.monotonic() + timeout
    while True:
        children = children_of(list_shards(client, stream))
        if len(children) == count:
            status = client.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]["StreamStatus"]
            if status == "ACTIVE":
                return children
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} produced children {children} within {timeout}s")
        time.sleep(0.05)


def read_shard(
    client: Any,
    stream: str,
    shard_id: str,
    *,
    iterator_type: str = "TRIM_HORIZON",
    max_calls: int = 50,
    **iterator_args: Any,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Read a shard with GetRecords until the tip (no records and MillisBehindLatest 0) or its end.

    Returns the records and the last GetRecords response (which holds ``ChildShards`` at the end of
    a closed shard).
    """
    iterator = client.get_shard_iterator(
        StreamName=stream, ShardId=shard_id, ShardIteratorType=iterator_type, **iterator_args
    )["ShardIterator"]
    records: list[dict[str, Any]] = []
    response: dict[str, Any] = {}
    for _ in range(max_calls):
        response = client.get_records(ShardIterator=iterator, Limit=10000)
        records.extend(response["Records"])
        iterator = response.get("NextShardIterator")
        if not iterator:
            break
        if not response["Records"] and response.get("MillisBehindLatest", 0) == 0:
            break
    return records, response
