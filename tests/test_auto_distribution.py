"""Streams with service-managed record distribution (``RecordDistributionStrategy=AUTO``), on kinesis-local.

kinesis-local stores records but knows nothing of AUTO, so every AUTO stream here is reached through the counting
proxy acting as the service (:meth:`harness.proxy.CountingProxy.distribute_automatically`): DescribeStreamSummary
reports AUTO, each put record gets a random ExplicitHashKey (placed regardless of its key), a record put without a
partition key is stored with one invented for the emulator, and GetRecords answers leave that key out again. The
sink (the real KPL, over HTTPS) reaches the proxy through a TLS front; the source and boto3 reach it over plain HTTP.
Checks of what was stored read kinesis-local directly, past the proxy.

What is proved:

* the sink writes an AUTO stream without aggregating (no KPL magic stored) although aggregation is on by default,
  loses no row, writes rows without a partition key (null column, or no column) without one, and logs its decision;
  the same write to a USER_PARTITION_KEY stream aggregates and logs that instead;
* the source reads every row back, those without a key with ``partitionKey`` null, in a batch read and in a polling
  micro-batch query (fan-out and real-time reads of keyless records: ``KeylessRecordSuite`` and ``ShardReaderSuite``
  in Scala, since the proxy does not rewrite HTTP/2 event streams);
* an aggregate of 100 user records whose keys hash to both shards of a 2-shard stream, put with ExplicitHashKey 0
  (placed as the AUTO service may place it): read whole on an AUTO stream; on a USER_PARTITION_KEY stream the
  sub-records outside shard 0's range are dropped, counted in the ``droppedOutsideRange`` source metric, and warned
  about once.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import emulators, kpl
from harness.kinesis import create_stream, list_shards, put_aggregated, read_shard
from harness.proxy import CountingProxy
from harness.tls_front import TlsFront
from streaming import read_until, reader

pytestmark = pytest.mark.emulator


@contextlib.contextmanager
def connector_log(spark: Any, path: Path) -> Iterator[Callable[[], str]]:
    """The connector's log records (INFO and above) while the block runs, written to ``path`` by a log4j appender
    added to the Spark JVM for the block; yields a function that returns what was logged so far."""
    jvm = spark._jvm
    core = jvm.org.apache.logging.log4j.core
    context = jvm.org.apache.logging.log4j.LogManager.getContext(False)
    config = context.getConfiguration()
    name = f"auto-distribution-{path.name}"
    layout = core.layout.PatternLayout.newBuilder().withPattern("%p %c: %m%n").build()
    appender = core.appender.FileAppender.newBuilder().withFileName(str(path)).setName(name).setLayout(layout).build()
    appender.start()
    config.addAppender(appender)
    info = jvm.org.apache.logging.log4j.Level.INFO
    logger = core.config.LoggerConfig("io.sparkkinesis", info, False)
    logger.addAppender(appender, info, None)
    config.addLogger("io.sparkkinesis", logger)
    context.updateLoggers()
    try:
        yield lambda: path.read_text() if path.exists() else ""
    finally:
        config.removeLogger("io.sparkkinesis")
        context.updateLoggers()
        appender.stop()


@pytest.fixture(scope="module")
def service(kinesis_local: str) -> Iterator[tuple[CountingProxy, TlsFront]]:
    """The proxy acting as the AUTO service in front of kinesis-local, and a TLS front to it for the KPL."""
    with CountingProxy(kinesis_local, seed=26) as proxy, TlsFront(proxy.url) as front:
        yield proxy, front


def sink_options(front: TlsFront, stream: str, producer: str = "KPL") -> dict[str, str]:
    # Aggregation is left at its default (on): the sink must turn it off by itself on an AUTO stream.
    return {
        "kinesis.endpointUrl": front.url,
        "kinesis.region": emulators.REGION,
        "kinesis.streamName": stream,
        "kinesis.sink.verifyCertificate": "false",
        "kinesis.sink.producer": producer,
    }


def stored(kinesis: Any, stream: str) -> list[tuple[str, bytes]]:
    """(shard, data) of every Kinesis record stored in the stream, as kinesis-local has it."""
    found = []
    for shard in list_shards(kinesis, stream):
        records, _ = read_shard(kinesis, stream, shard["ShardId"], max_calls=200)
        found.extend((shard["ShardId"], bytes(r["Data"])) for r in records)
    return found


@pytest.mark.parametrize("producer", ["KPL", "JAVA"])
def test_sink_writes_an_auto_stream_unaggregated_and_the_source_reads_every_row_back(
    spark: Any, kinesis: Any, service: tuple[CountingProxy, TlsFront], stream_name: str, tmp_path: Path, producer: str
) -> None:
    proxy, front = service
    auto, control = f"{stream_name}-auto", f"{stream_name}-upk"
    create_stream(kinesis, auto, 2)
    create_stream(kinesis, control, 1)
    proxy.distribute_automatically(auto)
    keyless_before = proxy.keyless_records()

    keyed = [(f"key-{i % 20}", f"keyed-{i}") for i in range(200)]
    nulls = [(None, f"nokey-{i}") for i in range(100)]
    rows = spark.createDataFrame(keyed + nulls, "partitionKey string, data string").repartition(2)
    without_column = spark.createDataFrame([(f"nocolumn-{i}",) for i in range(50)], "data string")
    with connector_log(spark, tmp_path / "connector.log") as log:
        rows.write.format("aws-kinesis").mode("append").options(**sink_options(front, auto, producer)).save()
        without_column.write.format("aws-kinesis").mode("append").options(**sink_options(front, auto, producer)).save()
        # Twice: the KPL sends rows unaggregated until it has the stream's shard map; the second write aggregates.
        for half in (keyed[:100], keyed[100:]):
            spark.createDataFrame(half, "partitionKey string, data string").write.format("aws-kinesis").mode(
                "append"
            ).options(**sink_options(front, control, producer)).save()
        logged = log()
    written = [d for _, d in keyed + nulls] + [f"nocolumn-{i}" for i in range(50)]

    # Stored: one Kinesis record per row (no aggregate), placed on both shards; the keyless ones put without a key.
    records = stored(kinesis, auto)
    assert sorted(d.decode() for _, d in records) == sorted(written)
    assert not any(kpl.is_aggregated(d) for _, d in records)
    assert len({shard for shard, _ in records}) == 2
    assert proxy.keyless_records() - keyless_before == 150
    # The control: the same keyed rows to a USER_PARTITION_KEY stream are aggregated (once the KPL has its shard map).
    control_records = stored(kinesis, control)
    assert any(kpl.is_aggregated(d) for _, d in control_records) and len(control_records) < len(keyed)
    control_rows = [u.data for _, d in control_records if kpl.is_aggregated(d) for u in kpl.decode(d)]
    control_rows += [d for _, d in control_records if not kpl.is_aggregated(d)]
    assert sorted(d.decode() for d in control_rows) == sorted(d for _, d in keyed)
    # The decision, logged once per stream.
    assert logged.count(f"Stream {auto} has service-managed record distribution (RecordDistributionStrategy AUTO)") == 1
    assert "kinesis.sink.aggregationEnabled=true is ignored for it" in logged
    assert logged.count(f"Stream {control} places records by partition key") == 1

    # Read back through the AUTO service: every row, the keyless ones with a null partitionKey.
    expected = Counter(
        [(d, k) for k, d in keyed] + [(d, None) for _, d in nulls] + [(f"nocolumn-{i}", None) for i in range(50)]
    )
    batch = (
        spark.read.format("aws-kinesis")
        .option("kinesis.endpointUrl", proxy.url)
        .option("kinesis.region", emulators.REGION)
        .option("kinesis.streamName", auto)
        .option("kinesis.startingPosition", "TRIM_HORIZON")
        .load()
        .selectExpr("CAST(data AS STRING) AS data", "partitionKey")
        .collect()
    )
    assert Counter((r["data"], r["partitionKey"]) for r in batch) == expected
    streamed = read_until(
        spark, proxy.url, auto, str(tmp_path / "chk"), len(written), startingPosition="TRIM_HORIZON"
    ).rows()
    assert Counter((r.data, r.partition_key) for r in streamed) == expected


def _in_first_half(key: str, end_of_first: int) -> bool:
    return int.from_bytes(hashlib.md5(key.encode()).digest(), "big") <= end_of_first


def test_an_aggregate_placed_the_auto_way_is_read_whole_on_an_auto_stream_and_its_drops_counted_elsewhere(
    spark: Any, kinesis: Any, service: tuple[CountingProxy, TlsFront], stream_name: str, tmp_path: Path
) -> None:
    """The issue's case: 100 user records with keys over both shards of a 2-shard stream, aggregated with the
    reference aggregator and put with ExplicitHashKey 0 (on shard 0), as the AUTO service may place an aggregate."""
    proxy, _ = service
    auto, upk = f"{stream_name}-auto", f"{stream_name}-upk"
    users = [(f"user-{i}", f"v{i}") for i in range(100)]
    for stream in (auto, upk):
        create_stream(kinesis, stream, 2)
        # Straight to kinesis-local: the proxy would re-place it (it gives every put a random hash key).
        [put] = put_aggregated(kinesis, stream, users, records_per_aggregate=100, explicit_hash_key="0")
        assert put.user_records == 100 and put.shard_id == "shardId-000000000000"
    proxy.distribute_automatically(auto)
    end_of_first = int(list_shards(kinesis, upk)[0]["HashKeyRange"]["EndingHashKey"])
    in_range = sorted(d for k, d in users if _in_first_half(k, end_of_first))
    assert 0 < len(in_range) < 100

    def batch_read(stream: str) -> list[str]:
        df = (
            spark.read.format("aws-kinesis")
            .option("kinesis.endpointUrl", proxy.url)
            .option("kinesis.region", emulators.REGION)
            .option("kinesis.streamName", stream)
            .option("kinesis.startingPosition", "TRIM_HORIZON")
            .load()
        )
        return sorted(bytes(r["data"]).decode() for r in df.select("data").collect())

    with connector_log(spark, tmp_path / "connector.log") as log:
        assert batch_read(auto) == sorted(d for _, d in users)
        assert batch_read(upk) == in_range
        # A micro-batch query on each: its progress reports what it dropped, and its task warns once with the count.
        dropped: dict[str, int] = {}
        for stream in (auto, upk):
            query = (
                reader(spark, proxy.url, stream, startingPosition="TRIM_HORIZON")
                .writeStream.format("noop")
                .option("checkpointLocation", str(tmp_path / f"chk-{stream}"))
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination(120)
            assert query.exception() is None
            read = [p for p in query.recentProgress if p["numInputRows"]]
            dropped[stream] = sum(int(p["sources"][0]["metrics"]["droppedOutsideRange"]) for p in read)
            assert sum(p["numInputRows"] for p in read) == (100 if stream == auto else len(in_range))
        logged = log()
    assert dropped == {auto: 0, upk: 100 - len(in_range)}
    warning = f"Dropped {100 - len(in_range)} KPL sub-record(s) of shard shardId-000000000000 of stream {upk}"
    assert logged.count(warning) == 2  # the batch read's task and the query's task, once each
    assert f"of shard shardId-000000000000 of stream {auto} " not in logged


def test_the_proxy_reports_auto_only_for_the_streams_named_and_strips_only_invented_keys(
    kinesis_local: str, kinesis: Any, service: tuple[CountingProxy, TlsFront], stream_name: str
) -> None:
    """The test service itself, over JSON (boto3) and CBOR (the Java SDK's encoding)."""
    from harness import cbor

    proxy, _ = service
    auto, other = f"{stream_name}-auto", f"{stream_name}-other"
    create_stream(kinesis, auto, 2)
    create_stream(kinesis, other, 1)
    proxy.distribute_automatically(auto)
    through = emulators.kinesis_client(proxy.url)
    summary = through.describe_stream_summary(StreamName=auto)["StreamDescriptionSummary"]
    assert summary["RecordDistributionStrategy"] == "AUTO"
    assert (
        "RecordDistributionStrategy"
        not in through.describe_stream_summary(StreamName=other)["StreamDescriptionSummary"]
    )
    status, _, body = cbor.call(proxy.url, "DescribeStreamSummary", {"StreamName": auto})
    assert status == 200 and body["StreamDescriptionSummary"]["RecordDistributionStrategy"] == "AUTO"
    # Same key, random placement: 40 records with one key land on both shards.
    through.put_records(
        StreamName=auto, Records=[{"Data": f"same-{i}".encode(), "PartitionKey": "k"} for i in range(40)]
    )
    through.put_records(StreamName=auto, Records=[{"Data": b"keyless"}, {"Data": b"keyed", "PartitionKey": "mine"}])
    assert len({shard for shard, d in stored(kinesis, auto) if d.startswith(b"same-")}) == 2
    seen, by_sequence = {}, {}
    for shard in list_shards(kinesis, auto):
        for record in read_shard(through, auto, shard["ShardId"])[0]:
            seen[bytes(record["Data"])] = record.get("PartitionKey")
            by_sequence[record["SequenceNumber"]] = record.get("PartitionKey")
        iterator = cbor.call(
            proxy.url,
            "GetShardIterator",
            {"StreamName": auto, "ShardId": shard["ShardId"], "ShardIteratorType": "TRIM_HORIZON"},
        )[2]["ShardIterator"]
        for record in cbor.call(proxy.url, "GetRecords", {"ShardIterator": iterator})[2]["Records"]:
            assert record.get("PartitionKey") == by_sequence[record["SequenceNumber"]]
    assert seen[b"keyless"] is None and seen[b"keyed"] == "mine" and seen[b"same-0"] == "k"
    assert None in by_sequence.values()
    # kinesis-local itself holds the invented key.
    for shard in list_shards(kinesis, auto):
        assert all(r["PartitionKey"] for r in read_shard(kinesis, auto, shard["ShardId"])[0])


def test_a_streaming_write_follows_a_stream_switched_to_auto_from_its_next_batch(
    spark: Any,
    kinesis: Any,
    kinesis_local: str,
    service: tuple[CountingProxy, TlsFront],
    stream_name: str,
    tmp_path: Path,
) -> None:
    """A query copies stream ``source`` to stream ``target``; ``target`` is switched to AUTO between two batches (what
    UpdateStreamRecordDistributionStrategy does): the batches after the switch write no aggregate."""
    from harness.kinesis import put_plain
    from streaming import stop, wait_for

    proxy, front = service
    source, target = f"{stream_name}-src", f"{stream_name}-dst"
    create_stream(kinesis, source, 1)
    create_stream(kinesis, target, 1)

    def user_records() -> list[tuple[bool, str]]:
        found = []
        for _, data in stored(kinesis, target):
            if kpl.is_aggregated(data):
                found.extend((True, u.data.decode()) for u in kpl.decode(data))
            else:
                found.append((False, data.decode()))
        return found

    with connector_log(spark, tmp_path / "connector.log") as log:
        query = (
            reader(spark, kinesis_local, source, startingPosition="TRIM_HORIZON")
            .selectExpr("partitionKey", "data")
            .writeStream.format("aws-kinesis")
            .options(**sink_options(front, target))
            .option("checkpointLocation", str(tmp_path / "chk"))
            .trigger(processingTime="300 milliseconds")
            .start()
        )
        try:
            put_plain(kinesis, source, [(f"k-{i % 10}", f"before-{i}") for i in range(100)])
            wait_for(lambda: len(user_records()) >= 100, query, what="the rows before the switch")
            proxy.distribute_automatically(target)
            # A batch that started before the switch may still be reading (its tasks read to the tip), so the rows
            # after the switch are put once no trigger is running: the batch that reads them starts after the switch,
            # and so do its writers. (An idle query runs no batch at all, kinesis.avoidEmptyBatches: counting batches
            # after the switch would wait for ever.)
            wait_for(lambda: not query.status["isTriggerActive"], query, what="no trigger running after the switch")
            put_plain(kinesis, source, [(f"k-{i % 10}", f"after-{i}") for i in range(100)])
            wait_for(lambda: len(user_records()) >= 200, query, what="the rows after the switch")
        finally:
            stop(query)
        logged = log()
    records = user_records()
    assert sorted(d for _, d in records) == sorted(
        [f"before-{i}" for i in range(100)] + [f"after-{i}" for i in range(100)]
    )
    assert not any(aggregated for aggregated, d in records if d.startswith("after-"))
    assert f"Stream {target} places records by partition key" in logged
    assert (
        f"Stream {target} has service-managed record distribution (RecordDistributionStrategy AUTO): the sink does "
        "not aggregate rows (kinesis.sink.aggregationEnabled=true is ignored for it), and rows without a partition key "
        "are written without one (the stream was switched since the last write)"
    ) in logged
