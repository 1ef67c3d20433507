"""One key per record: ``kinesis.includeSubSequenceNumber`` and the idempotent-write key of docs/migration.md.

The user records of one KPL aggregate share ``(streamName, shardId, sequenceNumber)``. A job that
upserts on that key keeps one record per aggregate. With ``kinesis.includeSubSequenceNumber=true``
the rows carry ``subSequenceNumber`` (the index in the aggregate, 0 for a plain record), and
``(streamName, shardId, sequenceNumber, subSequenceNumber)`` is unique.

The test delivers every record twice (a second query on a fresh checkpoint re-reads the stream, as
at-least-once delivery may) into a ``foreachBatch`` MERGE written in plain Spark: drop the batch's
duplicate keys, left-anti join with the target table's keys, append the rest. On the 4-column key
the target ends with every record once; on the 3-column key (the control) it loses the records
that share an aggregate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from harness.kinesis import create_stream, put_aggregated, put_plain
from streaming import reader, stop, wait_for

pytestmark = pytest.mark.emulator

KEY4 = ["streamName", "shardId", "sequenceNumber", "subSequenceNumber"]
KEY3 = ["streamName", "shardId", "sequenceNumber"]


def merge_into(spark: Any, target: Path, key: list[str]) -> Any:
    """A MERGE ... WHEN NOT MATCHED THEN INSERT on ``key`` into the parquet table at ``target``."""

    def merge(batch: Any) -> None:
        rows = batch.dropDuplicates(key)
        if target.exists():
            rows = rows.join(spark.read.parquet(str(target)).select(*key), key, "left_anti")
        rows.write.mode("append").parquet(str(target))

    return merge


def test_the_four_column_key_keeps_every_aggregated_record_and_the_three_column_key_does_not(
    spark: Any, kinesis_local: str, kinesis_client_factory: Any, stream_name: str, tmp_path: Path
) -> None:
    kinesis = kinesis_client_factory(kinesis_local)
    # One shard: every user record's hash key lies in its range, so the reader's hash-range filter keeps them all.
    create_stream(kinesis, stream_name, 1)
    aggregated = [f"agg-{i}" for i in range(60)]
    plain = [f"plain-{i}" for i in range(5)]
    # 6 aggregates of 10 user records with 7 partition keys.
    puts = put_aggregated(
        kinesis, stream_name, [(f"key-{i % 7}", d) for i, d in enumerate(aggregated)], records_per_aggregate=10
    )
    assert [p.user_records for p in puts] == [10] * 6
    put_plain(kinesis, stream_name, [(f"p{i}", d) for i, d in enumerate(plain)])
    sent = aggregated + plain

    four, three = tmp_path / "by-four-columns", tmp_path / "by-three-columns"
    delivered: list[tuple[str, int]] = []

    def upsert(batch: Any, _batch_id: int) -> None:
        rows = batch.selectExpr(*KEY4, "CAST(data AS STRING) AS data").persist()
        try:
            seen = [(r["data"], r["subSequenceNumber"]) for r in rows.select("data", "subSequenceNumber").collect()]
            if seen:
                merge_into(spark, four, KEY4)(rows)
                merge_into(spark, three, KEY3)(rows)
                delivered.extend(seen)
        finally:
            rows.unpersist()

    # Two deliveries of every record: the second query starts afresh from TRIM_HORIZON.
    for run in range(2):
        df = reader(spark, kinesis_local, stream_name, startingPosition="TRIM_HORIZON", includeSubSequenceNumber="true")
        query = (
            df.writeStream.foreachBatch(upsert)
            .option("checkpointLocation", str(tmp_path / f"chk-{run}"))
            .trigger(processingTime="200 milliseconds")
            .start()
        )
        try:
            wait_for(lambda n=run: len(delivered) >= (n + 1) * len(sent), query, what=f"delivery {run + 1}")
        finally:
            stop(query)
    assert len(delivered) == 2 * len(sent)
    # The column: 0..9 within each aggregate, 0 for the plain records.
    subs = dict(delivered)
    assert sorted(subs[d] for d in aggregated) == sorted(list(range(10)) * 6)
    assert all(subs[d] == 0 for d in plain)

    kept = sorted(r["data"] for r in spark.read.parquet(str(four)).select("data").collect())
    control = spark.read.parquet(str(three)).count()
    print(f"MERGE on 4 columns kept {len(kept)} of {len(sent)}; on 3 columns {control} of {len(sent)}")
    assert kept == sorted(sent), "the 4-column key lost or repeated records"
    assert control == 6 + len(plain), "the 3-column key keeps one record per aggregate"


def test_without_the_option_the_schema_is_the_awslabs_one(spark: Any, kinesis_local: str, stream_name: str) -> None:
    columns = reader(spark, kinesis_local, stream_name).columns
    assert "subSequenceNumber" not in columns
    with_it = reader(spark, kinesis_local, stream_name, includeSubSequenceNumber="true").schema
    assert with_it.fieldNames()[-1] == "subSequenceNumber"
    assert with_it["subSequenceNumber"].dataType.simpleString() == "bigint"
    assert not with_it["subSequenceNumber"].nullable
