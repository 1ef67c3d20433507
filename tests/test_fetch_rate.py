"""kinesis.maxFetchRate against kinesis-local: a backlog is read no faster than the rate (bytes over time).

Each check is a lower bound on the time a read takes, which a loaded machine only makes easier to meet. That the
pacing check can fail, that an unpaced reader outruns the rate, is shown without timing by FetchRateSuite (a fake
clock): these tests no longer time an unlimited read as a control, since its speed is the machine's.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from harness.kinesis import create_stream, put_plain
from streaming import batch_read, reader

pytestmark = pytest.mark.emulator

RECORD_BYTES = 5000
RECORDS = 400  # 2 MB in one shard
PER_CALL = 40  # 200 KB per GetRecords call


def _read_all(spark: Any, endpoint: str, stream: str, checkpoint: str, **options: str) -> tuple[int, float]:
    """Read the stream with AvailableNow into the noop sink; the bytes read and the seconds the batches ran."""
    query = (
        reader(
            spark,
            endpoint,
            stream,
            startingPosition="TRIM_HORIZON",
            **{"getRecords.numberOfRecordsPerFetch": str(PER_CALL), "getRecords.fetchIntervalMs": "0"},
            **options,
        )
        .writeStream.format("noop")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(180)
    assert query.exception() is None
    data = [p for p in query.recentProgress if p["numInputRows"] > 0]
    read = sum(int(p["sources"][0]["metrics"]["bytesRead"]) for p in data)
    seconds = sum(p["durationMs"]["addBatch"] for p in data) / 1000.0
    return read, seconds


def test_a_backlog_is_read_under_the_rate(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Any
) -> None:
    create_stream(kinesis, stream_name, 1)
    for start in range(0, RECORDS, 100):
        put_plain(kinesis, stream_name, [f"{i:05d}".ljust(RECORD_BYTES, "x") for i in range(start, start + 100)])
    rate_mb = 0.25
    read, seconds = _read_all(spark, kinesis_local, stream_name, str(tmp_path / "limited"), maxFetchRate=str(rate_mb))
    assert read == RECORDS * RECORD_BYTES
    # The first call is not waited for: the rate holds for what follows it.
    first_call = PER_CALL * RECORD_BYTES
    measured = (read - first_call) / seconds / 1e6
    assert measured <= rate_mb, f"{measured:.3f} MB/s read with maxFetchRate={rate_mb}"
    print(
        f"maxFetchRate={rate_mb}: {read} bytes in {seconds:.2f}s of batches, {measured:.3f} MB/s after the first call"
    )


def _small_batches(spark: Any, endpoint: str, stream: str, checkpoint: str, **options: str) -> tuple[int, float]:
    """Read the stream with AvailableNow in batches of 10 records; the bytes read and the wall seconds from the
    first batch's start to the last batch's end."""
    query = (
        reader(spark, endpoint, stream, startingPosition="TRIM_HORIZON", maxRecordsPerTrigger="10", **options)
        .writeStream.format("noop")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    began = time.monotonic()
    assert query.awaitTermination(180)
    ended = time.monotonic()
    assert query.exception() is None
    data = [p for p in query.recentProgress if p["numInputRows"] > 0]
    read = sum(int(p["sources"][0]["metrics"]["bytesRead"]) for p in data)
    assert len(data) >= 19, f"{len(data)} batches"
    return read, ended - began


def test_many_small_batches_keep_to_the_rate(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Any
) -> None:
    """Each batch reads 10 records (one GetRecords call per batch): only the pacing carried from one batch's task
    to the next keeps them under the rate."""
    create_stream(kinesis, stream_name, 1)
    put_plain(kinesis, stream_name, [f"{i:05d}".ljust(1000, "x") for i in range(200)])
    rate_mb = 0.01  # 10 000 bytes per batch: at least 1 s between two batches' calls
    read, seconds = _small_batches(
        spark, kinesis_local, stream_name, str(tmp_path / "paced"), maxFetchRate=str(rate_mb)
    )
    assert read == 200 * 1000
    # The last batch's bytes need not be waited for before the run ends.
    measured = (read - 10 * 1000) / seconds / 1e6
    print(f"small batches, maxFetchRate={rate_mb}: {read} bytes in {seconds:.2f}s, {measured:.4f} MB/s")
    assert measured <= rate_mb, f"{measured:.4f} MB/s read in 10-record batches with maxFetchRate={rate_mb}"


def _batch_read_all(spark: Any, endpoint: str, stream: str, **options: str) -> tuple[int, float]:
    """A batch read (spark.read) of the whole stream; the bytes it returned and the seconds it took."""
    began = time.monotonic()
    df = batch_read(
        spark,
        endpoint,
        stream,
        **{"getRecords.numberOfRecordsPerFetch": str(PER_CALL), "getRecords.fetchIntervalMs": "0"},
        **options,
    )
    read = df.selectExpr("coalesce(sum(length(data)), 0) AS n").collect()[0]["n"]
    return int(read), time.monotonic() - began


def test_a_batch_read_keeps_to_the_rate(spark: Any, kinesis_local: str, kinesis: Any, stream_name: str) -> None:
    create_stream(kinesis, stream_name, 1)
    for start in range(0, RECORDS, 100):
        put_plain(kinesis, stream_name, [f"{i:05d}".ljust(RECORD_BYTES, "x") for i in range(start, start + 100)])
    rate_mb = 0.25
    read, seconds = _batch_read_all(spark, kinesis_local, stream_name, maxFetchRate=str(rate_mb))
    assert read == RECORDS * RECORD_BYTES
    first_call = PER_CALL * RECORD_BYTES
    measured = (read - first_call) / seconds / 1e6
    print(f"batch read, maxFetchRate={rate_mb}: {read} bytes in {seconds:.2f}s, {measured:.3f} MB/s")
    assert measured <= rate_mb, f"{measured:.3f} MB/s read by a batch read with maxFetchRate={rate_mb}"
