"""End-to-end latency of the source: a record put -> its row visible in a foreachBatch, polling against EFO.

One ministack emulator (it pushes SubscribeToShard events at once), one 4-shard stream per reader, a Spark
query (local[2]) with a short processing-time trigger and a foreachBatch that notes when each row arrives. After
a warm-up, one record is put every `--interval-ms` (its payload is the put time); the latency of a record is
the time its row reached foreachBatch minus its put time, both on this machine's clock. Prints one table with
median, p90 and max per reader. Run with benchmarks/run.sh.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
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


def measure(spark: Any, kinesis: Any, endpoint: str, options: dict[str, str], args: Any) -> list[float]:
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
        for i in range(args.samples):
            kinesis.put_record(StreamName=stream, PartitionKey=f"k{i}", Data=f"t={time.time():.6f}".encode())
            time.sleep(args.interval_ms / 1000.0)
        while len(latencies) < args.samples and time.monotonic() < deadline:
            if query.exception() is not None:
                raise RuntimeError(str(query.exception()))
            time.sleep(0.1)
    finally:
        query.stop()
    return latencies


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
            str(args.samples),
            str(args.interval_ms),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--interval-ms", type=int, default=200)
    parser.add_argument("--trigger-ms", type=int, default=100)
    parser.add_argument("--jar", required=True)
    args, _ = parser.parse_known_args()
    os.environ.update(
        AWS_ACCESS_KEY_ID=emulators.ACCESS_KEY, AWS_SECRET_ACCESS_KEY=emulators.SECRET_KEY, AWS_REGION="us-east-1"
    )
    import pyspark
    import spark_kinesis
    from pyspark.sql import SparkSession

    slf4j = [str(p) for p in (Path(pyspark.__file__).parent / "jars").glob("slf4j-api-*.jar")]
    table = []
    with emulators.running("ministack") as emulator:
        kinesis = emulators.kinesis_client(emulator.endpoint)
        bare = bare_subscribe(emulator.endpoint, kinesis, args.jar, slf4j, args)
        table.append(
            ("bare SDK SubscribeToShard (no Spark)", bare["samples"], bare["median"], bare["p90"], bare["max"])
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
            values = sorted(measure(spark, kinesis, emulator.endpoint, options, args))
            if not values:
                table.append((label, 0, float("nan"), float("nan"), float("nan")))
                continue
            p90 = values[min(len(values) - 1, int(len(values) * 0.9))]
            table.append((label, len(values), statistics.median(values), p90, values[-1]))
        spark.stop()

    print(
        f"\nEnd-to-end latency (put -> row in foreachBatch), 4 shards, trigger {args.trigger_ms} ms, "
        f"one record every {args.interval_ms} ms, ministack"
    )
    print(f"{'reader':36s} {'samples':>7s} {'median ms':>10s} {'p90 ms':>8s} {'max ms':>8s}")
    for label, n, median, p90, worst in table:
        print(f"{label:36s} {n:7d} {median:10.0f} {p90:8.0f} {worst:8.0f}")


if __name__ == "__main__":
    main()
