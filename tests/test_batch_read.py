"""Batch reads (spark.read) and per-shard starting and ending positions, end to end against kinesis-local."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter, defaultdict
from typing import Any

import pytest
from harness.kinesis import create_stream, list_shards, put_aggregated, put_plain, read_shard
from spark_kinesis import KinesisSource, ShardPositions
from streaming import BatchCollector, batch_read, reader, start, stop, wait_for

pytestmark = pytest.mark.emulator


def rows(df: Any) -> list[tuple[str, str, str]]:
    """(data, shard id, sequence number) of every row."""
    return [
        (bytes(r["data"]).decode("utf-8"), r["shardId"], r["sequenceNumber"])
        for r in df.select("data", "shardId", "sequenceNumber").collect()
    ]


def test_a_batch_read_returns_exactly_the_records_put_before_it_was_planned_while_a_producer_keeps_putting(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str
) -> None:
    create_stream(kinesis, stream_name, 3)
    before = [f"before-{i}" for i in range(600)]
    put_plain(kinesis, stream_name, before)
    done = threading.Event()
    put_at: dict[str, float] = {}  # when each record's put call started
    put_done: dict[str, float] = {}  # when it returned: the record was in the stream by then
    lock = threading.Lock()
    job_seen: list[float] = []  # when the read's Spark job was first seen running

    def keep_putting() -> None:
        # Until 3 s after the read's job is seen: records put while it reads, few enough for it to reach the tip.
        i = 0
        while not done.is_set() and not (job_seen and time.monotonic() > job_seen[0] + 3.0):
            batch = [f"during-{i + j}" for j in range(20)]
            began = time.monotonic()
            put_plain(kinesis, stream_name, batch)
            finished = time.monotonic()
            with lock:
                put_at.update(dict.fromkeys(batch, began))
                put_done.update(dict.fromkeys(batch, finished))
            i += 20
            time.sleep(0.02)

    # A first read warms the JVM's classes and clients.
    assert batch_read(spark, kinesis_local, stream_name).count() == 600
    producer = threading.Thread(target=keep_putting, daemon=True)
    producer.start()
    # The moment the read's Spark job is first seen running: its plan, with each shard's end, was made before it.
    tracker = spark.sparkContext.statusTracker()

    def watch_for_the_job() -> None:
        while not done.is_set() and not job_seen:
            if tracker.getActiveJobsIds():
                job_seen.append(time.monotonic())
            time.sleep(0.02)

    watcher = threading.Thread(target=watch_for_the_job, daemon=True)
    try:
        wait_for(lambda: len(put_done) >= 40, what="the producer's first records")
        watcher.start()
        # Small, paced pages make the read take seconds, so a reader that went on to the tip it finds while reading
        # (instead of the tip at the plan) would return records put long after the read was planned. By construction:
        # each shard holds about 200 of the 600 records put before, 20 pages of 10, at least 5.7 s apart in all,
        # however fast the machine and however few records the producer put before the plan.
        df = batch_read(
            spark,
            kinesis_local,
            stream_name,
            **{"getRecords.numberOfRecordsPerFetch": "10", "getRecords.fetchIntervalMs": "300"},
        )
        called = time.monotonic()
        result = rows(df)
        returned = time.monotonic()
    finally:
        done.set()
        producer.join(30)
        if watcher.is_alive():
            watcher.join(30)
    assert job_seen, "the read's Spark job was never seen running"
    assert returned - called > 4.0, f"the read took {returned - called:.1f} s: too fast for the check below"
    data = [d for d, _, _ in result]
    assert set(before) <= set(data), "everything put before the read (TRIM_HORIZON is a batch read's default start)"
    assert len(data) == len(set(data)), "no record twice"
    # However long planning took on a loaded machine, a put that began once the job ran came after the plan.
    late = [d for d in data if d in put_at and put_at[d] > job_seen[0]]
    assert not late, f"records put after the read was planned: {late[:5]}"
    assert any(d.startswith("during-") for d in data), "records put before the plan, while the producer ran, are read"
    # The read is planned inside collect(): every record already in the stream when collect() was called is read.
    seen = set(data)
    missing = [d for d, t in put_done.items() if t < called and d not in seen]
    assert not missing, f"records put before the read was planned are missing: {missing[:5]}"
    # Per shard, the result is exactly a prefix of the shard: no gap, nothing past the planned end.
    by_shard: dict[str, list[str]] = defaultdict(list)
    for _, shard, seq in result:
        by_shard[shard].append(seq)
    for shard in {s["ShardId"] for s in list_shards(kinesis, stream_name)}:
        stored = [r["SequenceNumber"] for r in read_shard(kinesis, stream_name, shard, max_calls=500)[0]]
        got = sorted(by_shard.get(shard, []), key=int)
        assert got == stored[: len(got)], f"{shard}: the read is not a prefix of the shard"


def test_the_same_bounds_give_the_same_result_and_a_batch_read_has_no_checkpoint(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str
) -> None:
    create_stream(kinesis, stream_name, 2)
    puts = put_plain(kinesis, stream_name, [f"r-{i}" for i in range(200)])
    last = {}
    for p in puts:
        last[p.shard_id] = p.sequence_number
    end = ShardPositions()
    for shard, seq in last.items():
        end = end.after_sequence_number(stream_name, shard, seq)
    df = batch_read(
        spark, kinesis_local, stream_name, startingPosition="TRIM_HORIZON", endingPosition=end.option_value()
    )
    first = sorted(rows(df))
    put_plain(kinesis, stream_name, [f"later-{i}" for i in range(50)])
    again = sorted(rows(df))
    assert first == again, "re-executing the same DataFrame with fixed ends reads the same records"
    assert sorted(d for d, _, _ in first) == sorted(f"r-{i}" for i in range(200))


@pytest.mark.smoke
def test_a_batch_read_between_two_per_shard_positions_inside_kpl_aggregates(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str
) -> None:
    create_stream(kinesis, stream_name, 1)
    shard = list_shards(kinesis, stream_name)[0]["ShardId"]
    user = [(f"k{i % 5}", f"u-{i:03d}") for i in range(100)]
    aggregates = put_aggregated(kinesis, stream_name, user, records_per_aggregate=10)
    assert len(aggregates) == 10 and all(a.user_records == 10 for a in aggregates)
    names = [d for _, d in user]

    def between(start: ShardPositions, end: ShardPositions) -> list[str]:
        df = batch_read(
            spark,
            kinesis_local,
            stream_name,
            startingPosition=start.option_value(),
            endingPosition=end.option_value(),
        )
        return sorted(d for d, _, _ in rows(df))

    seq = [a.sequence_number for a in aggregates]
    # After sub-record 3 of aggregate 2, up to (excluding) sub-record 5 of aggregate 7.
    got = between(
        ShardPositions().after_sequence_number(stream_name, shard, seq[2], sub_sequence_number=3),
        ShardPositions().at_sequence_number(stream_name, shard, seq[7], sub_sequence_number=5),
    )
    assert got == names[24:75]
    # At aggregate 4 (all of it), through aggregate 5 (all of it).
    got = between(
        ShardPositions().at_sequence_number(stream_name, shard, seq[4]),
        ShardPositions().after_sequence_number(stream_name, shard, seq[5]),
    )
    assert got == names[40:60]
    # The same place twice: nothing.
    same = ShardPositions().at_sequence_number(stream_name, shard, seq[4], sub_sequence_number=2)
    assert between(same, same) == []


def test_a_streaming_query_started_from_per_shard_positions_reads_exactly_the_records_after_them(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Any
) -> None:
    create_stream(kinesis, stream_name, 2)
    puts = put_plain(kinesis, stream_name, [(f"k{i}", f"old-{i}") for i in range(200)])
    by_shard: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for i, p in enumerate(puts):
        by_shard[p.shard_id].append((p.sequence_number, f"old-{i}"))
    (a, a_records), (b, b_records) = sorted(by_shard.items())
    assert len(a_records) > 20 and len(b_records) > 20
    positions = (
        ShardPositions()
        .after_sequence_number(stream_name, a, a_records[9][0])
        .at_sequence_number(stream_name, b, b_records[15][0])
    )
    expected = [d for _, d in a_records[10:]] + [d for _, d in b_records[15:]]
    collector = BatchCollector()
    query = start(
        reader(spark, kinesis_local, stream_name, startingPosition=positions.option_value()),
        collector,
        str(tmp_path / "chk"),
    )
    try:
        wait_for(lambda: len(collector.data()) >= len(expected), query, what="the records after the positions")
        new = [f"new-{i}" for i in range(30)]
        put_plain(kinesis, stream_name, new)
        wait_for(lambda: len(collector.data()) >= len(expected) + 30, query, what="the new records")
    finally:
        stop(query)
    assert Counter(collector.data()) == Counter(expected + new)


def test_the_source_builder_reads_a_batch_with_typed_positions(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str
) -> None:
    create_stream(kinesis, stream_name, 1)
    puts = put_plain(kinesis, stream_name, [f"r-{i}" for i in range(10)])
    shard = puts[0].shard_id
    source = KinesisSource(
        stream_name=stream_name,
        endpoint_url=kinesis_local,
        region="us-east-1",
        starting_position=ShardPositions().at_sequence_number(stream_name, shard, puts[3].sequence_number),
        ending_position=ShardPositions().at_sequence_number(stream_name, shard, puts[7].sequence_number),
    )
    assert sorted(bytes(r["data"]).decode() for r in source.read(spark).collect()) == [f"r-{i}" for i in range(3, 7)]


def _error(action: Any) -> str:
    with pytest.raises(Exception) as failure:  # Spark wraps the JVM's exception
        action()
    return str(failure.value)


def _doc(stream: str, shard: str, kind: str, **fields: str) -> str:
    return json.dumps({stream: {shard: {"type": kind, **fields}}})


# One case per mistake: (options given the stream and its shard, when it fails, what the message must name).
# "load" fails when the query is defined; "collect" when the read is planned (it needs the shard listing).
BAD_READS: dict[str, tuple[Any, str, list[str]]] = {
    "malformed sequence number": (
        lambda st, sh: {"startingPosition": _doc(st, sh, "AT_SEQUENCE_NUMBER", sequenceNumber="12x")},
        "load",
        ["kinesis.startingPosition", "{shard}", "12x"],
    ),
    "end before start by sequence number": (
        lambda st, sh: {
            "startingPosition": _doc(st, sh, "AFTER_SEQUENCE_NUMBER", sequenceNumber="900"),
            "endingPosition": _doc(st, sh, "AT_SEQUENCE_NUMBER", sequenceNumber="800"),
        },
        "load",
        ["kinesis.endingPosition", "{shard}", "before the starting position"],
    ),
    "end before start by timestamp": (
        lambda st, sh: {
            "startingPosition": "AT_TIMESTAMP 2026-11-24T10:00:00Z",
            "endingPosition": _doc(st, sh, "AT_TIMESTAMP", timestamp="2026-11-24T09:00:00Z"),
        },
        "load",
        ["kinesis.endingPosition", "{shard}", "before the starting timestamp"],
    ),
    "unknown shard in the start": (
        lambda st, sh: {"startingPosition": _doc(st, "shardId-000000000042", "TRIM_HORIZON")},
        "collect",
        ["kinesis.startingPosition", "shardId-000000000042", "does not have", "{shard}"],
    ),
    "unknown shard in the end": (
        lambda st, sh: {"endingPosition": _doc(st, "shardId-000000000042", "LATEST")},
        "collect",
        ["kinesis.endingPosition", "shardId-000000000042", "does not have", "{shard}"],
    ),
    "a stream the query does not read": (
        lambda st, sh: {"endingPosition": _doc("other-stream", sh, "LATEST")},
        "load",
        ["kinesis.endingPosition", "other-stream", "not read by this query"],
    ),
    "enhanced fan-out": (
        lambda st, sh: {"consumerType": "SubscribeToShard", "consumerName": "c"},
        "collect",
        ["SubscribeToShard", "batch read"],
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_READS))
def test_a_bad_batch_read_fails_with_a_message_naming_what_is_wrong(
    case: str, spark: Any, kinesis_local: str, kinesis: Any, stream_name: str
) -> None:
    create_stream(kinesis, stream_name, 1)
    shard = list_shards(kinesis, stream_name)[0]["ShardId"]
    options, when, expected = BAD_READS[case]
    if when == "load":
        m = _error(lambda: batch_read(spark, kinesis_local, stream_name, **options(stream_name, shard)))
    else:
        m = _error(lambda: batch_read(spark, kinesis_local, stream_name, **options(stream_name, shard)).collect())
    for part in expected:
        assert part.format(shard=shard) in m, (part, m)


def test_a_streaming_query_refuses_an_ending_position(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Any
) -> None:
    create_stream(kinesis, stream_name, 1)
    m = _error(
        lambda: (
            reader(spark, kinesis_local, stream_name, endingPosition="LATEST")
            .writeStream.format("noop")
            .option("checkpointLocation", str(tmp_path / "chk"))
            .start()
            .processAllAvailable()
        )
    )
    assert "kinesis.endingPosition" in m and "batch reads" in m


@pytest.mark.parametrize("shards_per_task", [None, "2", "3"])
def test_a_batch_read_plans_once_and_costs_a_few_calls_per_shard(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, counting_proxy: Any, shards_per_task: str | None
) -> None:
    """With kinesis.shardsPerTask (or by default, one task per core), a task reads several shards at once: the same
    rows, the same calls."""
    create_stream(kinesis, stream_name, 3)
    put_plain(kinesis, stream_name, [f"r-{i}" for i in range(300)])
    proxy = counting_proxy(kinesis_local)
    grouping = {} if shards_per_task is None else {"shardsPerTask": shards_per_task}
    df = batch_read(spark, proxy.url, stream_name, **grouping)
    result = rows(df)
    assert sorted(d for d, _, _ in result) == sorted(f"r-{i}" for i in range(300))
    by_shard: dict[str, list[int]] = defaultdict(list)
    for _, shard, seq in result:
        by_shard[shard].append(int(seq))
    assert all(seqs == sorted(seqs) for seqs in by_shard.values()), "each shard's rows in order"
    calls = proxy.counts()
    # The driver: one DescribeStreamSummary (the stream's record distribution), one ListShards, and per open shard
    # one LATEST GetShardIterator and one probe. Each task: one GetShardIterator, a page and its probe, then an empty
    # page at the tip.
    assert calls.get("DescribeStreamSummary") == 1, calls
    assert calls.get("ListShards") == 1, calls
    assert calls.get("GetShardIterator") == 3 + 3, calls
    assert calls.get("GetRecords", 0) <= 3 * (1 + 3), calls
    # Planned again for the question (after the counts): 3 shards make 2 (one task per core of local[2]), 2 or 1 tasks.
    assert df.rdd.getNumPartitions() == {None: 2, "2": 2, "3": 1}[shards_per_task]
    # A read that starts where this one ended takes over its tasks' shard iterators (the executor's iterator cache):
    # its tasks call no GetShardIterator, and each finds its shard's tip with one empty page and no probe (the driver
    # still pins each end: a GetShardIterator and a probe per shard).
    after = {
        shard: {"type": "AFTER_SEQUENCE_NUMBER", "sequenceNumber": str(max(seqs))} for shard, seqs in by_shard.items()
    }
    proxy.reset()
    again = batch_read(spark, proxy.url, stream_name, startingPosition=json.dumps({stream_name: after}), **grouping)
    assert again.count() == 0
    calls = proxy.counts()
    assert calls.get("GetShardIterator") == 3, calls
    assert calls.get("GetRecords") == 3 + 3, calls
