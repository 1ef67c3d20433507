"""Records up to 10 MiB (a stream's ``MaxRecordSizeInKiB``), end to end on kinesis-local.

One stream created with ``MaxRecordSizeInKiB=10240`` is shared by the module: the sink writes a
9.5 MiB row into it through the real KPL, a row over the limit fails at once in the data writer,
and the one record is read back, byte for byte (length and SHA-256 compared in Spark), by every
reader: polling and enhanced fan-out micro-batches, a batch read, and real-time mode. Each read
also asks for ``kinesis.includeSubSequenceNumber``, so the option is checked on every reader (0
for a record that was not aggregated).

kinesis-local is slow with records this size (about 11-15 s to take a 9.5 MiB PutRecord and 6 s
to return it from GetRecords as JSON, measured on a 2-core machine; over 30 s as CBOR, the AWS
SDK's default, which then times out), so the module writes the record once, the sink's request
timeout and the readers' socket timeout are raised, and the readers run with CBOR off. Memory is
measured separately (see docs/guide/records.md and benchmarks/large_record_heap.py), not here.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyspark
import pytest
from harness import emulators
from harness.kinesis import unique_stream_name, wait_for_status
from streaming import reader, stop, wait_for

pytestmark = pytest.mark.emulator

HAS_REAL_TIME = tuple(int(p) for p in pyspark.__version__.split(".")[:2]) >= (4, 1)

LIMIT_KIB = 10240
# A GetRecords answer of 9.5 MiB takes kinesis-local several seconds to send; the default is 30 s.
SOCKET_TIMEOUT = "120000"
# 9.5 MiB of data: 1,245,184 eight-character hex counters.
COUNTERS = (9 * 1024 * 1024 + 512 * 1024) // 8
KEY = "large-1"
# The same bytes, built in the JVM (a 9.5 MiB row does not cross the Python bridge).
DATA_SQL = f"CAST(concat_ws('', transform(sequence(0, {COUNTERS - 1}), i -> lpad(hex(i), 8, '0'))) AS BINARY)"


def expected_data() -> bytes:
    return "".join(f"{i:08X}" for i in range(COUNTERS)).encode()


class LargeStream:
    """The module's kinesis-local, its 10 MiB stream, and what the write learnt."""

    def __init__(self, emulator: emulators.Emulator) -> None:
        self.plain = emulator.endpoint
        self.tls = emulator.tls_endpoint
        self.client = emulators.kinesis_client(self.plain, timeout=120)
        self.name = unique_stream_name("large")
        self.client.create_stream(StreamName=self.name, ShardCount=1, MaxRecordSizeInKiB=LIMIT_KIB)
        self.summary = wait_for_status(self.client, self.name)
        self.written = False
        self.data = expected_data()
        self.sha = hashlib.sha256(self.data).hexdigest()

    def sink_options(self, **extra: str) -> dict[str, str]:
        options = {
            "kinesis.endpointUrl": self.tls,
            "kinesis.region": emulators.REGION,
            "kinesis.streamName": self.name,
            "kinesis.sink.verifyCertificate": "false",
            # kinesis-local takes ~15 s to accept a 9.5 MiB PutRecords; AWS takes well under the 6 s default.
            "kinesis.sink.requestTimeoutMs": "90000",
            "kinesis.sink.recordTtl": "180000",
            "kinesis.sink.recordMaxBufferedTimeMs": "50",
        }
        options.update(extra)
        return options


@pytest.fixture(scope="module")
def large() -> Iterator[LargeStream]:
    emulator = emulators.start("kinesis-local")
    try:
        yield LargeStream(emulator)
    finally:
        # node ignores SIGTERM while idle here: do not wait the default 10 s before the SIGKILL.
        emulator.stop(timeout=1.0)


@pytest.fixture
def written(spark: Any, large: LargeStream) -> LargeStream:
    """The stream with the one 9.5 MiB row written by the sink (once per module)."""
    if not large.written:
        df = spark.range(1).selectExpr(f"'{KEY}' AS partitionKey", f"{DATA_SQL} AS data")
        started = time.monotonic()
        df.write.format("aws-kinesis").mode("append").options(**large.sink_options()).save()
        print(f"sink wrote a {len(large.data)}-byte row in {time.monotonic() - started:.1f} s")
        large.written = True
    return large


CHECKED = ["partitionKey", "length(data) AS size", "sha2(data, 256) AS sha", "subSequenceNumber AS sub"]


def check_rows(rows: list[Any], large: LargeStream, reader_name: str) -> None:
    got = [(r["partitionKey"], r["size"], r["sha"], r["sub"]) for r in rows]
    assert got == [(KEY, len(large.data), large.sha, 0)], f"{reader_name} read {got}"


def test_the_stream_reports_its_10_mib_limit(large: LargeStream) -> None:
    # What the sink's driver check reads (DescribeStreamSummary.MaxRecordSizeInKiB).
    assert large.summary["MaxRecordSizeInKiB"] == LIMIT_KIB


def read_by_micro_batch(spark: Any, written: LargeStream, tmp_path: Path, what: str, **options: str) -> None:
    """A micro-batch query with ``options`` reads the large record; its rows are checked."""
    rows: list[Any] = []

    def collect(df: Any, _batch_id: int) -> None:
        rows.extend(df.selectExpr(*CHECKED).collect())

    df = reader(
        spark,
        written.plain,
        written.name,
        startingPosition="TRIM_HORIZON",
        includeSubSequenceNumber="true",
        clientSocketTimeoutMs=SOCKET_TIMEOUT,
        **options,
    )
    started = time.monotonic()
    query = (
        df.writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(tmp_path / "chk"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        wait_for(lambda: len(rows) >= 1, query, what="the large record")
    finally:
        stop(query)
    print(f"{what} micro-batch read it in {time.monotonic() - started:.1f} s")
    check_rows(rows, written, what)


def test_polling_micro_batch_reads_the_9_5_mib_record_exactly(
    spark: Any, written: LargeStream, tmp_path: Path, jvm_cbor_disabled: None
) -> None:
    read_by_micro_batch(spark, written, tmp_path, "polling")


def test_fan_out_micro_batch_reads_the_9_5_mib_record_exactly(
    spark: Any, written: LargeStream, tmp_path: Path, jvm_cbor_disabled: None
) -> None:
    read_by_micro_batch(spark, written, tmp_path, "fan-out", consumerType="SubscribeToShard", consumerName="large-efo")


def test_batch_read_reads_the_9_5_mib_record_exactly(spark: Any, written: LargeStream, jvm_cbor_disabled: None) -> None:
    started = time.monotonic()
    rows = (
        spark.read.format("aws-kinesis")
        .option("kinesis.endpointUrl", written.plain)
        .option("kinesis.region", emulators.REGION)
        .option("kinesis.streamName", written.name)
        .option("kinesis.includeSubSequenceNumber", "true")
        .option("kinesis.clientSocketTimeoutMs", SOCKET_TIMEOUT)
        .load()
        .selectExpr(*CHECKED)
        .collect()
    )
    print(f"batch read it in {time.monotonic() - started:.1f} s")
    check_rows(rows, written, "batch")


@pytest.mark.skipif(not HAS_REAL_TIME, reason="real-time mode needs Spark 4.1 or newer")
def test_real_time_reads_the_9_5_mib_record_exactly(
    spark: Any, written: LargeStream, tmp_path: Path, jvm_cbor_disabled: None
) -> None:
    from spark_kinesis.realtime import real_time_trigger
    from test_real_time import file_writer, rows_written

    out = tmp_path / "out"
    out.mkdir()
    df = reader(
        spark,
        written.plain,
        written.name,
        startingPosition="TRIM_HORIZON",
        includeSubSequenceNumber="true",
        clientSocketTimeoutMs=SOCKET_TIMEOUT,
    ).selectExpr("concat_ws('|', partitionKey, length(data), sha2(data, 256), subSequenceNumber) AS d")
    started = time.monotonic()
    query = (
        real_time_trigger(df.writeStream.foreach(file_writer(str(out))), "5 seconds")
        .option("checkpointLocation", str(tmp_path / "chk"))
        .start()
    )
    try:
        wait_for(lambda: len(rows_written(out)) >= 1, query, what="the large record")
    finally:
        query.stop()
    print(f"real-time read it in {time.monotonic() - started:.1f} s")
    assert [d for _, d in rows_written(out)] == [f"{KEY}|{len(written.data)}|{written.sha}|0"]


def test_a_row_over_the_limit_fails_at_once_naming_limit_size_and_key(spark: Any, written: LargeStream) -> None:
    over = 10 * 1024 * 1024 - len("too-big-7") + 1  # data + key = limit + 1
    df = spark.range(1).selectExpr("'too-big-7' AS partitionKey", f"CAST(repeat('x', {over}) AS BINARY) AS data")
    started = time.monotonic()
    with pytest.raises(Exception) as error:
        # The write's options, so its producer is the one the 9.5 MiB row warmed up; their record TTL is 180 s, after
        # which a row that reached the KPL's retry loop would fail.
        df.write.format("aws-kinesis").mode("append").options(**written.sink_options()).save()
    elapsed = time.monotonic() - started
    message = str(error.value)
    assert re.search(r"Row 0 of partition \d+ cannot be written to Kinesis", message), message
    assert f"the record is {10 * 1024 * 1024 + 1} bytes ({over} bytes of data and a 9-byte partition key)" in message
    assert f"over the stream's limit of {10 * 1024 * 1024} bytes (MaxRecordSizeInKiB {LIMIT_KIB})" in message
    assert "partition key 'too-big-7'" in message
    # Half the record TTL: failing per row in the KPL's retry loop would take all of it, however fast the machine.
    assert elapsed < 90, f"the write took {elapsed:.1f} s to fail"
    print(f"a row over the limit failed in {elapsed:.1f} s")


def test_java_producer_writes_the_9_5_mib_record_whole(spark: Any, large: LargeStream, jvm_cbor_disabled: None) -> None:
    """kinesis.sink.producer=JAVA: the same 9.5 MiB row, to a 10 MiB stream of its own, lands whole (too large to
    aggregate, it goes alone, in a PutRecords of up to 10 MiB). CBOR is off, as for the readers (see above)."""
    name = unique_stream_name("large-java")
    large.client.create_stream(StreamName=name, ShardCount=1, MaxRecordSizeInKiB=LIMIT_KIB)
    wait_for_status(large.client, name)
    df = spark.range(1).selectExpr(f"'{KEY}' AS partitionKey", f"{DATA_SQL} AS data")
    options = {**large.sink_options(), "kinesis.streamName": name, "kinesis.sink.producer": "JAVA"}
    started = time.monotonic()
    df.write.format("aws-kinesis").mode("append").options(**options).save()
    print(f"the JAVA producer wrote a {len(large.data)}-byte row in {time.monotonic() - started:.1f} s")
    shard = large.client.list_shards(StreamName=name)["Shards"][0]["ShardId"]
    iterator = large.client.get_shard_iterator(StreamName=name, ShardId=shard, ShardIteratorType="TRIM_HORIZON")[
        "ShardIterator"
    ]
    records = large.client.get_records(ShardIterator=iterator)["Records"]
    assert [(r["PartitionKey"], len(r["Data"])) for r in records] == [(KEY, len(large.data))]
    assert hashlib.sha256(bytes(records[0]["Data"])).hexdigest() == large.sha
