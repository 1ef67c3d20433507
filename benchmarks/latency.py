"""End-to-end latency of the source at a steady input rate: record put -> its row visible in a foreachBatch.

One ministack emulator (it pushes SubscribeToShard events at once), one 4-shard stream per reader, a Spark
query (local[2]) with a short processing-time trigger and a foreachBatch that notes when each row arrives.
After a warm-up, a writer thread puts ``--rate`` records per second for ``--seconds`` seconds (one PutRecords
of rate/10 records every 100 ms), each record's payload holding its put time; the latency of a record is the
time its row reached foreachBatch minus its put time, both on this machine's clock. The floor is the bare SDK
subscribed to the same kind of stream without Spark (BareSubscribeLatency.java). Prints p50, p99 and max per
reader; with --results, appends them to the benchmark command's one table. Run with benchmarks/run.sh.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from harness import emulators  # noqa: E402
from harness.kinesis import create_stream  # noqa: E402
from results import add_row  # noqa: E402


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] if ordered else float("nan")


def put_steadily(kinesis: Any, stream: str, rate: int, seconds: int) -> int:
    """Put ``rate`` records/s for ``seconds`` s, each payload ``t=<put time>``; returns how many were put."""
    per_put = max(1, rate // 10)
    put = 0
    next_put = time.monotonic()
    for tick in range(seconds * 10):
        stamp = f"t={time.time():.6f}"
        entries = [{"PartitionKey": f"k{tick}-{i}", "Data": stamp.encode()} for i in range(per_put)]
        response = kinesis.put_records(StreamName=stream, Records=entries)
        put += per_put - response.get("FailedRecordCount", 0)
        next_put += 0.1
        time.sleep(max(0.0, next_put - time.monotonic()))
    return put


def measure(spark: Any, kinesis: Any, endpoint: str, options: dict[str, str], args: Any) -> tuple[list[float], int]:
    stream = f"bench-latency-{time.time_ns()}"
    create_stream(kinesis, stream, 4)
    latencies: list[float] = []
    lock = threading.Lock()
    batches = [0]

    def sink(df: Any, _batch_id: int) -> None:
        rows = df.selectExpr("CAST(data AS STRING) AS d").collect()
        seen = time.time()
        with lock:
            batches[0] += 1
            for row in rows:
                if row["d"].startswith("t="):
                    latencies.append((seen - float(row["d"][2:])) * 1000.0)

    reader = (
        spark.readStream.format("aws-kinesis")
        .option("kinesis.endpointUrl", endpoint)
        .option("kinesis.region", "us-east-1")
        .option("kinesis.streamName", stream)
        .option("kinesis.startingPosition", "LATEST")
    )
    for key, value in options.items():
        reader = reader.option(key, value)
    query = (
        reader.load()
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", f"/tmp/bench-latency-chk-{time.time_ns()}")
        .trigger(processingTime=f"{args.trigger_ms} milliseconds")
        .start()
    )
    try:
        deadline = time.monotonic() + 120
        # Warm-up: the first batches (and, for EFO, the consumer and first subscriptions).
        kinesis.put_record(StreamName=stream, PartitionKey="warm", Data=b"warm-up")
        while batches[0] < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(2)
        put = put_steadily(kinesis, stream, args.rate, args.seconds)
        deadline = time.monotonic() + 60
        while len(latencies) < put and time.monotonic() < deadline:
            if query.exception() is not None:
                raise RuntimeError(str(query.exception()))
            time.sleep(0.1)
    finally:
        query.stop()
    return latencies, put


def bare_subscribe(endpoint: str, kinesis: Any, jar: str, slf4j: list[str], args: Any) -> dict[str, Any]:
    """The floor: the AWS SDK's SubscribeToShard without Spark (benchmarks/BareSubscribeLatency.java)."""
    stream = f"bench-latency-bare-{time.time_ns()}"
    create_stream(kinesis, stream, 4)
    out = subprocess.run(
        [
            "java",
            "-Daws.cborEnabled=false",
            "-cp",
            os.pathsep.join([jar, *slf4j]),
            str(ROOT / "benchmarks" / "BareSubscribeLatency.java"),
            endpoint,
            stream,
            str(args.seconds),
            str(args.rate),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=1000, help="records put per second")
    parser.add_argument("--seconds", type=int, default=20, help="how long the steady input lasts")
    parser.add_argument("--trigger-ms", type=int, default=100)
    parser.add_argument("--jar", required=True)
    parser.add_argument("--results", help="JSON-lines file to append the table rows to (see results.py)")
    args, _ = parser.parse_known_args()
    os.environ.update(
        AWS_ACCESS_KEY_ID=emulators.ACCESS_KEY, AWS_SECRET_ACCESS_KEY=emulators.SECRET_KEY, AWS_REGION="us-east-1"
    )
    import pyspark
    import spark_kinesis
    from pyspark.sql import SparkSession

    slf4j = [str(p) for p in (Path(pyspark.__file__).parent / "jars").glob("slf4j-api-*.jar")]
    table: list[tuple[str, int, int, float, float, float]] = []
    with emulators.running("ministack") as emulator:
        kinesis = emulators.kinesis_client(emulator.endpoint)
        bare = bare_subscribe(emulator.endpoint, kinesis, args.jar, slf4j, args)
        table.append(
            (
                "bare SDK SubscribeToShard (no Spark)",
                bare["samples"],
                bare["expected"],
                bare["p50"],
                bare["p99"],
                bare["max"],
            )
        )
        spark = spark_kinesis.configure_spark(
            SparkSession.builder.master("local[2]")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.extraJavaOptions", "-Daws.cborEnabled=false")
        ).getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        readers = (
            ("polling (GetRecords), defaults", {}),
            ("polling, idleProbeIntervalMs=0", {"kinesis.idleProbeIntervalMs": "0"}),
            ("EFO (SubscribeToShard)", {"kinesis.consumerType": "SubscribeToShard", "kinesis.consumerName": "lat"}),
            (
                "EFO, idleProbeIntervalMs=0",
                {
                    "kinesis.consumerType": "SubscribeToShard",
                    "kinesis.consumerName": "lat0",
                    "kinesis.idleProbeIntervalMs": "0",
                },
            ),
        )
        for label, options in readers:
            values, put = measure(spark, kinesis, emulator.endpoint, options, args)
            p50, p99 = percentile(values, 0.5), percentile(values, 0.99)
            table.append((label, len(values), put, p50, p99, max(values or [0.0])))
        spark.stop()

    conditions = f"4 shards, {args.rate} records/s for {args.seconds} s, trigger {args.trigger_ms} ms, ministack"
    print(f"\nEnd-to-end latency (put -> row in foreachBatch), {conditions}")
    print(f"{'reader':36s} {'seen':>7s} {'put':>7s} {'p50 ms':>8s} {'p99 ms':>8s} {'max ms':>8s}")
    for label, seen, put, p50, p99, worst in table:
        print(f"{label:36s} {seen:7d} {put:7d} {p50:8.0f} {p99:8.0f} {worst:8.0f}")
        add_row(
            args.results,
            f"end-to-end latency, {label}",
            "p50 / p99 ms",
            f"{p50:.0f} / {p99:.0f}",
            baseline="absolute on this machine",
            notes=f"{seen} of {put} records seen; {conditions}",
        )


if __name__ == "__main__":
    main()
