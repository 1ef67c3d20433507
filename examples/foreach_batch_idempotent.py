"""Copy Kinesis records to Parquet files with writes that are idempotent per batch id.

Spark replays a micro-batch after a failure; the connector guarantees the replay holds exactly the
records of the first attempt. Writing each batch to a directory named after its batch id, with
mode "overwrite", therefore gives every record exactly once in the output, even across crashes::

    spark-submit --jars "$(spark-kinesis jar)" examples/foreach_batch_idempotent.py \
        --stream orders --output /data/orders --checkpoint /chk/orders

With ``--expect N`` it stops once the output holds N records and prints ``RESULT {...}``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from spark_kinesis import KinesisSource, StartingPosition


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stream", required=True)
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument("--endpoint")
    parser.add_argument("--output", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--expect", type=int)
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()

    spark = SparkSession.builder.appName("foreach-batch-idempotent").getOrCreate()
    records = KinesisSource(
        stream_name=args.stream,
        region=args.region,
        endpoint_url=args.endpoint,
        starting_position=StartingPosition.trim_horizon(),
        # A subSequenceNumber column: with it, (streamName, shardId, sequenceNumber, subSequenceNumber) is unique
        # per row, also for the user records of one KPL aggregate, which share their sequence number.
        include_sub_sequence_number=True,
    ).read_stream(spark)

    written = {"rows": 0}

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        target = f"{args.output}/batch_id={batch_id}"
        rows = batch.select(
            "streamName",
            "shardId",
            "sequenceNumber",
            "subSequenceNumber",
            "partitionKey",
            F.col("data").cast("string").alias("data"),
        )
        # Overwrite: a replayed batch replaces its own directory with identical content.
        rows.write.mode("overwrite").parquet(target)
        written["rows"] = spark.read.parquet(args.output).count() if Path(args.output).exists() else 0

    query = (
        records.writeStream.foreachBatch(write_batch)
        .option("checkpointLocation", args.checkpoint)
        .trigger(processingTime="1 second")
        .start()
    )
    deadline = time.monotonic() + args.timeout
    while args.expect is None or written["rows"] < args.expect:
        if query.exception() is not None or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    query.stop()
    if query.exception() is not None:
        raise SystemExit(f"the query failed: {query.exception()}")
    out = spark.read.parquet(args.output)
    # The row's unique key: the sub-sequence number tells apart the user records of one aggregate.
    keys = ["streamName", "shardId", "sequenceNumber", "subSequenceNumber"]
    result = {"rows": out.count(), "distinct": out.select(*keys).distinct().count()}
    print("RESULT " + json.dumps(result), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
