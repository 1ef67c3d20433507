"""``spark_kinesis.dynamodb_changes`` on DynamoDB change records, through a real local session.

The records are the Scala suite's fixtures (src/test/resources/dynamodb-changes/, written after
AWS's "Using Kinesis Data Streams to capture changes to DynamoDB" page,
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/kds.html). The session comes from
``configure_spark``, which adds the connector's SQL extension.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from spark_kinesis import dynamodb_changes, register_functions

FIXTURES = Path(__file__).resolve().parent.parent / "src" / "test" / "resources" / "dynamodb-changes"


def test_dynamodb_changes_types_each_change(spark: Any) -> None:
    from pyspark.sql.types import BinaryType, StringType, StructField, StructType

    names = ["insert", "modify", "remove", "ttl-remove"]
    records = spark.createDataFrame(
        [(str(i), (FIXTURES / f"{name}.json").read_bytes()) for i, name in enumerate(names)],
        StructType([StructField("sequenceNumber", StringType()), StructField("data", BinaryType())]),
    )
    schema = "customer STRING, orderId BIGINT, total DECIMAL(38,18), tags ARRAY<STRING>, paid BOOLEAN"
    rows = (
        records.select("sequenceNumber", dynamodb_changes("data", schema).alias("c"))
        .orderBy("sequenceNumber")
        .select("c.*")
        .collect()
    )
    assert [r.eventName for r in rows] == ["INSERT", "MODIFY", "REMOVE", "REMOVE"]
    insert, modify, remove, ttl = rows
    assert insert.newImage.total == Decimal("12345678901234567890.123456789012345678")
    assert insert.newImage.tags == ["gift", "express"]
    assert insert.oldImage is None
    assert (insert.keys.customer, insert.keys.orderId, insert.keys.total) == ("c#42", 1001, None)
    assert modify.oldImage.paid is False and modify.newImage.paid is True
    assert modify.approximateCreationTime.astimezone(dt.UTC) == dt.datetime(
        2024, 7, 29, 21, 55, 56, 123456, tzinfo=dt.UTC
    )
    assert remove.newImage is None and remove.principalId is None
    assert ttl.principalId == "dynamodb.amazonaws.com"

    # Registering again on a running session (what register_functions is for) keeps the function working.
    register_functions(spark)
    # A StructType works as the schema too; a value that does not fit fails naming the field.
    typed = StructType([StructField("customer", StringType())])
    first = records.select(dynamodb_changes(records.data, typed).alias("c")).first()
    assert first is not None and first.c.keys.customer == "c#42"
    with pytest.raises(Exception, match=r"NewImage\.tags"):
        records.select(dynamodb_changes("data", "tags ARRAY<INT>")).collect()
