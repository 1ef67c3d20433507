"""Demo pipeline: page-view events from Kinesis, counted per page by Spark Structured Streaming.

Runs against any Kinesis endpoint; scripts/demo.sh points it at a local emulator. It creates the
stream, produces JSON events in the background while the query runs, prints each batch's running
totals, and at the end checks that Spark counted every event exactly once.

    python examples/clickstream_demo.py --endpoint http://127.0.0.1:4568 --events 600
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import threading
import time
from collections import Counter

import boto3
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType
from spark_kinesis import FORMAT, configure_spark

PAGES = ["/home", "/search", "/product", "/cart", "/checkout"]
EVENT_SCHEMA = StructType([StructField("user", StringType()), StructField("page", StringType())])


def produce(client: object, stream: str, events: int, sent: Counter[str], seed: int) -> None:
    """Put ``events`` page views in small bursts, as a web tier would."""
    rng = random.Random(seed)
    put = 0
    while put < events:
        burst = []
        for _ in range(min(25, events - put)):
            page = rng.choices(PAGES, weights=[5, 3, 4, 2, 1])[0]
            user = f"user-{rng.randrange(40)}"
            burst.append({"Data": json.dumps({"user": user, "page": page}).encode(), "PartitionKey": user})
            sent[page] += 1
        pending = burst
        while pending:
            response = client.put_records(StreamName=stream, Records=pending)  # type: ignore[attr-defined]
            pending = [r for r, result in zip(pending, response["Records"], strict=True) if result.get("ErrorCode")]
        put += len(burst)
        time.sleep(0.25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument("--stream", default=f"demo-page-views-{int(time.time())}")
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--events", type=int, default=600)
    args = parser.parse_args()

    kinesis = boto3.client("kinesis", endpoint_url=args.endpoint, region_name=args.region)
    kinesis.create_stream(StreamName=args.stream, ShardCount=args.shards)
    kinesis.get_waiter("stream_exists").wait(StreamName=args.stream, WaiterConfig={"Delay": 1})
    print(f"created stream {args.stream} with {args.shards} shards at {args.endpoint}")

    spark = configure_spark(
        SparkSession.builder.appName("page-view-counts")
        .master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
    ).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")

    views = (
        spark.readStream.format(FORMAT)
        .option("kinesis.region", args.region)
        .option("kinesis.endpointUrl", args.endpoint)
        .option("kinesis.streamName", args.stream)
        .option("kinesis.startingPosition", "TRIM_HORIZON")
        .load()
        .select(F.from_json(F.col("data").cast("string"), EVENT_SCHEMA).alias("event"), "shardId")
        .select("event.page", "event.user", "shardId")
    )
    counts = views.groupBy("page").agg(F.count("*").alias("views"), F.approx_count_distinct("user").alias("users"))

    totals: dict[str, int] = {}

    def show(batch: DataFrame, batch_id: int) -> None:
        rows = batch.orderBy(F.desc("views")).collect()
        totals.clear()
        totals.update({r["page"]: r["views"] for r in rows})
        table = ", ".join(f"{r['page']}={r['views']}" for r in rows) or "(no events yet)"
        print(f"batch {batch_id:3d}: {sum(totals.values()):5d} views  {table}", flush=True)

    sent: Counter[str] = Counter()
    producer = threading.Thread(target=produce, args=(kinesis, args.stream, args.events, sent, 7), daemon=True)
    with tempfile.TemporaryDirectory(prefix="demo-checkpoint-") as checkpoint:
        query = (
            counts.writeStream.outputMode("complete")
            .foreachBatch(show)
            .option("checkpointLocation", checkpoint)
            .trigger(processingTime="1 second")
            .start()
        )
        while query.lastProgress is None:  # the producer starts once the query runs
            time.sleep(0.2)
        producer.start()
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and (producer.is_alive() or sum(totals.values()) < args.events):
            if query.exception() is not None:
                raise SystemExit(f"the query failed: {query.exception()}")
            time.sleep(0.5)
        # Stop between two batches where a gap comes soon: batches that take longer than the trigger leave none.
        gap_deadline = time.monotonic() + 5
        while query.status["isTriggerActive"] and time.monotonic() < gap_deadline:
            time.sleep(0.05)
        query.stop()
    spark.stop()

    print("\nfinal page-view counts (Spark / produced):")
    for page in PAGES:
        print(f"  {page:10s} {totals.get(page, 0):5d} / {sent[page]:5d}")
    if totals != dict(sent):
        raise SystemExit("MISMATCH: Spark's counts differ from what was produced")
    print(f"OK: all {args.events} events counted exactly once")


if __name__ == "__main__":
    main()
