"""Keep a copy of a DynamoDB table up to date from its Kinesis change stream, idempotently.

Kinesis Data Streams for DynamoDB writes one JSON record per item change. The stream is
at-least-once and does not promise order: a change may arrive twice, or after a later change of the
same item. Each micro-batch therefore decodes its changes with ``dynamodb_changes``, keeps the newest
change per key (by ``approximateCreationTime``, then by Kinesis sequence number), and applies it
only where it is newer than the version the copy holds. A delete is kept as a tombstone
(``deleted`` true, the item's other columns null), so a late, older change cannot bring the item
back; readers filter ``NOT deleted``. Replaying a batch, or reading a change twice, changes nothing::

    spark-submit --jars "$(spark-kinesis jar)" examples/dynamodb_changes_merge.py \
        --stream orders-changes --output /data/orders --checkpoint /chk/orders

With ``--table`` (a Delta Lake or Iceberg table with the copy's columns; ``--create-using delta``
creates it when missing) each batch runs one ``MERGE INTO``. Without it the copy is Parquet under
``--output``: batch ``N`` writes ``version=N`` from the newest earlier version, so a replayed batch
rewrites the same version. With ``--expect N`` it stops once N changes were read and prints
``RESULT {...}``.

On Spark 4.2 and newer, a Declarative Pipeline does the same with an AUTO CDC flow into a table whose
format supports row-level operations: examples/dynamodb_cdc_pipeline/.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from spark_kinesis import KinesisSource, StartingPosition, dynamodb_changes, register_functions
from spark_kinesis.connect import is_classic_session

# Which of two versions of an item is newer: the later change time, then the later sequence number
# (digit strings, compared by length first). Sequence numbers only order records of one shard; they
# break ties of the millisecond-precision time.
NEWER = "struct({p}.changedAt, length({p}.sequenceNumber), {p}.sequenceNumber)"


def newest_per_key(changes: DataFrame, keys: list[str]) -> DataFrame:
    """Keep one row per key: its newest version."""
    order = F.expr(NEWER.format(p="v")).desc()
    window = Window.partitionBy(*keys).orderBy(order)
    return changes.alias("v").withColumn("_rank", F.row_number().over(window)).where("_rank = 1").drop("_rank")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stream", required=True)
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument("--endpoint")
    parser.add_argument("--keys", default="customer,orderId", help="the table's key attributes")
    parser.add_argument("--schema", default="customer STRING, orderId BIGINT, total DECIMAL(10,2), paid BOOLEAN")
    parser.add_argument("--table", help="a Delta Lake or Iceberg table to MERGE INTO")
    parser.add_argument(
        "--create-using", help="with --table: create the table in this format (delta, iceberg) if missing"
    )
    parser.add_argument("--output", help="the Parquet copy's directory, without --table")
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--expect", type=int)
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()
    if (args.table is None) == (args.output is None):
        parser.error("give one of --table and --output")
    if args.create_using is not None and args.table is None:
        parser.error("--create-using needs --table")
    keys = args.keys.split(",")

    spark = SparkSession.builder.appName("dynamodb-changes-merge").getOrCreate()
    if is_classic_session(spark):
        # Not needed when spark.sql.extensions lists io.sparkkinesis.KinesisSqlExtensions.
        register_functions(spark)
    records = KinesisSource(
        stream_name=args.stream,
        region=args.region,
        endpoint_url=args.endpoint,
        starting_position=StartingPosition.trim_horizon(),
    ).read_stream(spark)
    decoded = records.select(dynamodb_changes("data", args.schema).alias("c"), "sequenceNumber")
    fields = decoded.schema["c"].dataType["newImage"].dataType.fieldNames()
    changes = decoded.select(
        *[F.col(f"c.keys.{k}").alias(k) for k in keys],
        # A REMOVE has no new image: its row is a tombstone.
        *[F.col(f"c.newImage.{f}").alias(f) for f in fields if f not in keys],
        (F.col("c.eventName") == "REMOVE").alias("deleted"),
        F.col("c.approximateCreationTime").alias("changedAt"),
        "sequenceNumber",
    )

    if args.create_using is not None and not spark.catalog.tableExists(args.table):
        spark.createDataFrame([], changes.schema).writeTo(args.table).using(args.create_using).create()

    read = {"changes": 0}

    def merge_into_table(batch: DataFrame) -> None:
        batch.createOrReplaceTempView("dynamodb_changes_batch")
        on = " AND ".join(f"t.{k} <=> s.{k}" for k in keys)
        batch.sparkSession.sql(
            f"""MERGE INTO {args.table} t USING dynamodb_changes_batch s ON {on}
                WHEN MATCHED AND {NEWER.format(p="s")} > {NEWER.format(p="t")} THEN UPDATE SET *
                WHEN NOT MATCHED THEN INSERT *"""
        )

    def merge_into_parquet(batch: DataFrame, batch_id: int) -> None:
        done = sorted(
            int(p.name.split("=")[1])
            for p in Path(args.output).glob("version=*")
            if (p / "_SUCCESS").exists() and int(p.name.split("=")[1]) < batch_id
        )
        merged = batch
        if done:
            merged = spark.read.parquet(f"{args.output}/version={done[-1]}").unionByName(batch)
        newest_per_key(merged, keys).write.mode("overwrite").parquet(f"{args.output}/version={batch_id}")

    def apply_batch(batch: DataFrame, batch_id: int) -> None:
        batch.persist()  # read from Kinesis once for the count and the merge
        received = batch.count()
        newest = newest_per_key(batch, keys)
        if args.table is not None:
            merge_into_table(newest)
        else:
            merge_into_parquet(newest, batch_id)
        batch.unpersist()
        read["changes"] += received

    query = (
        changes.writeStream.foreachBatch(apply_batch)
        .option("checkpointLocation", args.checkpoint)
        .trigger(processingTime="1 second")
        .start()
    )
    deadline = time.monotonic() + args.timeout
    while args.expect is None or read["changes"] < args.expect:
        if query.exception() is not None or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    query.stop()
    if query.exception() is not None:
        raise SystemExit(f"the query failed: {query.exception()}")
    if args.output is not None:
        versions = sorted(int(p.name.split("=")[1]) for p in Path(args.output).glob("version=*"))
        copy = spark.read.parquet(f"{args.output}/version={versions[-1]}")
    else:
        copy = spark.table(args.table)
    live = copy.where("NOT deleted").collect()
    result = {
        "changes": read["changes"],
        "live": {"/".join(str(r[k]) for k in keys): str(r.asDict().get("total")) for r in live},
        "deleted": copy.where("deleted").count(),
    }
    print("RESULT " + json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
