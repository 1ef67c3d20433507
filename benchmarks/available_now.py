"""A Trigger.AvailableNow run over polling and over enhanced fan-out, on the same data: records, time, calls per shard.

A stream on kinesis-local gets --records records; then one AvailableNow run per reader (GetRecords, then
SubscribeToShard), each on a fresh checkpoint from TRIM_HORIZON, reads it through the counting proxy to its end.
Prints one JSON line per reader: records read, seconds from start() to the run's end, batches, and the Kinesis
calls per shard by operation (all calls, driver and executors, divided by the shard count). kinesis-local pushes a
subscription event about once a second, so a fan-out batch lasts about a second there.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from harness import emulators  # noqa: E402
from harness.kinesis import create_stream, put_plain  # noqa: E402
from harness.proxy import CountingProxy  # noqa: E402
from results import add_row  # noqa: E402
from sessions import add_connector_jars, kinesis_stream, local_session  # noqa: E402

READERS = {
    "GetRecords": {},
    "SubscribeToShard": {"kinesis.consumerType": "SubscribeToShard", "kinesis.consumerName": "available-now"},
}


def run(spark: Any, proxy: CountingProxy, stream: str, options: dict[str, str]) -> dict[str, Any]:
    """One AvailableNow run to its end, through ``proxy`` (reset first)."""
    proxy.reset()
    started = time.monotonic()
    query = (
        kinesis_stream(spark, proxy.url, stream, options)
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", f"/tmp/bench-available-now-{time.time_ns()}")
        .trigger(availableNow=True)
        .start()
    )
    if not query.awaitTermination(600) or query.exception() is not None:
        raise RuntimeError(f"the run did not end cleanly: {query.exception()}")
    seconds = time.monotonic() - started
    progress = query.recentProgress
    return {
        "records": sum(int(p["numInputRows"]) for p in progress),
        "seconds": round(seconds, 1),
        "batches": sum(1 for p in progress if int(p["numInputRows"]) > 0),
        "calls": proxy.counts(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--results", help="JSON-lines file to append the table rows to (see results.py)")
    add_connector_jars(parser)
    args = parser.parse_args()
    os.environ.update(
        AWS_ACCESS_KEY_ID=emulators.ACCESS_KEY, AWS_SECRET_ACCESS_KEY=emulators.SECRET_KEY, AWS_REGION="us-east-1"
    )
    with emulators.running("kinesis-local") as emulator, CountingProxy(emulator.endpoint) as proxy:
        kinesis = emulators.kinesis_client(emulator.endpoint)
        stream = f"bench-available-now-{time.time_ns()}"
        create_stream(kinesis, stream, args.shards)
        put_plain(kinesis, stream, [(f"key-{i % 97}", f"record-{i:08d}-" + "x" * 84) for i in range(args.records)])
        spark = local_session(args.connector_jars)
        for name, options in READERS.items():
            try:
                result = run(spark, proxy, stream, options)
            except Exception as error:  # the build before this one refuses fan-out AvailableNow runs
                print(json.dumps({"reader": name, "error": str(error).splitlines()[0][:300]}))
                continue
            per_shard = {op: round(n / args.shards, 1) for op, n in sorted(result["calls"].items())}
            print(json.dumps({"reader": name, "shards": args.shards, **result, "callsPerShard": per_shard}))
            scenario = f"AvailableNow, {args.records} records, {args.shards} shards, {name}"
            add_row(args.results, scenario, "seconds", f"{result['seconds']}")
            for op, n in per_shard.items():
                add_row(args.results, scenario, f"{op} calls per shard", f"{n}")
        spark.stop()


if __name__ == "__main__":
    main()
