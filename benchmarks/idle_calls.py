"""Kinesis API calls of a query on an idle stream, per minute and type, against Kinesis' limits.

A 4-shard stream on ministack (or --emulator kinesis-local) gets no records; a query with default
options (a 1 s trigger, a noop sink) reads it through the counting proxy for --minutes. Prints one
JSON line with the calls per minute by operation and, for GetRecords, the busiest shard's calls per second next to the
5 calls/s per shard that every polling consumer of the shard shares (Kinesis' quotas: docs/kinesis-limits.md).
--fan-out reads with enhanced fan-out instead; --connector-jars measures another build (e.g. one before a change).
ministack ignores ListShards' ShardFilter and kinesis-local honours it, so the two differ in what a listing returns.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from harness import emulators  # noqa: E402
from harness.kinesis import create_stream  # noqa: E402
from harness.proxy import CountingProxy  # noqa: E402
from results import add_row  # noqa: E402
from sessions import CBOR_OFF, add_connector_jars, kinesis_stream, local_session  # noqa: E402

# Kinesis' per-shard or per-stream quotas (docs/kinesis-limits.md), as calls per minute.
LIMITS_PER_MINUTE = {
    "GetRecords": 5 * 60,  # per shard, shared by all polling consumers
    "GetShardIterator": 5 * 60,  # per shard
    "ListShards": 1000 * 60,  # per stream
    "DescribeStreamSummary": 20 * 60,  # per account
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--trigger", default="1 second")
    parser.add_argument("--results", help="JSON-lines file to append the table rows to (see results.py)")
    parser.add_argument("--fan-out", action="store_true", help="read with enhanced fan-out (SubscribeToShard)")
    parser.add_argument("--emulator", choices=emulators.KINDS, default="ministack", help="the Kinesis emulator")
    add_connector_jars(parser)
    args = parser.parse_args()
    os.environ.update(
        AWS_ACCESS_KEY_ID=emulators.ACCESS_KEY, AWS_SECRET_ACCESS_KEY=emulators.SECRET_KEY, AWS_REGION="us-east-1"
    )
    with emulators.running(args.emulator) as emulator, CountingProxy(emulator.endpoint) as proxy:
        kinesis = emulators.kinesis_client(emulator.endpoint)
        stream = f"bench-idle-{time.time_ns()}"
        create_stream(kinesis, stream, args.shards)
        spark = local_session(args.connector_jars, conf=CBOR_OFF)
        fan_out = {"kinesis.consumerType": "SubscribeToShard", "kinesis.consumerName": "idle"}
        df = kinesis_stream(spark, proxy.url, stream, fan_out if args.fan_out else {}, starting=None).load()
        query = (
            df.writeStream.format("noop")
            .option("checkpointLocation", f"/tmp/bench-idle-chk-{time.time_ns()}")
            .trigger(processingTime=args.trigger)
            .start()
        )
        time.sleep(10)  # start-up calls (DescribeStreamSummary, first ListShards) are not the steady state
        proxy.reset()
        started = time.monotonic()
        time.sleep(args.minutes * 60)
        counts = proxy.counts()
        elapsed_min = (time.monotonic() - started) / 60
        batches = len(query.recentProgress)
        query.stop()
        spark.stop()

    per_minute = {op: round(n / elapsed_min, 1) for op, n in sorted(counts.items())}
    get_records_per_shard_s = counts.get("GetRecords", 0) / args.shards / (elapsed_min * 60)
    for op, rate in per_minute.items():
        limit = LIMITS_PER_MINUTE.get(op)
        per_shard = op in ("GetRecords", "GetShardIterator")
        shown = rate / args.shards if per_shard else rate
        add_row(
            args.results,
            f"idle stream, {args.shards} shards, {elapsed_min:.1f} min, defaults"
            + (", fan-out" if args.fan_out else "")
            + (f", {args.emulator}" if args.emulator != "ministack" else ""),
            f"{op} calls per minute" + (" per shard" if per_shard else ""),
            f"{shown:.1f}",
            baseline="Kinesis quota" if limit else "",
            baseline_value=f"{limit}" if limit else "",
            ratio=shown / limit if limit else None,
            notes="per shard: every polling consumer of a shard shares its limit" if per_shard else "",
        )
    print(
        json.dumps(
            {
                "scenario": "idle, fan-out" if args.fan_out else "idle",
                "emulator": args.emulator,
                "shards": args.shards,
                "minutes": round(elapsed_min, 2),
                "callsPerMinute": per_minute,
                "getRecordsPerShardPerSecond": round(get_records_per_shard_s, 3),
                "getRecordsShardLimitPerSecond": 5,
                "limitsPerMinute": LIMITS_PER_MINUTE,
                "recentBatches": batches,
            }
        )
    )


if __name__ == "__main__":
    main()
