"""Idle streams on kinesis-local: how many Spark batches an idle query runs (issues 28 and 39).

At the defaults (``kinesis.avoidEmptyBatches`` on, as in the awslabs connector) an idle query of either reader runs
no batch at all until a record arrives, which the next batch then reads once; where Kinesis refuses the driver's idle
probe (an enhanced fan-out role without GetRecords), the query falls back to paced idle batches and goes on. With the
option off, an idle enhanced fan-out query backs off between empty batches as an idle polling query does. A stateful
query's own no-data batches (a processing-time timeout) still run while the stream is idle. Each query here uses
Spark's default trigger (a batch as soon as the previous one ends), so only the connector spaces batches.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from harness.kinesis import create_stream, put_plain
from streaming import BatchCollector, reader, stop, wait_for

pytestmark = pytest.mark.emulator

EFO = {"consumerType": "SubscribeToShard"}


def _last_batch(checkpoint: Path) -> int:
    """The highest batch id the query has planned (its checkpoint's offset log)."""
    return max((int(p.name) for p in (checkpoint / "offsets").glob("*") if p.name.isdigit()), default=-1)


def test_with_avoid_empty_batches_off_an_idle_fan_out_query_runs_no_more_batches_than_an_idle_polling_query(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Path
) -> None:
    """Both readers on the same idle 4-shard stream at once, ``avoidEmptyBatches=false``, over the same 8 s window."""
    create_stream(kinesis, stream_name, 4)
    put_plain(kinesis, stream_name, [("k", "first")])
    queries: dict[str, tuple[Any, Path]] = {}
    off = {"avoidEmptyBatches": "false"}
    try:
        for label, options in (("polling", off), ("fan-out", {**off, **EFO, "consumerName": "idle-batches"})):
            checkpoint = tmp_path / label
            df = reader(spark, kinesis_local, stream_name, startingPosition="TRIM_HORIZON", **options)
            queries[label] = (
                df.writeStream.format("noop").option("checkpointLocation", str(checkpoint)).start(),
                checkpoint,
            )
        # Warm: each has read the record and settled into its idle waits (400, 800, then 1000 ms).
        for query, checkpoint in queries.values():
            wait_for(lambda c=checkpoint: _last_batch(c) >= 3, query, what="three batches")
        time.sleep(2)
        before = {label: _last_batch(c) for label, (_, c) in queries.items()}
        window_from = time.monotonic()
        time.sleep(8)
        ran = {label: _last_batch(c) - before[label] for label, (_, c) in queries.items()}
        window = time.monotonic() - window_from
        # Idle, not stopped: each goes on planning batches (however slowly a loaded machine lets it).
        for label, (query, checkpoint) in queries.items():
            wait_for(
                lambda c=checkpoint, b=before[label]: _last_batch(c) >= b + 3,
                query,
                what=f"three more idle batches of the {label} query",
            )
    finally:
        for query, _ in queries.values():
            stop(query)
    print(f"\nidle batches in {window:.1f} s: {ran}")
    # At most one batch per idleProbeIntervalMs (1 s) once settled, plus one whose planning ends at each edge of the
    # window. Planning a batch on every trigger, as fan-out did before, runs about 9 a second. A loaded machine runs
    # fewer, never more, so the bound holds at any speed.
    for label, count in ran.items():
        assert count <= window + 2, (label, ran, window)


def _start(spark: Any, endpoint: str, stream: str, checkpoint: Path, collector: Any, **options: str) -> Any:
    return (
        reader(spark, endpoint, stream, startingPosition="TRIM_HORIZON", **options)
        .writeStream.foreachBatch(collector)
        .option("checkpointLocation", str(checkpoint))
        .start()
    )


def test_at_the_defaults_an_idle_query_of_either_reader_runs_no_batch_until_a_record_arrives(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Path
) -> None:
    """Both readers on one 2-shard stream: no batch during 6 idle seconds, then the record put is read exactly once.
    (The awslabs key's mapping to the option, and the default: IdleProbeSuite.)"""
    create_stream(kinesis, stream_name, 2)
    put_plain(kinesis, stream_name, [("k", "first")])
    readers = {"polling": {}, "fan-out": {"consumerName": "quiet", **EFO}}
    collectors = {label: BatchCollector() for label in readers}
    queries = {}
    try:
        for label, options in readers.items():
            queries[label] = _start(spark, kinesis_local, stream_name, tmp_path / label, collectors[label], **options)
        for label, query in queries.items():
            collector = collectors[label]
            wait_for(lambda c=collector: c.data() == ["first"], query, what=f"{label}: the first record")
            # The batch after the one that read it finds nothing: from then on the driver only probes.
            wait_for(lambda c=collector: any(not rows for _, rows in c.attempts), query, what="an empty batch")
        time.sleep(1)
        idle_from = {label: _last_batch(tmp_path / label) for label in readers}
        time.sleep(6)
        idle_batches = {label: _last_batch(tmp_path / label) - idle_from[label] for label in readers}
        put_plain(kinesis, stream_name, [("k", "later")])
        for label, query in queries.items():
            wait_for(lambda c=collectors[label]: len(c.data()) >= 2, query, what=f"{label}: a later record")
        time.sleep(2)
    finally:
        for query in queries.values():
            stop(query)
    assert idle_batches == {"polling": 0, "fan-out": 0}
    for label, collector in collectors.items():
        assert sorted(collector.data()) == ["first", "later"], label
        # After the batch that read it, one empty batch finds the shards idle again; then the driver only probes.
        batches = [(batch, len(rows)) for batch, rows in collector.attempts]
        later = next(i for i, (_, rows) in enumerate(collector.attempts) if any(r.data == "later" for r in rows))
        assert len(batches) - later - 1 <= 1, (label, batches)


def test_a_fan_out_query_whose_idle_probe_is_denied_runs_paced_idle_batches_and_reads_every_record(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Path, counting_proxy: Any
) -> None:
    """Kinesis answers the driver's GetShardIterator and GetRecords with AccessDeniedException, as it does for an
    enhanced fan-out role that grants neither: the query neither fails nor stalls, and stops probing."""
    create_stream(kinesis, stream_name, 2)
    put_plain(kinesis, stream_name, [("k", "first")])
    proxy = counting_proxy(kinesis_local)
    for operation in ("GetShardIterator", "GetRecords"):
        proxy.inject(operation, "denied")
    collector = BatchCollector()
    checkpoint = tmp_path / "chk"
    query = _start(spark, proxy.url, stream_name, checkpoint, collector, consumerName="denied", **EFO)
    try:
        wait_for(lambda: collector.data() == ["first"], query, what="the first record")
        wait_for(lambda: any(not rows for _, rows in collector.attempts), query, what="an empty batch")
        # Idle, the query goes on with paced batches (one per idleProbeIntervalMs once settled).
        idle_from = _last_batch(checkpoint)
        wait_for(lambda: _last_batch(checkpoint) >= idle_from + 3, query, what="three idle batches")
        put_plain(kinesis, stream_name, [("k", "later")])
        wait_for(lambda: len(collector.data()) >= 2, query, what="the record put later")
    finally:
        stop(query)
    assert sorted(collector.data()) == ["first", "later"]
    # The first idle probe asked each shard once and was refused; none came after it.
    assert proxy.injected().get("GetShardIterator:denied", 0) <= 2, proxy.injected()
    assert proxy.count("GetShardIterator") == proxy.injected().get("GetShardIterator:denied", 0)
    assert proxy.count("GetRecords") == 0, proxy.counts()


def test_a_state_timeout_fires_while_the_stream_is_idle(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Path
) -> None:
    """``applyInPandasWithState`` with a processing-time timeout at the connector's defaults: Spark runs the no-data
    batches the timeout needs whatever the source says, so the key's state times out while nothing arrives."""
    import pandas as pd
    from pyspark.sql.streaming.state import GroupStateTimeout

    def count_until_quiet(key: tuple[str], frames: Any, state: Any) -> Any:
        if state.hasTimedOut:
            (count,) = state.get
            state.remove()
            yield pd.DataFrame({"key": [key[0]], "records": [count], "timedOut": [True]})
            return
        count = (state.get[0] if state.exists else 0) + sum(len(frame) for frame in frames)
        state.update((count,))
        state.setTimeoutDuration(2000)
        yield pd.DataFrame({"key": [key[0]], "records": [count], "timedOut": [False]})

    create_stream(kinesis, stream_name, 2)
    put_plain(kinesis, stream_name, [("k", "a"), ("k", "b")])
    seen: list[tuple[str, int, bool]] = []

    def collect(df: Any, _batch_id: int) -> None:
        seen.extend((r["key"], r["records"], r["timedOut"]) for r in df.collect())

    query = (
        reader(spark, kinesis_local, stream_name, startingPosition="TRIM_HORIZON")
        .selectExpr("partitionKey AS key")
        .groupBy("key")
        .applyInPandasWithState(
            count_until_quiet,
            outputStructType="key string, records long, timedOut boolean",
            stateStructType="records long",
            outputMode="update",
            timeoutConf=GroupStateTimeout.ProcessingTimeTimeout,
        )
        .writeStream.foreachBatch(collect)
        .outputMode("update")
        .option("checkpointLocation", str(tmp_path / "chk"))
        .start()
    )
    try:
        wait_for(lambda: ("k", 2, True) in seen, query, what="the state of key k to time out")
    finally:
        stop(query)
    assert seen[-1] == ("k", 2, True), seen
    assert ("k", 2, False) in seen and seen.count(("k", 2, True)) == 1, seen
