"""Read JSON orders from one Kinesis stream, enrich them, and write them to another stream.

The sink aggregates many rows into each Kinesis record with the Kinesis Producer Library (at-least-
once: a retried task may write a row again). Run::

    spark-submit --jars "$(spark-kinesis jar)" examples/enrich_write_back.py \
        --source orders --target orders-enriched --region eu-west-1 --checkpoint /chk/enrich

Against local emulators pass ``--endpoint`` (plain, for the reader), ``--sink-endpoint`` (https:
the KPL speaks only TLS), ``--sts-endpoint`` and ``--insecure`` (self-signed certificates). With
``--expect N`` it stops after writing N rows and prints ``RESULT {...}``.
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import timedelta

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, StringType, StructField, StructType
from spark_kinesis import KinesisSink, KinesisSource, StartingPosition

ORDER = StructType(
    [StructField("order", StringType()), StructField("customer", StringType()), StructField("amount", DoubleType())]
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument("--endpoint")
    parser.add_argument("--sink-endpoint")
    parser.add_argument("--sts-endpoint")
    parser.add_argument("--insecure", action="store_true", help="accept self-signed certificates")
    parser.add_argument("--checkpoint", default=f"/tmp/enrich-{int(time.time())}")
    parser.add_argument("--expect", type=int)
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()

    spark = SparkSession.builder.appName("enrich-write-back").getOrCreate()
    orders = (
        KinesisSource(
            stream_name=args.source,
            region=args.region,
            endpoint_url=args.endpoint,
            starting_position=StartingPosition.trim_horizon(),
        )
        .read_stream(spark)
        .select(F.from_json(F.col("data").cast("string"), ORDER).alias("o"), "approximateArrivalTimestamp")
    )
    enriched = orders.select(
        F.col("o.customer").alias("partitionKey"),
        F.to_json(
            F.struct(
                "o.order",
                "o.customer",
                "o.amount",
                (F.col("o.amount") >= 100).alias("large"),
                F.col("approximateArrivalTimestamp").alias("receivedAt"),
            )
        ).alias("data"),
    )
    sink = KinesisSink(
        stream_name=args.target,
        region=args.region,
        endpoint_url=args.sink_endpoint,
        producer_sts_endpoint_url=args.sts_endpoint,
        verify_certificate=False if args.insecure else None,
    )
    query = sink.write_stream(enriched, checkpoint_location=args.checkpoint, processing_time=timedelta(seconds=1))
    deadline = time.monotonic() + args.timeout
    written = 0
    while args.expect is None or written < args.expect:
        if query.exception() is not None or time.monotonic() > deadline:
            break
        time.sleep(0.5)
        written = sum(p["numInputRows"] for p in query.recentProgress)
    query.stop()
    if query.exception() is not None:
        raise SystemExit(f"the query failed: {query.exception()}")
    print("RESULT " + json.dumps({"written": written}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
