"""The pipeline's datasets: a DynamoDB table's changes from Kinesis, applied to a table by AUTO CDC.

``spark-pipelines`` imports this file once to register what it defines (it runs nothing here):

* ``order_changes``, a view of the change stream: ``spark.readStream.format(FORMAT)`` of the spark-kinesis connector,
  each record decoded by ``dynamodb_changes`` into the item's keys and new image, typed by the spec's schema, with
  whether the change deleted the item and the change's time and sequence number;
* the target table (``orders_cdc.target``), a streaming table kept by an AUTO CDC flow from that view: one row per
  key, the newest change by change time and then sequence number, deletes applied.

The change stream is at-least-once and keeps no order across shards. AUTO CDC orders the changes of each key by
``sequence_by``, ignores a change older than the one already applied (a repeat, or a late delivery), and remembers
deletes, so a late change older than a delete does not bring the item back.
"""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType
from spark_kinesis import FORMAT, KinesisSource, StartingPosition, dynamodb_changes

# The pipeline's session (spark-pipelines also hands it to this module as the global `spark`).
spark = SparkSession.active()


def setting(name: str) -> str | None:
    """The spec's ``orders_cdc.<name>`` configuration value; ``None`` when absent or empty."""
    value = spark.conf.get(f"orders_cdc.{name}", "")
    return value or None


def required(name: str) -> str:
    value = setting(name)
    if value is None:
        raise ValueError(f"spark-pipeline.yml: configuration orders_cdc.{name} must be set")
    return value


TARGET = required("target")
KEYS = required("keys").split(",")
SCHEMA = required("schema")
ATTRIBUTES = StructType.fromDDL(SCHEMA).fieldNames()
unknown = sorted(set(KEYS) - set(ATTRIBUTES))
if unknown:
    raise ValueError(f"spark-pipeline.yml: orders_cdc.keys names {unknown}, which orders_cdc.schema lacks")


@dp.temporary_view(name="order_changes")
def order_changes() -> DataFrame:
    source = KinesisSource(
        stream_name=required("stream"),
        region=required("region"),
        endpoint_url=setting("endpoint_url"),
        starting_position=StartingPosition.trim_horizon(),
    )
    changes = (
        spark.readStream.format(FORMAT)
        .options(**source.options())
        .load()
        .select(dynamodb_changes("data", SCHEMA).alias("c"), "sequenceNumber")
    )
    return changes.select(
        *[F.col(f"c.keys.{k}").alias(k) for k in KEYS],
        # A REMOVE has no new image: its attributes are null, and AUTO CDC deletes the row.
        *[F.col(f"c.newImage.{a}").alias(a) for a in ATTRIBUTES if a not in KEYS],
        (F.col("c.eventName") == "REMOVE").alias("deleted"),
        F.col("c.approximateCreationTime").alias("changedAt"),
        "sequenceNumber",
    )


dp.create_streaming_table(name=TARGET, comment="The DynamoDB table's items, kept by AUTO CDC")

dp.create_auto_cdc_flow(
    target=TARGET,
    source="order_changes",
    keys=KEYS,
    # Newer: the later change time, then the later sequence number (digit strings: the longer is the later).
    # Sequence numbers only order the records of one shard; they break ties of the millisecond-precision time.
    sequence_by=F.struct("changedAt", F.length("sequenceNumber"), "sequenceNumber"),
    apply_as_deletes="deleted",
    except_column_list=["deleted", "sequenceNumber"],
    stored_as_scd_type=1,
)
