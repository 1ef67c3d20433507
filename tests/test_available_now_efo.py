"""Trigger.AvailableNow over enhanced fan-out (SubscribeToShard), end to end against kinesis-local.

The run pins each open shard's end as a polling run does, with a LATEST shard iterator taken when it starts, and
confirms it with GetRecords calls on the polling API (see ``PolledChecks`` in the Scala code): so its ends are
checked here against a producer that never stops. kinesis-local pushes an event about once a second, so each batch
of a fan-out run lasts about a second there.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from harness.kinesis import create_stream, list_shards, put_plain, read_shard
from streaming import BatchCollector, reader

pytestmark = pytest.mark.emulator

EFO = {"consumerType": "SubscribeToShard", "consumerName": "available-now"}


@dataclass
class Producer:
    """Puts 10 records into each stream every 50 ms until stopped; keeps when each put began and ended, and what it
    wrote."""

    kinesis: Any
    streams: list[str]
    puts: list[tuple[float, float, list[str]]] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        n = 0
        while not self.stopping.is_set():
            for stream in self.streams:
                batch = [(f"key-{(n + i) % 16}", f"{stream}-live-{n + i}") for i in range(10)]
                began = time.monotonic()
                put_plain(self.kinesis, stream, batch)
                self.puts.append((began, time.monotonic(), [d for _, d in batch]))
            n += 10
            time.sleep(0.05)

    def done_before(self, moment: float) -> set[str]:
        return {d for _, ended, data in self.puts if ended < moment for d in data}

    def begun_after(self, moment: float) -> set[str]:
        return {d for began, _, data in self.puts if began > moment for d in data}


@pytest.fixture
def producer(kinesis: Any, stream_name: str) -> Iterator[Producer]:
    """A producer the test starts (``threading.Thread(target=producer.run)``); stopped when the test ends."""
    p = Producer(kinesis, [stream_name])
    yield p
    p.stopping.set()


@dataclass
class TimedCollector(BatchCollector):
    """A collector that also notes when its first batch began (after the run pinned its ends)."""

    first_batch_at: float | None = None

    def __call__(self, df: Any, batch_id: int) -> None:
        if self.first_batch_at is None:
            self.first_batch_at = time.monotonic()
        super().__call__(df, batch_id)


def _run(
    spark: Any, endpoint: str, stream: str, checkpoint: str, **options: str
) -> tuple[TimedCollector, float, float]:
    """One AvailableNow run to its end: its collector, and when it was started and ended."""
    collector = TimedCollector()
    started = time.monotonic()
    query = (
        reader(spark, endpoint, stream, **options)
        .writeStream.foreachBatch(collector)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120), "the AvailableNow run did not end by itself"
    assert query.exception() is None, query.exception()
    return collector, started, time.monotonic()


Shard = tuple[str, str]  # stream, shard id


def _in_shard_order(kinesis: Any, *streams: str) -> dict[Shard, list[str]]:
    """Every record of every shard of ``streams``, as data, in sequence-number order."""
    return {
        (stream, s["ShardId"]): [
            r["Data"].decode("utf-8") for r in read_shard(kinesis, stream, s["ShardId"], max_calls=200)[0]
        ]
        for stream in streams
        for s in list_shards(kinesis, stream)
    }


def _assert_exact_run(
    collector: TimedCollector,
    shards: dict[Shard, list[str]],
    skip: dict[Shard, int],
    producer: Producer,
    started: float,
) -> dict[Shard, int]:
    """Per shard the run read exactly the records after the previous run's (``skip``), up to some record and none
    after it; everything put before the run started, and nothing put after its first batch began. Returns how far
    each shard is read."""
    rows = collector.rows()
    assert collector.first_batch_at is not None, "the run had a batch"
    assert not [d for d, n in Counter(r.data for r in rows).items() if n > 1], "a record read twice"
    read: dict[Shard, list[str]] = {}
    for row in sorted(rows, key=lambda r: (r.stream_name, r.shard_id, int(r.sequence_number))):
        read.setdefault((row.stream_name, row.shard_id), []).append(row.data)
    reached = {}
    for shard, records in shards.items():
        got = read.get(shard, [])
        assert got == records[skip.get(shard, 0) : skip.get(shard, 0) + len(got)], f"{shard}: not the next records"
        reached[shard] = skip.get(shard, 0) + len(got)
    data = {r.data for r in rows}
    missing = producer.done_before(started) - data - {d for s, rs in shards.items() for d in rs[: skip.get(s, 0)]}
    assert not missing, f"{len(missing)} records put before the run started were not read"
    late = producer.begun_after(collector.first_batch_at) & data
    assert not late, f"{len(late)} records put after the run pinned its ends were read"
    return reached


def test_available_now_over_fan_out_is_exact_under_a_live_producer_and_a_restart_reads_what_came_between(
    spark: Any,
    kinesis_local: str,
    kinesis: Any,
    stream_name: str,
    tmp_path: Any,
    producer: Producer,
    counting_proxy: Any,
) -> None:
    create_stream(kinesis, stream_name, 2)
    put_plain(kinesis, stream_name, [(f"key-{i % 16}", f"before-{i}") for i in range(200)])
    thread = threading.Thread(target=producer.run, daemon=True)
    thread.start()
    time.sleep(0.5)
    proxy = counting_proxy(kinesis_local)
    checkpoint = str(tmp_path / "chk")
    options = {"startingPosition": "TRIM_HORIZON", "maxFetchRecordsPerShard": "60", **EFO}
    first, started1, ended1 = _run(spark, proxy.url, stream_name, checkpoint, **options)
    calls1 = proxy.counts()
    proxy.reset()
    time.sleep(0.5)
    second, started2, ended2 = _run(spark, proxy.url, stream_name, checkpoint, **options)
    calls2 = proxy.counts()
    producer.stopping.set()
    thread.join(30)
    shards = _in_shard_order(kinesis, stream_name)
    assert len(shards) == 2
    reached = _assert_exact_run(first, shards, {}, producer, started1)
    assert {f"before-{i}" for i in range(200)} <= set(first.data())
    assert len(first.batches) >= 2, "the record limit split the run: later batches took over live subscriptions"
    _assert_exact_run(second, shards, reached, producer, started2)
    assert second.rows(), "the second run read what came between"
    for calls in (calls1, calls2):
        assert calls.get("SubscribeToShard", 0) >= 2 and calls.get("GetShardIterator", 0) >= 2, calls
    print(
        f"run 1: {len(first.rows())} records, {len(first.batches)} batches, {ended1 - started1:.1f} s, {calls1}; "
        f"run 2: {len(second.rows())} records, {len(second.batches)} batches, {ended2 - started2:.1f} s, {calls2}"
    )


def test_available_now_over_fan_out_of_two_streams_is_exact_under_a_live_producer(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Any, producer: Producer
) -> None:
    """One consumer per stream; each stream's shards end at their own pins."""
    streams = [f"{stream_name}-a", f"{stream_name}-b"]
    for stream in streams:
        create_stream(kinesis, stream, 1)
        put_plain(kinesis, stream, [f"{stream}-before-{i}" for i in range(50)])
    producer.streams = streams
    thread = threading.Thread(target=producer.run, daemon=True)
    thread.start()
    time.sleep(0.5)
    collector, started, _ = _run(
        spark, kinesis_local, ",".join(streams), str(tmp_path / "chk"), startingPosition="TRIM_HORIZON", **EFO
    )
    producer.stopping.set()
    thread.join(30)
    _assert_exact_run(collector, _in_shard_order(kinesis, *streams), {}, producer, started)
    assert {r.stream_name for r in collector.rows()} == set(streams)
    assert {f"{s}-before-{i}" for s in streams for i in range(50)} <= set(collector.data())
