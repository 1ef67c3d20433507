"""The pipeline's datasets: Kinesis orders in, enriched orders out to another Kinesis stream.

``spark-pipelines`` imports this file once to register what it defines (it runs nothing here):

* ``orders_raw``, a streaming table fed by ``spark.readStream.format(FORMAT)`` of the spark-kinesis connector: one
  row per order, parsed from the record's JSON, with the shard and sequence number it came from;
* ``orders_enriched``, a sink (``dp.create_sink``) that writes to a Kinesis stream through the connector's sink;
* ``enrich_orders``, the append flow from the table to the sink: each order with a ``large`` flag, keyed by customer.

A run processes what the source stream holds and stops (streaming flows run with ``Trigger.AvailableNow``); the next
run resumes from the checkpoints under the spec's ``storage``. Streams, region and endpoints come from the spec's
``configuration`` (keys ``kinesis_orders.*``); credentials from the AWS default chain of the Spark driver and
executors, never from this file.
"""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, StringType, StructField, StructType
from spark_kinesis import FORMAT, KinesisSink, KinesisSource, StartingPosition

ORDER = StructType(
    [StructField("order", StringType()), StructField("customer", StringType()), StructField("amount", DoubleType())]
)
LARGE_AMOUNT = 100.0

# The pipeline's session (spark-pipelines also hands it to this module as the global `spark`).
spark = SparkSession.active()


def setting(name: str) -> str | None:
    """The spec's ``kinesis_orders.<name>`` configuration value; ``None`` when absent or empty."""
    value = spark.conf.get(f"kinesis_orders.{name}", "")
    return value or None


def required(name: str) -> str:
    value = setting(name)
    if value is None:
        raise ValueError(f"spark-pipeline.yml: configuration kinesis_orders.{name} must be set")
    return value


REGION = required("region")
VERIFY = (setting("verify_certificate") or "true").lower()
if VERIFY not in ("true", "false"):
    raise ValueError(f"spark-pipeline.yml: kinesis_orders.verify_certificate must be true or false, not {VERIFY!r}")


@dp.table(name="orders_raw", comment="Orders read from Kinesis: one row per record, parsed from its JSON")
def orders_raw() -> DataFrame:
    source = KinesisSource(
        stream_name=required("source_stream"),
        region=REGION,
        endpoint_url=setting("endpoint_url"),
        starting_position=StartingPosition.trim_horizon(),
    )
    return (
        spark.readStream.format(FORMAT)
        .options(**source.options())
        .load()
        .select(
            F.from_json(F.col("data").cast("string"), ORDER).alias("o"),
            "shardId",
            "sequenceNumber",
            "approximateArrivalTimestamp",
        )
        .select("o.*", "shardId", "sequenceNumber", "approximateArrivalTimestamp")
    )


dp.create_sink(
    name="orders_enriched",
    format=FORMAT,
    options=KinesisSink(
        stream_name=required("sink_stream"),
        region=REGION,
        endpoint_url=setting("sink_endpoint_url"),
        verify_certificate=VERIFY == "true",
    ).options(),
)


@dp.append_flow(target="orders_enriched")
def enrich_orders() -> DataFrame:
    return spark.readStream.table("orders_raw").select(
        F.col("customer").alias("partitionKey"),
        F.to_json(
            F.struct(
                "order",
                "customer",
                "amount",
                (F.col("amount") >= LARGE_AMOUNT).alias("large"),
                F.col("sequenceNumber").alias("sourceSequenceNumber"),
            )
        ).alias("data"),
    )
