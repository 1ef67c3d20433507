"""A 1 GB backlog read with 1 GB of executor memory: peak heap, and that it completes without running out.

ministack holds ``--gigabytes`` of 1,000 B records in a 4-shard stream (1,000 B so that a GetRecords of 10,000
records stays at Kinesis' 10 MB per call: ministack does not enforce that cap, and bigger records would give
responses real Kinesis never sends). A Spark query in local mode (local[2], so the executors live in the driver
JVM) with ``spark.driver.memory=1g`` reads the stream from TRIM_HORIZON with default options into a noop sink.
The driver's heap is sampled every 200 ms over py4j: used heap (garbage included) and the old generation after
its last collection (the data that survived). With --results, the row goes to the benchmark command's table.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from harness import emulators  # noqa: E402
from harness.kinesis import create_stream, put_plain  # noqa: E402
from heap import HeapSampler, heap_session  # noqa: E402
from results import add_row  # noqa: E402
from sessions import kinesis_stream  # noqa: E402

MB = 1024 * 1024


def load(kinesis: Any, stream: str, records: int, size: int) -> None:
    payload = "x" * (size - 9)
    chunk = 5_000
    with ThreadPoolExecutor(4) as pool:
        futures = [
            pool.submit(
                put_plain,
                kinesis,
                stream,
                [(f"key-{i}", f"{i:08d}-{payload}") for i in range(start, min(start + chunk, records))],
            )
            for start in range(0, records, chunk)
        ]
        for future in futures:
            future.result()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gigabytes", type=float, default=1.0)
    parser.add_argument("--record-size", type=int, default=1000)
    parser.add_argument("--memory", default="1g", help="spark.driver.memory (the executors' heap in local mode)")
    parser.add_argument("--results", help="JSON-lines file to append the table rows to (see results.py)")
    args, _ = parser.parse_known_args()
    os.environ.update(
        AWS_ACCESS_KEY_ID=emulators.ACCESS_KEY, AWS_SECRET_ACCESS_KEY=emulators.SECRET_KEY, AWS_REGION="us-east-1"
    )

    records = int(args.gigabytes * 1e9 / args.record_size)
    with emulators.running("ministack") as emulator:
        kinesis = emulators.kinesis_client(emulator.endpoint)
        stream = create_stream(kinesis, f"bench-backlog-{time.time_ns()}", 4)
        started = time.monotonic()
        load(kinesis, stream, records, args.record_size)
        loaded = time.monotonic() - started
        print(f"loaded {records} records of {args.record_size} B in {loaded:.0f} s", file=sys.stderr)

        spark = heap_session(args.memory)
        jvm = spark.sparkContext._jvm
        max_heap = jvm.java.lang.Runtime.getRuntime().maxMemory()
        sampler = HeapSampler(jvm)
        sampler.start()
        query = (
            kinesis_stream(spark, emulator.endpoint, stream)
            .load()
            .writeStream.format("noop")
            .option("checkpointLocation", f"/tmp/bench-backlog-chk-{time.time_ns()}")
            .start()
        )
        started = time.monotonic()
        seen, failure = 0, ""
        counted: set[int] = set()
        while seen < records:
            if query.exception() is not None:
                failure = str(query.exception()).splitlines()[0]
                break
            if time.monotonic() - started > 1800:
                failure = f"only {seen} of {records} records after 30 minutes"
                break
            for progress in query.recentProgress:
                if progress["batchId"] not in counted:
                    counted.add(progress["batchId"])
                    seen += progress["numInputRows"]
            time.sleep(0.2)
        seconds = time.monotonic() - started
        sampler.halt.set()
        sampler.join()
        query.stop()
        spark.stop()

    outcome = "completed" if not failure else f"FAILED: {failure}"
    summary = (
        f"{outcome}: {seen} of {records} records ({seen * args.record_size / 1e9:.2f} GB) in {seconds:.0f} s, "
        f"{len(counted)} batches; heap max {max_heap / MB:.0f} MiB, peak used {sampler.peak_used / MB:.0f} MiB, "
        f"peak surviving a collection {sampler.peak_after_gc / MB:.0f} MiB"
    )
    print(summary)
    add_row(
        args.results,
        f"backlog of {args.gigabytes:g} GB ({args.record_size} B records), {args.memory} executor memory",
        "peak heap used (after GC) MiB",
        f"{sampler.peak_used / MB:.0f} ({sampler.peak_after_gc / MB:.0f})",
        baseline=f"heap max {max_heap / MB:.0f} MiB",
        notes=f"{outcome} in {seconds:.0f} s, "
        f"{len(counted)} batches, {seen * args.record_size / 1e6 / seconds:.1f} MB/s",
    )
    if failure:
        sys.exit(1)


if __name__ == "__main__":
    main()
