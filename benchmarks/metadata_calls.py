"""DynamoDB calls per micro-batch of a query with the DynamoDB metadata committer, by operation.

A 64-shard stream on ministack gets a backlog (about 4 records per shard per batch for --batches batches); a query
(local[2], a 10 s processing-time trigger, a noop sink, ``kinesis.maxFetchRecordsPerShard`` 4,
``kinesis.minBatchesToRetain`` 2) reads it with ``kinesis.metadataCommitterType=DYNAMODB``, its DynamoDB endpoint
behind the counting proxy (tests/harness/proxy.py). Counted over --batches batches after the first three (start-up,
table creation and the first commits, which purge nothing, are not the steady state):

* every DynamoDB HTTP request, by operation, at the proxy (tasks, driver and background threads, retries included);
* the SDK calls made by tasks, and those made inside ``KinesisMicroBatchStream.commit`` (the driver's thread, on the
  batch's critical path), by an AWS SDK interceptor (DynamoCallCounter.java, compiled here against the shaded jar and
  registered as a global interceptor), which looks at the calling thread's name and stack.

Set ``SPARK_KINESIS_JAR`` (the line's jar and the deps jar, comma-separated) to measure another build, for example
the jar of an older commit.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from harness import emulators  # noqa: E402
from harness.kinesis import create_stream, put_plain  # noqa: E402
from harness.proxy import CountingProxy  # noqa: E402
from results import add_row  # noqa: E402
from sessions import kinesis_stream  # noqa: E402

RECORDS_PER_SHARD_PER_BATCH = 4
# Where the SDK inside the connector's shaded jar looks for global interceptors (its relocated resource path).
INTERCEPTORS = "io/sparkkinesis/shaded/software/amazon/awssdk/global/handlers/execution.interceptors"


def compile_counter(connector_jars: list[str], into: Path) -> Path:
    """DynamoCallCounter.java compiled against the connector's jars, as a jar that registers it."""
    classes = into / "classes"
    classes.mkdir(parents=True, exist_ok=True)
    source = ROOT / "benchmarks" / "DynamoCallCounter.java"
    subprocess.run(["javac", "-cp", ":".join(connector_jars), "-d", str(classes), str(source)], check=True)
    registration = classes / INTERCEPTORS
    registration.parent.mkdir(parents=True, exist_ok=True)
    registration.write_text("DynamoCallCounter\n", encoding="utf-8")
    jar = into / "dynamo-call-counter.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(classes), "."], check=True)
    return jar


def parse_counts(text: str) -> dict[str, Counter[str]]:
    """DynamoCallCounter.drain()'s text as calls by operation per scope ("all", "task", "commit")."""
    scopes: dict[str, Counter[str]] = {"all": Counter(), "task": Counter(), "commit": Counter()}
    for item in filter(None, text.split(",")):
        key, value = item.rsplit("=", 1)
        scope, operation = key.split(" ", 1)
        scopes[scope][operation] += int(value)
    return scopes


def wait_for_batch(query: object, batch_id: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        progress = query.lastProgress  # type: ignore[attr-defined]
        if progress is not None and progress["batchId"] >= batch_id:
            return
        exception = query.exception()  # type: ignore[attr-defined]
        if exception is not None:
            raise RuntimeError(f"the query failed: {exception}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"batch {batch_id} did not complete within {timeout}s (last: {progress})")
        time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=64)
    parser.add_argument("--batches", type=int, default=10, help="batches measured (after two warm-up batches)")
    parser.add_argument("--trigger-seconds", type=int, default=10, help="longer than a batch takes")
    parser.add_argument("--label", default="", help="names the build in the table (e.g. 'before', 'after')")
    parser.add_argument("--results", help="JSON-lines file to append the table rows to (see results.py)")
    args = parser.parse_args()
    os.environ.update(
        AWS_ACCESS_KEY_ID=emulators.ACCESS_KEY, AWS_SECRET_ACCESS_KEY=emulators.SECRET_KEY, AWS_REGION="us-east-1"
    )
    import spark_kinesis
    from pyspark.sql import SparkSession

    connector_jars = spark_kinesis.jar_paths()
    counter_jar = compile_counter(connector_jars, Path(tempfile.mkdtemp(prefix="dynamo-call-counter-")))
    # Batches 0 to 2 warm up (start-up calls, table creation; the commits of batches 0 and 1 purge nothing). Spark
    # commits batch N when it plans batch N+1, so the window of batches 3 to 2+B holds the commits of batches 2 to
    # 1+B: B purges, each of one batch.
    warmup = 3
    total_batches = warmup + args.batches
    with emulators.running("ministack") as emulator, CountingProxy(emulator.endpoint) as proxy:
        kinesis = emulators.kinesis_client(emulator.endpoint)
        stream = f"bench-metadata-{time.time_ns()}"
        create_stream(kinesis, stream, args.shards)
        # Random partition keys: at 4 records per shard per batch, every shard has records in every batch.
        records = args.shards * RECORDS_PER_SHARD_PER_BATCH * (total_batches + 2)
        put_plain(kinesis, stream, (f"record {i}" for i in range(records)))
        spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.jars", ",".join([*connector_jars, str(counter_jar)]))
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.extraJavaOptions", "-Daws.cborEnabled=false")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        counter = spark._jvm.DynamoCallCounter  # type: ignore[attr-defined]
        options = {
            "kinesis.maxFetchRecordsPerShard": str(RECORDS_PER_SHARD_PER_BATCH),
            "kinesis.minBatchesToRetain": "2",
            "kinesis.metadataCommitterType": "DYNAMODB",
            "kinesis.dynamodb.tableName": f"bench-metadata-{uuid.uuid4().hex[:8]}",
            "kinesis.dynamodb.endpointUrl": proxy.url,
        }
        df = kinesis_stream(spark, emulator.endpoint, stream, options).load()
        # A trigger longer than a batch: between two batches the driver is idle, so counts read there split cleanly.
        query = (
            df.writeStream.format("noop")
            .option("checkpointLocation", tempfile.mkdtemp(prefix="bench-metadata-chk-"))
            .trigger(processingTime=f"{args.trigger_seconds} seconds")
            .start()
        )
        try:
            wait_for_batch(query, warmup - 1, 300)
            time.sleep(1)  # the background purge of the last commit, if any
            proxy.reset()
            counter.drain()
            first = query.lastProgress["batchId"]
            wait_for_batch(query, first + args.batches, 60 + 2 * args.trigger_seconds * args.batches)
            time.sleep(0.5)
            http = proxy.counts()
            sdk = parse_counts(counter.drain())
            measured = query.lastProgress["batchId"] - first
            durations = [p["durationMs"].get("triggerExecution", 0) for p in query.recentProgress[-measured:]]
        finally:
            query.stop()
            spark.stop()

    def per_batch(counts: dict[str, int]) -> dict[str, float]:
        return {op: round(n / measured, 2) for op, n in sorted(counts.items())}

    build = f" ({args.label})" if args.label else ""
    scenario = f"DynamoDB metadata, {args.shards} shards, {measured} batches{build}"
    for operation, calls in per_batch(http).items():
        in_commit = sdk["commit"].get(operation, 0) / measured
        add_row(
            args.results,
            scenario,
            f"{operation} calls per batch (in commit: {in_commit:g})",
            f"{calls:g}",
            baseline="shards",
            baseline_value=str(args.shards),
            ratio=calls / args.shards,
            notes="HTTP requests at the proxy; in commit: SDK calls on the driver's commit path",
        )
    print(
        json.dumps(
            {
                "scenario": "metadata calls",
                "build": args.label,
                "shards": args.shards,
                "batches": measured,
                "httpRequestsPerBatch": per_batch(http),
                "sdkCallsPerBatch": per_batch(dict(sdk["all"])),
                "byTasksPerBatch": per_batch(dict(sdk["task"])),
                "inCommitPerBatch": per_batch(dict(sdk["commit"])),
                "triggerExecutionMs": durations,
            }
        )
    )


if __name__ == "__main__":
    main()
