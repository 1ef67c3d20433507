"""Idle streams on kinesis-local: how many Spark batches an idle query runs (issue 28, section 3).

At the defaults an idle enhanced fan-out query backs off between empty batches as an idle polling query does
(before, it planned a batch on every trigger: about 9 a second). With ``kinesis.avoidEmptyBatches`` an idle
query runs no batch at all until a record arrives, which the next batch then reads once. Each query here uses
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


def test_an_idle_fan_out_query_runs_no_more_batches_than_an_idle_polling_query(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Path
) -> None:
    """Both readers on the same idle 4-shard stream at once, at the defaults, over the same 8 s window."""
    create_stream(kinesis, stream_name, 4)
    put_plain(kinesis, stream_name, [("k", "first")])
    queries: dict[str, tuple[Any, Path]] = {}
    try:
        for label, options in (("polling", {}), ("fan-out", {**EFO, "consumerName": "idle-batches"})):
            checkpoint = tmp_path / label
            df = reader(spark, kinesis_local, stream_name, startingPosition="TRIM_HORIZON", **options)
            queries[label] = (
                df.writeStream.format("noop").option("checkpointLocation", str(checkpoint)).start(),
                checkpoint,
            )
        # Warm: each has read the record and settled into its idle waits (400, 800, then 1000 ms).
        for query, checkpoint in queries.values():
            wait_for(lambda c=checkpoint: _last_batch(c) >= 3, query, timeout=90, what="three batches")
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
                timeout=90,
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


def test_with_avoid_empty_batches_an_idle_fan_out_query_runs_no_batch_until_a_record_arrives(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Path
) -> None:
    """No batch during 6 idle seconds, then the record put is read exactly once. (The awslabs key's mapping to the
    option: IdleProbeSuite.)"""
    create_stream(kinesis, stream_name, 2)
    put_plain(kinesis, stream_name, [("k", "first")])
    collector = BatchCollector()
    checkpoint = tmp_path / "chk"
    options = {"startingPosition": "TRIM_HORIZON", "consumerName": "quiet", "avoidEmptyBatches": "true", **EFO}
    query = (
        reader(spark, kinesis_local, stream_name, **options)
        .writeStream.foreachBatch(collector)
        .option("checkpointLocation", str(checkpoint))
        .start()
    )
    try:
        wait_for(lambda: collector.data() == ["first"], query, timeout=90, what="the first record")
        # The batch after the one that read it finds nothing: from then on the driver only probes.
        wait_for(lambda: any(not rows for _, rows in collector.attempts), query, timeout=90, what="an empty batch")
        time.sleep(1)
        idle_from = _last_batch(checkpoint)
        time.sleep(6)
        idle_batches = _last_batch(checkpoint) - idle_from
        put_plain(kinesis, stream_name, [("k", "later")])
        wait_for(lambda: len(collector.data()) >= 2, query, timeout=90, what="the record put later")
        time.sleep(2)
    finally:
        stop(query)
    assert idle_batches == 0
    assert sorted(collector.data()) == ["first", "later"]
    # After the batch that read it, one empty batch finds the shards idle again; then the driver only probes.
    batches = [(batch, len(rows)) for batch, rows in collector.attempts]
    later = next(i for i, (_, rows) in enumerate(collector.attempts) if any(r.data == "later" for r in rows))
    assert len(batches) - later - 1 <= 1, batches
