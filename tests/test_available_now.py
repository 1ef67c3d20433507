"""Trigger.AvailableNow, Trigger.Once and admission control (maxRecordsPerTrigger, maxBytesPerTrigger), end to end
against kinesis-local (kinesis-mock: it keeps split parents, so a reshard before the start leaves both generations)."""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from typing import Any

import pytest
from harness.kinesis import create_stream, list_shards, put_plain, split_shard
from streaming import BatchCollector, reader, start, stop, wait_batches, wait_for

pytestmark = pytest.mark.emulator


def run_available_now(
    spark: Any, endpoint: str, stream: str, checkpoint: str, collector: BatchCollector, **options: str
) -> Any:
    """Start an AvailableNow query; the caller waits for it to end by itself."""
    return (
        reader(spark, endpoint, stream, **options)
        .writeStream.foreachBatch(collector)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )


def _ended_by_itself(query: Any, timeout: float = 120.0) -> None:
    assert query.awaitTermination(timeout), "the AvailableNow query did not stop by itself"
    assert query.exception() is None, query.exception()


@pytest.mark.smoke
@pytest.mark.parametrize("shards_per_task", [None, "3"], ids=["one-shard-per-task", "three-shards-per-task"])
def test_available_now_reads_exactly_the_records_present_at_the_start_then_stops(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Any, shards_per_task: str | None
) -> None:
    """Grouped, one task reads the 3 shards at once: the probes that confirm its pages run on its fetch threads."""
    create_stream(kinesis, stream_name, 3)
    before = [f"before-{i}" for i in range(300)]
    puts = put_plain(kinesis, stream_name, before)
    assert len({p.shard_id for p in puts}) == 3
    checkpoint = str(tmp_path / "chk")
    collector = BatchCollector()
    options = {"startingPosition": "TRIM_HORIZON", "maxRecordsPerTrigger": "70"}
    if shards_per_task is not None:
        options["shardsPerTask"] = shards_per_task
    query = run_available_now(spark, kinesis_local, stream_name, checkpoint, collector, **options)

    # Once the first batch has run, the run's start is past: everything put from now on belongs to the next run.
    late: list[str] = []
    done = threading.Event()

    def keep_putting() -> None:
        i = 0
        while not done.is_set():
            batch = [f"late-{i + j}" for j in range(10)]
            put_plain(kinesis, stream_name, batch)
            late.extend(batch)
            i += 10
            time.sleep(0.1)

    wait_for(lambda: len(collector.batches) >= 1, query, what="the first batch")
    producer = threading.Thread(target=keep_putting, daemon=True)
    producer.start()
    try:
        _ended_by_itself(query)
    finally:
        done.set()
        producer.join(30)
    assert late, "records were put while the run was going"
    assert Counter(collector.data()) == Counter(before), "exactly the records present at the start, each once"
    assert len(collector.batches) >= 300 // 70, "the record limit split the backlog into several batches"
    assert all(len(rows) <= 70 for rows in collector.batches.values())

    # The next run reads what was put during and after the first one, and nothing twice.
    after = [f"after-{i}" for i in range(20)]
    put_plain(kinesis, stream_name, after)
    second = BatchCollector()
    query = run_available_now(spark, kinesis_local, stream_name, checkpoint, second, **options)
    _ended_by_itself(query)
    assert Counter(second.data()) == Counter(late + after)


def test_available_now_with_a_reshard_before_the_start_reads_both_generations_in_key_order(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Any
) -> None:
    create_stream(kinesis, stream_name, 2)
    keys = [f"k{i}" for i in range(6)]
    first = [(k, f"{k}-{n}") for n in range(20) for k in keys]
    put_plain(kinesis, stream_name, first)
    parent = sorted(s["ShardId"] for s in list_shards(kinesis, stream_name))[0]
    children = split_shard(kinesis, stream_name, parent)
    second = [(k, f"{k}-{n}") for n in range(20, 40) for k in keys]
    put_plain(kinesis, stream_name, second)
    collector = BatchCollector()
    options = {"startingPosition": "TRIM_HORIZON", "maxFetchRecordsPerShard": "15"}
    query = run_available_now(spark, kinesis_local, stream_name, str(tmp_path / "chk"), collector, **options)
    _ended_by_itself(query)
    assert Counter(collector.data()) == Counter(d for _, d in first + second)
    read_shards = {r.shard_id for r in collector.rows()}
    assert parent in read_shards and set(children) & read_shards, "both generations were read"
    # Per key, records arrive in the order they were put, across the split.
    seen: dict[str, list[int]] = defaultdict(list)
    for batch_id in sorted(collector.batches):
        for row in sorted(collector.batches[batch_id], key=lambda r: (r.shard_id, int(r.sequence_number))):
            seen[row.partition_key].append(int(row.data.split("-")[-1]))
    for key, counters in seen.items():
        assert counters == sorted(counters), f"order of {key} broken: {counters}"


def test_available_now_on_an_empty_stream_stops_without_a_batch(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Any
) -> None:
    create_stream(kinesis, stream_name, 2)
    collector = BatchCollector()
    query = run_available_now(
        spark, kinesis_local, stream_name, str(tmp_path / "chk"), collector, startingPosition="TRIM_HORIZON"
    )
    _ended_by_itself(query, 60)
    assert collector.data() == []


def test_trigger_once_reads_one_batch(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Any
) -> None:
    create_stream(kinesis, stream_name, 2)
    put_plain(kinesis, stream_name, [f"r-{i}" for i in range(100)])
    collector = BatchCollector()
    query = (
        reader(spark, kinesis_local, stream_name, startingPosition="TRIM_HORIZON", maxFetchRecordsPerShard="10")
        .writeStream.foreachBatch(collector)
        .option("checkpointLocation", str(tmp_path / "chk"))
        .trigger(once=True)
        .start()
    )
    _ended_by_itself(query, 60)
    assert list(collector.batches) == [0]
    assert len(collector.rows()) == 20


def test_max_records_per_trigger_caps_every_batch_and_a_replay_is_identical(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Any
) -> None:
    create_stream(kinesis, stream_name, 3)
    sent = [f"a-{i}" for i in range(240)]
    put_plain(kinesis, stream_name, sent)
    checkpoint = str(tmp_path / "chk")
    options = {"startingPosition": "TRIM_HORIZON", "maxRecordsPerTrigger": "25"}
    collector = BatchCollector(fail_batch=2)
    query = start(reader(spark, kinesis_local, stream_name, **options), collector, checkpoint)
    wait_for(lambda: query.exception() is not None, what="the injected failure")
    more = [f"b-{i}" for i in range(60)]
    put_plain(kinesis, stream_name, more)
    query = start(reader(spark, kinesis_local, stream_name, **options), collector, checkpoint)
    try:
        wait_for(lambda: len(collector.rows()) >= 300, query, what="300 rows")
        wait_batches(query, 2)
    finally:
        stop(query)
    assert Counter(collector.data()) == Counter(sent + more)
    assert all(len(rows) <= 25 for _, rows in collector.attempts)
    assert sum(1 for rows in collector.batches.values() if len(rows) >= 20) >= 8, "batches are filled, not tiny"
    replayed = [rows for batch_id, rows in collector.attempts if batch_id == 2]
    assert len(replayed) == 2 and replayed[0]
    assert sorted(r.sequence_number for r in replayed[0]) == sorted(r.sequence_number for r in replayed[1])


@pytest.mark.smoke
def test_max_bytes_per_trigger_caps_every_batch(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Any
) -> None:
    create_stream(kinesis, stream_name, 2)
    sent = [f"payload-{i:04d}-" + "x" * 87 for i in range(120)]  # 100 bytes each
    put_plain(kinesis, stream_name, sent)
    options = {"startingPosition": "TRIM_HORIZON", "maxBytesPerTrigger": "1000"}
    collector = BatchCollector()
    query = run_available_now(spark, kinesis_local, stream_name, str(tmp_path / "chk"), collector, **options)
    _ended_by_itself(query)
    assert Counter(collector.data()) == Counter(sent)
    sizes = [sum(len(r.data) for r in rows) for rows in collector.batches.values()]
    assert max(sizes) <= 1000, sizes
    assert len(sizes) >= 12
