"""Several streams in one source, end to end against kinesis-local."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from harness.kinesis import create_stream, open_shards, put_plain, split_shard, unique_stream_name
from streaming import BatchCollector, reader, start, stop, wait_batches, wait_for

pytestmark = pytest.mark.emulator


def test_two_streams_one_resharded_while_running_every_record_once_per_stream(
    spark: Any, kinesis_local: str, kinesis: Any, stream_cleanup: Any, tmp_path: Any
) -> None:
    a = stream_cleanup(kinesis, unique_stream_name("multi-a"))
    b = stream_cleanup(kinesis, unique_stream_name("multi-b"))
    create_stream(kinesis, a, 2)
    create_stream(kinesis, b, 3)
    # The same payloads in both streams: only the streamName column tells them apart.
    first = [f"r-{i}" for i in range(90)]
    put_plain(kinesis, a, first)
    put_plain(kinesis, b, first)
    collector = BatchCollector()
    options = {"startingPosition": "TRIM_HORIZON", "maxFetchRecordsPerShard": "10"}
    query = start(reader(spark, kinesis_local, f"{a}, {b}", **options), collector, str(tmp_path / "chk"))
    try:
        wait_for(lambda: len(collector.rows()) >= 30, query, what="a first part")
        children = split_shard(kinesis, a, sorted(s["ShardId"] for s in open_shards(kinesis, a))[0])
        second = [f"r-{i}" for i in range(90, 150)]
        put_plain(kinesis, a, second)
        put_plain(kinesis, b, second)
        wait_for(lambda: len(collector.rows()) >= 300, query, what="300 rows")
        wait_batches(query, 2)
    finally:
        stop(query)
    rows = collector.rows()
    expected = Counter(first + second)
    assert Counter(r.data for r in rows if r.stream_name == a) == expected
    assert Counter(r.data for r in rows if r.stream_name == b) == expected
    assert {r.stream_name for r in rows} == {a, b}
    assert set(children) & {r.shard_id for r in rows if r.stream_name == a}, "the children of the split were read"
    assert len({r.shard_id for r in rows if r.stream_name == b}) == 3


def test_a_stream_added_to_the_list_on_restart_starts_per_starting_position(
    spark: Any, kinesis_local: str, kinesis: Any, stream_cleanup: Any, tmp_path: Any
) -> None:
    a = stream_cleanup(kinesis, unique_stream_name("multi-a"))
    b = stream_cleanup(kinesis, unique_stream_name("multi-b"))
    create_stream(kinesis, a, 1)
    create_stream(kinesis, b, 1)
    put_plain(kinesis, a, [f"a-{i}" for i in range(20)])
    put_plain(kinesis, b, [f"b-{i}" for i in range(20)])
    checkpoint = str(tmp_path / "chk")
    collector = BatchCollector()
    options = {"startingPosition": "TRIM_HORIZON"}
    query = start(reader(spark, kinesis_local, a, **options), collector, checkpoint)
    try:
        wait_for(lambda: len(collector.rows()) >= 20, query, what="stream a")
    finally:
        stop(query)
    query = start(reader(spark, kinesis_local, f"{a},{b}", **options), collector, checkpoint)
    try:
        wait_for(lambda: len(collector.rows()) >= 40, query, what="stream b too")
        wait_batches(query, 2)
    finally:
        stop(query)
    assert Counter(collector.data()) == Counter([f"a-{i}" for i in range(20)] + [f"b-{i}" for i in range(20)])


def test_a_bad_stream_list_fails_when_the_query_is_defined(spark: Any, kinesis_local: str) -> None:
    with pytest.raises(Exception) as error:
        reader(spark, kinesis_local, "orders,,clicks")
    assert "kinesis.streamName" in str(error.value) and "is not a stream name" in str(error.value)


def _read_once(spark: Any, endpoint: str, checkpoint: str, **options: str) -> list[tuple[str, str, str, str]]:
    r = (
        spark.readStream.format("aws-kinesis")
        .option("kinesis.endpointUrl", endpoint)
        .option("kinesis.startingPosition", "TRIM_HORIZON")
    )
    for key, value in options.items():
        r = r.option(f"kinesis.{key}", value)
    collector = BatchCollector()
    query = r.load().writeStream.foreachBatch(collector).option("checkpointLocation", checkpoint)
    query = query.trigger(availableNow=True).start()
    assert query.awaitTermination(120) and query.exception() is None
    return sorted((r.stream_name, r.shard_id, r.sequence_number, r.data) for r in collector.rows())


def test_reading_by_arn_equals_reading_by_name(
    spark: Any, kinesis_local: str, kinesis: Any, stream_cleanup: Any, tmp_path: Any
) -> None:
    a = stream_cleanup(kinesis, unique_stream_name("arn-a"))
    b = stream_cleanup(kinesis, unique_stream_name("arn-b"))
    create_stream(kinesis, a, 2)
    create_stream(kinesis, b, 1)
    put_plain(kinesis, a, [f"a-{i}" for i in range(50)])
    put_plain(kinesis, b, [f"b-{i}" for i in range(30)])
    arns = [kinesis.describe_stream_summary(StreamName=s)["StreamDescriptionSummary"]["StreamARN"] for s in (a, b)]
    # No region option: it comes from the ARN.
    by_arn = _read_once(spark, kinesis_local, str(tmp_path / "arn"), streamArn=",".join(arns))
    by_name = _read_once(spark, kinesis_local, str(tmp_path / "name"), streamName=f"{a},{b}", region="us-east-1")
    assert len(by_arn) == 80
    assert by_arn == by_name


def test_a_malformed_arn_fails_when_the_query_is_defined(spark: Any, kinesis_local: str) -> None:
    with pytest.raises(Exception) as error:
        (
            spark.readStream.format("aws-kinesis")
            .option("kinesis.endpointUrl", kinesis_local)
            .option("kinesis.streamArn", "arn:aws:kinesis:us-east-1:42:stream/orders")
            .load()
        )
    message = str(error.value)
    assert "kinesis.streamArn" in message and "is not a Kinesis stream ARN" in message
