"""A stream deleted and re-created under its name (issue 26, section 4), end to end against kinesis-local.

A re-created stream keeps its name, its ARN (an ARN holds only partition, region, account and name) and its shard
ids, but gets a new creation time; the sequence numbers a checkpoint or a positions document holds belong to the old
stream. The connector records each stream's identity (ARN, StreamCreationTimestamp) in its offsets and compares it
when a query restarts or a batch read starts from a document that carries it.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from harness.kinesis import create_stream, delete_stream, put_plain
from spark_kinesis import ShardPositions
from streaming import BatchCollector, batch_read, read_until, reader, start, stop

OLD, NEW = 300, 100


def java_instant(moment: datetime) -> str:
    """``moment`` as Java's ``Instant.toString`` writes it (UTC, milliseconds only when not zero)."""
    utc = moment.astimezone(UTC)
    millis = utc.microsecond // 1000
    return utc.strftime("%Y-%m-%dT%H:%M:%S") + (f".{millis:03d}Z" if millis else "Z")


@pytest.mark.emulator
def test_a_restart_or_a_positions_document_on_a_recreated_stream_fails_clearly_or_reads_the_new_stream(
    spark: Any, kinesis_local: str, kinesis_client_factory: Any, stream_name: str, stream_cleanup: Any, tmp_path: Any
) -> None:
    kinesis = kinesis_client_factory(kinesis_local)
    stream_cleanup(kinesis, stream_name)
    checkpoint = str(tmp_path / "checkpoint")

    # A query reads the old stream and stops.
    create_stream(kinesis, stream_name, 2)
    old = kinesis.describe_stream_summary(StreamName=stream_name)["StreamDescriptionSummary"]
    put_plain(kinesis, stream_name, [f"old-{i}" for i in range(OLD)])
    first = read_until(spark, kinesis_local, stream_name, checkpoint, OLD, startingPosition="TRIM_HORIZON")
    assert sorted(first.data()) == sorted(f"old-{i}" for i in range(OLD))
    # A positions document of where it stopped, naming the stream it was taken from.
    document = ShardPositions().stream_identity(stream_name, old["StreamARN"], old["StreamCreationTimestamp"])
    last: dict[str, str] = {}
    for row in first.rows():
        if int(row.sequence_number) > int(last.get(row.shard_id, "0")):
            last[row.shard_id] = row.sequence_number
    for shard, sequence_number in last.items():
        document = document.after_sequence_number(stream_name, shard, sequence_number)

    # The stream is deleted and created again with the same name and shards.
    delete_stream(kinesis, stream_name)
    create_stream(kinesis, stream_name, 2)
    new = kinesis.describe_stream_summary(StreamName=stream_name)["StreamDescriptionSummary"]
    # What the design rests on, as on AWS: the same ARN, a later creation time.
    assert new["StreamARN"] == old["StreamARN"]
    assert new["StreamCreationTimestamp"] > old["StreamCreationTimestamp"]
    put_plain(kinesis, stream_name, [f"new-{i}" for i in range(NEW)])
    old_created, new_created = (
        java_instant(old["StreamCreationTimestamp"]),
        java_instant(new["StreamCreationTimestamp"]),
    )

    # Restarted with the default options (kinesis.failOnDataLoss not set): a clear failure, at once, before any row.
    failing = BatchCollector()
    began = time.monotonic()
    query = start(reader(spark, kinesis_local, stream_name), failing, checkpoint)
    try:
        deadline = began + 90
        while query.exception() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        failed_after = time.monotonic() - began
        error = query.exception()
    finally:
        if query.isActive:  # a failed query has ended already (stopping it would raise its error again)
            stop(query)
    assert error is not None, "the restart on the re-created stream did not fail"
    message = str(error)
    for part in (
        f"Stream {stream_name} was deleted and re-created",
        f"created {old_created}, ARN {old['StreamARN']}",
        f"created {new_created}, ARN {new['StreamARN']}",
        "new checkpoint location",
        "kinesis.failOnDataLoss=false explicitly",
    ):
        assert part in message, f"{part!r} not in: {message}"
    assert failing.rows() == []
    assert failed_after < 60, f"failed only after {failed_after:.1f} s"
    print(f"restart on the re-created stream failed after {failed_after:.1f} s")

    # Restarted with failOnDataLoss=false (Trigger.AvailableNow): every record of the new stream, none of the old.
    lenient = BatchCollector()
    query = (
        reader(spark, kinesis_local, stream_name, failOnDataLoss="false")
        .writeStream.foreachBatch(lenient)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(60), "the AvailableNow run did not end"
    assert query.exception() is None
    assert sorted(lenient.data()) == sorted(f"new-{i}" for i in range(NEW))
    # The offsets it wrote hold the new stream's identity.
    offsets = sorted(
        (p for p in (tmp_path / "checkpoint" / "offsets").iterdir() if p.name.isdigit()), key=lambda p: int(p.name)
    )
    latest = json.loads(offsets[-1].read_text().splitlines()[-1])
    assert latest["streamIdentities"][stream_name] == {
        "streamArn": new["StreamARN"],
        "streamCreationTimestamp": new_created,
    }

    # A batch read from the old stream's positions document: fails (by default, and with failOnDataLoss=true), or
    # with failOnDataLoss=false reads it all.
    with pytest.raises(Exception, match=f"Stream {stream_name} was deleted and re-created") as raised:
        batch_read(spark, kinesis_local, stream_name, startingPosition=document.option_value()).count()
    assert "kinesis.startingPosition document" in str(raised.value)
    assert old_created in str(raised.value) and new_created in str(raised.value)
    rows = batch_read(
        spark, kinesis_local, stream_name, startingPosition=document.option_value(), failOnDataLoss="false"
    ).collect()
    assert sorted(bytes(r["data"]).decode() for r in rows) == sorted(f"new-{i}" for i in range(NEW))


def test_a_positions_document_carries_the_stream_identity_in_the_form_the_connector_reads() -> None:
    arn = "arn:aws:kinesis:us-east-1:123456789012:stream/orders"
    doc = (
        ShardPositions()
        .stream_identity("orders", arn, datetime(2026, 11, 26, 17, 13, 22, 126000, tzinfo=UTC))
        .trim_horizon("orders", "shardId-000000000000")
    )
    assert json.loads(doc.option_value()) == {
        "orders": {
            "streamArn": arn,
            "streamCreationTimestamp": "2026-11-26T17:13:22.126000Z",
            "shardId-000000000000": {"type": "TRIM_HORIZON"},
        }
    }
    assert ShardPositions.from_json(doc.option_value()) == doc
    with pytest.raises(ValueError, match="is not the ARN of stream 'orders'"):
        ShardPositions().stream_identity("orders", arn.replace("orders", "clicks"))
    with pytest.raises(ValueError, match="has an identity but no shard positions"):
        ShardPositions().stream_identity("orders", arn).option_value()
    with pytest.raises(ValueError, match="must map to shard positions"):
        ShardPositions.from_json(json.dumps({"orders": {"streamArn": arn}}))
