"""Executor heap needed to read 9.5 MiB records: polling, fan-out and batch reads with a small heap.

kinesis-local (the emulator that honours ``MaxRecordSizeInKiB``) holds ``--records`` records of 9.5 MiB in a
stream created with ``MaxRecordSizeInKiB=10240`` and ``--shards`` shards. One Spark process in local mode
(``local[2]``: executors live in the driver JVM) with ``spark.driver.memory=--memory`` reads them all three ways,
one after another: a polling micro-batch query (noop sink), a batch read (``spark.read``, counting rows and summing
their lengths), and an enhanced fan-out query (noop sink) on a second stream that gets the same records one at a time
while it reads. kinesis-local pushes every record it has in one SubscribeToShard event, and the AWS SDK refuses an
event of more than 24 MiB ("Illegal payload size"), so a fan-out read of a backlog of 9.5 MiB records fails there;
the records are therefore put while the fan-out query runs, one per event. The JVM's heap is sampled every 50 ms
over py4j: used heap (garbage included), and the heap pools after their last collection (what survived). A read
that runs out of memory fails the run. Not part of benchmarks/run.sh (putting the records alone takes minutes on
kinesis-local); run it by hand::

    .venv/bin/python benchmarks/large_record_heap.py --records 6 --memory 512m
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from harness import emulators  # noqa: E402
from harness.kinesis import wait_for_status  # noqa: E402
from heap import HeapSampler, heap_session  # noqa: E402
from sessions import kinesis_stream  # noqa: E402

MB = 1024 * 1024
RECORD_BYTES = 9 * MB + 512 * 1024


def stream_reader(spark: Any, endpoint: str, stream: str, **options: str) -> Any:
    prefixed = {f"kinesis.{key}": value for key, value in options.items()}
    return kinesis_stream(spark, endpoint, stream, {"kinesis.clientSocketTimeoutMs": "120000", **prefixed}).load()


def read_all(query: Any, records: int) -> tuple[int, str]:
    seen, failure, counted = 0, "", set()
    started = time.monotonic()
    while seen < records:
        if query.exception() is not None:
            failure = str(query.exception()).splitlines()[0]
            break
        if time.monotonic() - started > 900:
            failure = f"only {seen} of {records} records after 15 minutes"
            break
        for progress in query.recentProgress:
            if progress["batchId"] not in counted:
                counted.add(progress["batchId"])
                seen += progress["numInputRows"]
        time.sleep(0.2)
    query.stop()
    return seen, failure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=6)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--memory", default="512m", help="spark.driver.memory (the executors' heap in local mode)")
    args = parser.parse_args()
    os.environ.update(
        AWS_ACCESS_KEY_ID=emulators.ACCESS_KEY, AWS_SECRET_ACCESS_KEY=emulators.SECRET_KEY, AWS_REGION="us-east-1"
    )

    with emulators.running("kinesis-local") as emulator:
        kinesis = emulators.kinesis_client(emulator.endpoint, timeout=300)
        stream = f"bench-large-{time.time_ns()}"
        kinesis.create_stream(StreamName=stream, ShardCount=args.shards, MaxRecordSizeInKiB=10240)
        wait_for_status(kinesis, stream)
        started = time.monotonic()
        for i in range(args.records):
            data = (f"{i:08d}" * (RECORD_BYTES // 8)).encode()
            kinesis.put_record(StreamName=stream, PartitionKey=f"key-{i}", Data=data)
        print(f"put {args.records} records of {RECORD_BYTES} B in {time.monotonic() - started:.0f} s", flush=True)

        spark = heap_session(args.memory)
        jvm = spark.sparkContext._jvm
        max_heap = jvm.java.lang.Runtime.getRuntime().maxMemory()
        sampler = HeapSampler(jvm, interval=0.05)
        sampler.start()
        results = []
        readers: list[tuple[str, dict[str, str]]] = [("polling micro-batch", {})]
        for name, options in readers:
            jvm.System.gc()
            sampler.reset()
            started = time.monotonic()
            query = (
                stream_reader(spark, emulator.endpoint, stream, **options)
                .writeStream.format("noop")
                .option("checkpointLocation", f"/tmp/bench-large-chk-{time.time_ns()}")
                .start()
            )
            seen, failure = read_all(query, args.records)
            results.append((name, seen, failure, time.monotonic() - started, sampler.peak_used, sampler.peak_after_gc))
        jvm.System.gc()
        sampler.reset()
        started = time.monotonic()
        failure = ""
        try:
            row = (
                spark.read.format("aws-kinesis")
                .option("kinesis.endpointUrl", emulator.endpoint)
                .option("kinesis.region", "us-east-1")
                .option("kinesis.streamName", stream)
                .option("kinesis.clientSocketTimeoutMs", "120000")
                .load()
                .selectExpr("count(*) AS n", "sum(length(data)) AS bytes")
                .collect()[0]
            )
            seen = int(row["n"])
            assert row["bytes"] == args.records * RECORD_BYTES, row
        except Exception as error:
            seen, failure = 0, str(error).splitlines()[0]
        results.append(
            ("batch read", seen, failure, time.monotonic() - started, sampler.peak_used, sampler.peak_after_gc)
        )
        live = f"{stream}-live"
        kinesis.create_stream(StreamName=live, ShardCount=args.shards, MaxRecordSizeInKiB=10240)
        wait_for_status(kinesis, live)

        def put_live() -> None:
            time.sleep(15)  # the consumer is registered and subscribed
            for i in range(args.records):
                data = (f"{i:08d}" * (RECORD_BYTES // 8)).encode()
                kinesis.put_record(StreamName=live, PartitionKey=f"key-{i}", Data=data)

        jvm.System.gc()
        sampler.reset()
        started = time.monotonic()
        query = (
            stream_reader(spark, emulator.endpoint, live, consumerType="SubscribeToShard", consumerName="bench-large")
            .writeStream.format("noop")
            .option("checkpointLocation", f"/tmp/bench-large-chk-{time.time_ns()}")
            .start()
        )
        putter = threading.Thread(target=put_live, daemon=True)
        putter.start()
        seen, failure = read_all(query, args.records)
        putter.join()
        results.append(
            (
                "fan-out micro-batch (records put while it reads)",
                seen,
                failure,
                time.monotonic() - started,
                sampler.peak_used,
                sampler.peak_after_gc,
            )
        )
        sampler.halt.set()
        spark.stop()

    print(
        f"\n{args.records} records of {RECORD_BYTES / MB:.1f} MiB, {args.shards} shards, spark.driver.memory="
        f"{args.memory} (heap max {max_heap / MB:.0f} MiB), local[2]"
    )
    print("| reader | records read | seconds | peak heap used MiB | peak after GC MiB | outcome |")
    print("|---|---|---|---|---|---|")
    for name, seen, failure, seconds, used, after in results:
        outcome = "completed" if not failure else f"FAILED: {failure}"
        print(f"| {name} | {seen} of {args.records} | {seconds:.0f} | {used / MB:.0f} | {after / MB:.0f} | {outcome} |")
    if any(failure for _, _, failure, _, _, _ in results):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
