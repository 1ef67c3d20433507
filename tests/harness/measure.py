"""Check and measure what an emulator does: resharding, MillisBehindLatest, AT_TIMESTAMP, CBOR,
and a small put/read throughput figure. Results are printed (and summarised in docs/emulators.md).

    scripts/emulator.sh measure kinesis-local
    scripts/emulator.sh measure ministack --records 2000 --size 100 --shards 4
    scripts/emulator.sh measure kinesis-local --endpoint http://127.0.0.1:4568   # already running

Each run takes well under a minute. Numbers depend on the machine (2 cores here) and on the
client (boto3, one thread): they compare emulators, they say nothing about AWS.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from typing import Any

from harness import cbor, emulators
from harness.kinesis import (
    create_stream,
    delete_stream,
    list_shards,
    merge_shards,
    put_plain,
    read_shard,
    split_shard,
    unique_stream_name,
)


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def check_lag_and_timestamp(client: Any) -> dict[str, Any]:
    name = create_stream(client, unique_stream_name("measure-lag"), 1)
    try:
        put_plain(client, name, [f"early-{i}".encode() for i in range(20)])
        time.sleep(1.2)  # so the records are measurably behind, and a timestamp separates them
        boundary = dt.datetime.now(dt.UTC)
        time.sleep(0.3)
        put_plain(client, name, [f"late-{i}".encode() for i in range(5)])
        shard = list_shards(client, name)[0]["ShardId"]

        iterator = client.get_shard_iterator(StreamName=name, ShardId=shard, ShardIteratorType="TRIM_HORIZON")[
            "ShardIterator"
        ]
        first = client.get_records(ShardIterator=iterator, Limit=5)
        rest = client.get_records(ShardIterator=first["NextShardIterator"])
        tip = client.get_records(ShardIterator=rest["NextShardIterator"])

        after, _ = read_shard(client, name, shard, iterator_type="AT_TIMESTAMP", Timestamp=boundary)
        latest_iterator = client.get_shard_iterator(StreamName=name, ShardId=shard, ShardIteratorType="LATEST")[
            "ShardIterator"
        ]
        latest = client.get_records(ShardIterator=latest_iterator)
        arrival = first["Records"][0]["ApproximateArrivalTimestamp"]
        return {
            "millis_behind_latest_when_behind": first.get("MillisBehindLatest"),
            "millis_behind_latest_after_last_record": rest.get("MillisBehindLatest"),
            "millis_behind_latest_at_tip": tip.get("MillisBehindLatest"),
            "records_at_tip": len(tip["Records"]),
            "at_timestamp_records": [r["Data"].decode() for r in after],
            "at_timestamp_ok": [r["Data"].decode() for r in after] == [f"late-{i}" for i in range(5)],
            "latest_returns": len(latest["Records"]),
            "first_record_age_s": round((dt.datetime.now(dt.UTC) - arrival).total_seconds(), 1),
        }
    finally:
        delete_stream(client, name)


def check_resharding(client: Any) -> dict[str, Any]:
    name = create_stream(client, unique_stream_name("measure-reshard"), 2)
    result: dict[str, Any] = {}
    try:
        shards = list_shards(client, name)
        parent = shards[0]["ShardId"]
        put_plain(
            client,
            name,
            [(f"pk-{i}", f"before-split-{i}".encode()) for i in range(40)],
        )
        before = {s["ShardId"]: 0 for s in shards}
        for shard in shards:
            records, _ = read_shard(client, name, shard["ShardId"])
            before[shard["ShardId"]] = len(records)

        started = time.monotonic()
        children = split_shard(client, name, parent)
        result["split_seconds"] = round(time.monotonic() - started, 2)
        after_split = list_shards(client, name)
        listed = {s["ShardId"]: s for s in after_split}
        result["split_parent_still_listed"] = parent in listed
        if parent in listed:
            result["split_parent_ending_sequence_number"] = listed[parent]["SequenceNumberRange"].get(
                "EndingSequenceNumber"
            )
            records, last = read_shard(client, name, parent)
            result["split_parent_records_readable"] = f"{len(records)}/{before[parent]}"
            result["split_parent_end_next_iterator"] = last.get("NextShardIterator")
            result["split_parent_end_child_shards"] = sorted(c["ShardId"] for c in last.get("ChildShards") or [])
        else:
            try:
                client.get_shard_iterator(StreamName=name, ShardId=parent, ShardIteratorType="TRIM_HORIZON")
                result["split_parent_iterator"] = "granted although the shard is not listed"
            except client.exceptions.ResourceNotFoundException as error:
                result["split_parent_iterator"] = f"ResourceNotFoundException: {error}"
            result["split_parent_records_readable"] = f"0/{before[parent]}"
        result["split_children"] = {
            c: {
                "ParentShardId": listed[c].get("ParentShardId"),
                "HashKeyRange": listed[c]["HashKeyRange"],
            }
            for c in children
        }

        started = time.monotonic()
        merged = merge_shards(client, name, children[0], children[1])
        result["merge_seconds"] = round(time.monotonic() - started, 2)
        after_merge = {s["ShardId"]: s for s in list_shards(client, name)}
        result["merge_parents_still_listed"] = [c for c in children if c in after_merge]
        result["merge_child"] = {
            "ShardId": merged,
            "ParentShardId": after_merge[merged].get("ParentShardId"),
            "AdjacentParentShardId": after_merge[merged].get("AdjacentParentShardId"),
        }
        if children[0] in after_merge:
            _, last = read_shard(client, name, children[0])
            result["merge_parent_end_child_shards"] = [
                {"ShardId": c["ShardId"], "ParentShards": c["ParentShards"]} for c in last.get("ChildShards") or []
            ]
        try:
            filtered = client.list_shards(StreamName=name, ShardFilter={"Type": "AT_LATEST"})
            result["list_shards_filter_at_latest"] = [s["ShardId"] for s in filtered["Shards"]]
        except Exception as error:
            result["list_shards_filter_at_latest"] = f"{type(error).__name__}: {error}"
        return result
    finally:
        delete_stream(client, name)


def check_cbor(endpoint: str, client: Any) -> dict[str, Any]:
    """Send DescribeStreamSummary as CBOR, as the Java SDK does by default."""
    name = create_stream(client, unique_stream_name("measure-cbor"), 1)
    try:
        status, content_type, body = cbor.call(endpoint, "DescribeStreamSummary", {"StreamName": name})
        result: dict[str, Any] = {"status": status, "content_type": content_type}
        if isinstance(body, dict) and "StreamDescriptionSummary" in body:
            stamp = body["StreamDescriptionSummary"].get("StreamCreationTimestamp")
            tagged = isinstance(stamp, cbor.Tagged)
            value = stamp.value if tagged else stamp
            label = f"tag {stamp.tag}" if tagged else "untagged"
            result["creation_timestamp"] = f"{label} {type(value).__name__} {value}"
            # The Java SDK reads CBOR timestamps as integer epoch milliseconds (it writes them as
            # tag 1 + millis); seconds, or a float, are misread.
            result["java_sdk_reads_it"] = isinstance(value, int) and value > 10**12
        else:
            result["body"] = str(body)[:200]
            result["java_sdk_reads_it"] = False
        return result
    finally:
        delete_stream(client, name)


def measure_throughput(client: Any, records: int, size: int, shards: int) -> dict[str, Any]:
    name = create_stream(client, unique_stream_name("measure-tput"), shards)
    try:
        payload = [(f"pk-{i}", (f"{i:08d}".encode() * (size // 8 + 1))[:size]) for i in range(records)]
        megabytes = records * size / 1e6
        started = time.monotonic()
        put_plain(client, name, payload)
        put_seconds = time.monotonic() - started

        started = time.monotonic()
        calls = 0
        total = 0
        for shard in list_shards(client, name):
            iterator = client.get_shard_iterator(
                StreamName=name, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
            )["ShardIterator"]
            while iterator:
                response = client.get_records(ShardIterator=iterator, Limit=10000)
                calls += 1
                total += len(response["Records"])
                iterator = response.get("NextShardIterator")
                if not response["Records"] and response.get("MillisBehindLatest", 0) == 0:
                    break
        read_seconds = time.monotonic() - started
        return {
            "records": records,
            "record_bytes": size,
            "shards": shards,
            "put_records_calls": (records + 499) // 500,
            "put_seconds": round(put_seconds, 2),
            "put_MBps": round(megabytes / put_seconds, 3),
            "put_records_per_s": round(records / put_seconds),
            "read_back": total,
            "get_records_calls": calls,
            "read_seconds": round(read_seconds, 2),
            "read_MBps": round(megabytes / read_seconds, 3),
            "read_records_per_s": round(total / read_seconds),
        }
    finally:
        delete_stream(client, name)


def measure(endpoint: str, kind: str, records: int, size: int, shards: int) -> dict[str, Any]:
    client = emulators.kinesis_client(endpoint)
    started = time.monotonic()
    name = create_stream(client, unique_stream_name("measure-create"), 1)
    create_seconds = time.monotonic() - started
    delete_stream(client, name)
    return {
        "kind": kind,
        "endpoint": endpoint,
        "create_stream_to_active_ms": _ms(create_seconds),
        "lag_and_timestamp": check_lag_and_timestamp(client),
        "resharding": check_resharding(client),
        "cbor": check_cbor(endpoint, client),
        "throughput": measure_throughput(client, records, size, shards),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/emulator.sh measure", description=__doc__)
    parser.add_argument("kind", choices=emulators.KINDS)
    parser.add_argument("--endpoint", help="use a running emulator instead of starting one")
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--size", type=int, default=100, help="bytes per record")
    parser.add_argument("--shards", type=int, default=4)
    args = parser.parse_args(argv)
    if args.endpoint:
        report = measure(args.endpoint, args.kind, args.records, args.size, args.shards)
    else:
        started = time.monotonic()
        with emulators.running(args.kind) as emulator:
            startup = time.monotonic() - started
            report = measure(emulator.endpoint, args.kind, args.records, args.size, args.shards)
            report["startup_seconds"] = round(startup, 2)
    json.dump(report, sys.stdout, indent=2, default=str)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
