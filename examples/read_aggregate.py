"""Read JSON page-view events from Kinesis and count them per page and minute.

Run it with the connector jar on the classpath::

    spark-submit --jars "$(spark-kinesis jar)" examples/read_aggregate.py \
        --stream page-views --region eu-west-1

Against a local emulator add ``--endpoint http://127.0.0.1:4567``. With ``--expect N`` the query
stops once it has counted N events and prints the totals as one JSON line (``RESULT {...}``); the
tests use that to check the example end to end.
"""

from __future__ import annotations

import argparse
import json
import time

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType, TimestampType
from spark_kinesis import KinesisSource, StartingPosition

EVENT = StructType(
    [StructField("user", StringType()), StructField("page", StringType()), StructField("at", TimestampType())]
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stream", required=True)
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument("--endpoint", help="Kinesis endpoint URL (default: the region's)")
    parser.add_argument("--checkpoint", default=f"/tmp/read-aggregate-{int(time.time())}")
    parser.add_argument("--expect", type=int, help="stop after counting this many events")
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()

    spark = SparkSession.builder.appName("read-aggregate").getOrCreate()
    source = KinesisSource(
        stream_name=args.stream,
        region=args.region,
        endpoint_url=args.endpoint,
        starting_position=StartingPosition.trim_horizon(),
        max_fetch_records_per_shard=10_000,
    )
    events = (
        source.read_stream(spark)
        .select(F.from_json(F.col("data").cast("string"), EVENT).alias("e"), "approximateArrivalTimestamp")
        .select("e.page", F.coalesce("e.at", "approximateArrivalTimestamp").alias("at"))
    )
    per_minute = events.withWatermark("at", "10 minutes").groupBy(F.window("at", "1 minute"), "page").count()

    totals: dict[str, int] = {}

    def publish(batch: DataFrame, batch_id: int) -> None:
        # Complete mode: each batch holds every window's current count.
        rows = batch.groupBy("page").agg(F.sum("count").alias("n")).collect()
        totals.clear()
        totals.update({r["page"]: int(r["n"]) for r in rows})
        print(f"batch {batch_id}: {sum(totals.values())} events so far", flush=True)

    query = (
        per_minute.writeStream.outputMode("complete")
        .foreachBatch(publish)
        .option("checkpointLocation", args.checkpoint)
        .trigger(processingTime="1 second")
        .start()
    )
    deadline = time.monotonic() + args.timeout
    while args.expect is None or sum(totals.values()) < args.expect:
        if query.exception() is not None or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    query.stop()
    if query.exception() is not None:
        raise SystemExit(f"the query failed: {query.exception()}")
    print("RESULT " + json.dumps(totals, sort_keys=True), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
