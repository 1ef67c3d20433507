"""The source end to end: the shaded jar in a real Spark session, reading from kinesis-local."""

from __future__ import annotations

import statistics
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from harness.kinesis import create_stream, list_shards, merge_shards, put_aggregated, put_plain, split_shard
from streaming import BatchCollector, read_until, reader, round_trips, start, stop, wait_batches, wait_for

pytestmark = pytest.mark.emulator


@pytest.mark.smoke
def test_schema_and_plan_string(spark: Any, kinesis_local: str, kinesis: Any, stream_name: str) -> None:
    create_stream(kinesis, stream_name, 1)
    df = reader(spark, kinesis_local, stream_name)
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("data", "binary"),
        ("streamName", "string"),
        ("partitionKey", "string"),
        ("sequenceNumber", "string"),
        ("approximateArrivalTimestamp", "timestamp"),
        ("shardId", "string"),
    ]


@pytest.mark.smoke
def test_bad_option_fails_when_the_query_is_defined(spark: Any, kinesis_local: str, stream_name: str) -> None:
    with pytest.raises(Exception) as error:
        reader(spark, kinesis_local, stream_name, maxFetchRecordsPerShard="lots")
    message = str(error.value)
    assert "kinesis.maxFetchRecordsPerShard" in message and "'lots'" in message and "whole number" in message
    with pytest.raises(Exception) as error:
        reader(spark, kinesis_local, stream_name, startingPositon="LATEST")
    assert "Did you mean 'kinesis.startingPosition'" in str(error.value)


def _metadata_entries(checkpoint: str) -> dict[int, list[str]]:
    """The metadata entries the tasks wrote, by batch: ``<checkpoint>/sources/0/kinesis/<runId>/<batchId>/<key>``."""
    entries: dict[int, list[str]] = defaultdict(list)
    for run in (Path(checkpoint) / "sources" / "0" / "kinesis").iterdir():
        for batch in run.iterdir():
            if batch.is_dir() and batch.name.isdigit():
                entries[int(batch.name)] += [unquote(f.name) for f in batch.iterdir() if not f.name.startswith(".")]
    return entries


@pytest.mark.parametrize("shards_per_task", [None, "2"], ids=["one-shard-per-task", "two-shards-per-task"])
def test_trim_horizon_reads_every_record_of_four_shards_once(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Any, shards_per_task: str | None
) -> None:
    create_stream(kinesis, stream_name, 4)
    sent = [(f"key-{i % 37}", f"event-{i}") for i in range(400)]
    puts = put_plain(kinesis, stream_name, sent)
    assert len({p.shard_id for p in puts}) == 4
    chk = str(tmp_path / "chk")
    grouping = {} if shards_per_task is None else {"shardsPerTask": shards_per_task}
    rows = read_until(spark, kinesis_local, stream_name, chk, 400, startingPosition="TRIM_HORIZON", **grouping).rows()
    # One metadata entry per read task and batch: 4 shards, so 2 tasks when grouped by 2.
    for batch, keys in _metadata_entries(chk).items():
        if shards_per_task is None:
            assert all(k.startswith(f"{stream_name}/shardId-") for k in keys), (batch, keys)
        else:
            assert sorted(keys) == ["tasks/0", "tasks/1"], (batch, keys)
    assert Counter(r.data for r in rows) == Counter(d for _, d in sent)
    expected = {d: (k, p.shard_id, p.sequence_number) for (k, d), p in zip(sent, puts, strict=True)}
    for row in rows:
        assert (row.partition_key, row.shard_id, row.sequence_number) == expected[row.data]
        assert row.stream_name == stream_name
        assert abs(row.arrival_ms - time.time() * 1000) < 600_000


def test_latest_reads_only_records_put_after_the_start(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Any
) -> None:
    create_stream(kinesis, stream_name, 2)
    put_plain(kinesis, stream_name, [f"before-{i}" for i in range(30)])
    time.sleep(1.0)
    collector = BatchCollector()
    query = start(reader(spark, kinesis_local, stream_name), collector, str(tmp_path / "chk"))
    try:
        wait_batches(query, 1)
        put_plain(kinesis, stream_name, [f"after-{i}" for i in range(30)])
        wait_for(lambda: len(collector.rows()) >= 30, query, what="30 rows")
        wait_batches(query, 2)
    finally:
        stop(query)
    assert sorted(collector.data()) == sorted(f"after-{i}" for i in range(30))


def test_at_timestamp_starts_at_the_instant(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Any
) -> None:
    create_stream(kinesis, stream_name, 2)
    put_plain(kinesis, stream_name, [f"old-{i}" for i in range(20)])
    time.sleep(1.5)
    instant = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time()))
    time.sleep(1.5)
    put_plain(kinesis, stream_name, [f"new-{i}" for i in range(20)])
    chk = str(tmp_path / "chk")
    collector = read_until(spark, kinesis_local, stream_name, chk, 20, startingPosition=f"AT_TIMESTAMP {instant}")
    assert sorted(collector.data()) == sorted(f"new-{i}" for i in range(20))


@pytest.mark.smoke
def test_restart_from_checkpoint_loses_and_repeats_nothing(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Any
) -> None:
    create_stream(kinesis, stream_name, 2)
    put_plain(kinesis, stream_name, [f"a-{i}" for i in range(120)])
    checkpoint = str(tmp_path / "chk")
    # The first run ends in its third batch, whatever the machine's speed: batches 0 and 1 commit at most 2 x 20
    # records per shard, and batch 2 fails after reading its records, so the restart starts inside the backlog
    # and replays a batch that was read but never committed.
    collector = BatchCollector(fail_batch=2)
    options = {"startingPosition": "TRIM_HORIZON", "maxFetchRecordsPerShard": "20"}
    query = start(reader(spark, kinesis_local, stream_name, **options), collector, checkpoint)
    wait_for(lambda: query.exception() is not None, what="the injected failure in batch 2")
    first_run = len(collector.rows())
    assert 0 < first_run <= 80
    put_plain(kinesis, stream_name, [f"b-{i}" for i in range(40)])
    # The restart reads both shards in one task: a checkpoint of one shard per task goes on grouped.
    read_until(spark, kinesis_local, stream_name, checkpoint, 160, collector, **options, shardsPerTask="2")
    data = collector.data()
    assert Counter(data) == Counter([f"a-{i}" for i in range(120)] + [f"b-{i}" for i in range(40)])
    # Each batch respects the per-shard limit.
    for rows in collector.batches.values():
        assert all(n <= 20 for n in Counter(r.shard_id for r in rows).values())


@pytest.mark.smoke
def test_a_replayed_batch_has_exactly_the_same_records(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Any
) -> None:
    create_stream(kinesis, stream_name, 2)
    put_plain(kinesis, stream_name, [f"a-{i}" for i in range(60)])
    checkpoint = str(tmp_path / "chk")
    options = {"startingPosition": "TRIM_HORIZON", "maxFetchRecordsPerShard": "25"}
    collector = BatchCollector(fail_batch=1)
    query = start(reader(spark, kinesis_local, stream_name, **options), collector, checkpoint)
    wait_for(lambda: query.exception() is not None, what="the injected failure")
    # More data arrives before the restart: a non-deterministic source would put some in the replay.
    put_plain(kinesis, stream_name, [f"b-{i}" for i in range(60)])
    query = start(reader(spark, kinesis_local, stream_name, **options), collector, checkpoint)
    try:
        wait_for(lambda: len(collector.rows()) >= 120, query, what="120 rows")
    finally:
        stop(query)
    failed = [rows for batch_id, rows in collector.attempts if batch_id == 1]
    assert len(failed) == 2, "batch 1 should have run twice"
    assert sorted(failed[0], key=lambda r: r.sequence_number) == sorted(failed[1], key=lambda r: r.sequence_number)
    assert len(failed[0]) > 0
    assert Counter(collector.data()) == Counter([f"a-{i}" for i in range(60)] + [f"b-{i}" for i in range(60)])


def _per_key_order_kept(collector: BatchCollector) -> None:
    seen: dict[str, list[int]] = defaultdict(list)
    for batch_id in sorted(collector.batches):
        rows = sorted(collector.batches[batch_id], key=lambda r: (r.shard_id, int(r.sequence_number)))
        by_key: dict[str, list[int]] = defaultdict(list)
        for row in rows:
            by_key[row.partition_key].append(int(row.data.split("-")[-1]))
        for key, counters in by_key.items():
            seen[key].extend(counters)
    for key, counters in seen.items():
        assert counters == sorted(counters), f"order of key {key} broken: {counters}"


@pytest.mark.parametrize("shards_per_task", [None, "3"], ids=["one-shard-per-task", "three-shards-per-task"])
def test_split_and_merge_while_running_keep_every_record_once_and_key_order(
    spark: Any,
    kinesis_local: str,
    kinesis: Any,
    stream_name: str,
    tmp_path: Any,
    shards_per_task: str | None,
    put_round: Any,
) -> None:
    create_stream(kinesis, stream_name, 2)
    collector = BatchCollector()
    options = {"startingPosition": "TRIM_HORIZON", "maxFetchRecordsPerShard": "15", "describeShardInterval": "200ms"}
    if shards_per_task is not None:
        # The split's children and the merge's parents then share a task with the other open shards.
        options["shardsPerTask"] = shards_per_task
    query = start(reader(spark, kinesis_local, stream_name, **options), collector, str(tmp_path / "chk"))
    try:
        put_round(5)
        wait_batches(query, 1)
        shards = sorted(s["ShardId"] for s in list_shards(kinesis, stream_name))
        children = split_shard(kinesis, stream_name, shards[0])
        put_round(5)
        wait_batches(query, 1)
        merged = merge_shards(kinesis, stream_name, children[1], shards[1])
        put_round(5)
        wait_for(lambda: len(collector.rows()) >= len(put_round.sent), query, what=f"{len(put_round.sent)} rows")
        wait_batches(query, 2)
    finally:
        stop(query)
    rows = collector.rows()
    assert Counter(r.data for r in rows) == Counter(put_round.sent)
    assert merged in {r.shard_id for r in rows}
    assert set(children) <= {r.shard_id for r in rows}
    _per_key_order_kept(collector)
    # A child is never read in the same batch as its parent.
    parents = {children[0]: shards[0], children[1]: shards[0], merged: children[1]}
    for batch_rows in collector.batches.values():
        batch_shards = {r.shard_id for r in batch_rows}
        for child, parent in parents.items():
            assert not (child in batch_shards and parent in batch_shards)


@pytest.mark.smoke
def test_kpl_aggregated_records_with_a_batch_boundary_inside_an_aggregate(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Any
) -> None:
    create_stream(kinesis, stream_name, 1)
    sent = [(f"user-{i % 5}", f"agg-{i}") for i in range(90)]
    puts = put_aggregated(kinesis, stream_name, sent, records_per_aggregate=30)
    assert [p.user_records for p in puts] == [30, 30, 30]
    put_plain(kinesis, stream_name, [("plain", "plain-0")])
    options = {"startingPosition": "TRIM_HORIZON", "maxFetchRecordsPerShard": "13"}
    collector = read_until(spark, kinesis_local, stream_name, str(tmp_path / "chk"), 91, **options)
    rows = collector.rows()
    assert [r.data for r in rows] == [d for _, d in sent] + ["plain-0"]
    assert [r.partition_key for r in rows[:90]] == [k for k, _ in sent]
    assert len([b for b in collector.batches.values() if b]) >= 7


def test_api_calls_per_batch_stay_within_bounds(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Any, counting_proxy: Any
) -> None:
    """Counts every Kinesis call the connector makes (through a proxy) while reading, then while idle.

    The bounds: one DescribeStreamSummary per query; ListShards at most once per describeShardInterval;
    one GetShardIterator per shard per batch; once the stream has gone idle, the wait between batches grows
    (400, 800 ms, BatchPacing) and settles at idleProbeIntervalMs: then no more than one GetRecords per shard
    per idleProbeIntervalMs, however often the trigger fires (the driver never probes shards itself).
    """
    create_stream(kinesis, stream_name, 4)
    put_plain(kinesis, stream_name, [f"e-{i}" for i in range(200)])
    proxy = counting_proxy(kinesis_local)
    collector = BatchCollector()
    # The paced idle batches of kinesis.avoidEmptyBatches=false; the driver's idle probes of the default are bounded
    # in test_idle_batches.py and IdleProbeSuite.
    options = {
        "startingPosition": "TRIM_HORIZON",
        "describeShardInterval": "1s",
        "idleProbeIntervalMs": "1000",
        "avoidEmptyBatches": "false",
    }
    began = time.monotonic()
    query = start(reader(spark, proxy.url, stream_name, **options), collector, str(tmp_path / "chk"), trigger_ms=50)
    try:
        wait_for(lambda: len(collector.rows()) >= 200, query, what="200 rows")
        busy = proxy.counts()
        busy_batches = len(collector.attempts)
        proxy.reset()
        # The waits grow while batches find nothing: 200 + 400 + 800 ms before they reach 1 s.
        time.sleep(2.5)
        settling = proxy.counts()
        proxy.reset()
        idle_began = time.monotonic()
        time.sleep(6)
        idle = proxy.counts()
        idle_seconds = time.monotonic() - idle_began
    finally:
        stop(query)
    elapsed = time.monotonic() - began
    assert sorted(collector.data()) == sorted(f"e-{i}" for i in range(200))
    allowed = {"DescribeStreamSummary", "ListShards", "GetShardIterator", "GetRecords"}
    assert set(busy) <= allowed and set(idle) <= allowed, (busy, idle)
    assert busy.get("DescribeStreamSummary", 0) == 1
    assert busy.get("ListShards", 0) + idle.get("ListShards", 0) <= elapsed / 1.0 + 2
    assert busy.get("GetShardIterator", 0) <= 4 * busy_batches
    assert busy.get("GetRecords", 0) <= 2 * 4 * busy_batches
    # 50 ms triggers for 6 s would be 120 probes per shard if every trigger read every shard; a wait that
    # stopped growing at 400 ms, 15. One batch per second, plus one for where the window falls: 7.
    assert idle.get("GetRecords", 0) <= 4 * (idle_seconds / 1.0 + 1), idle
    # The bounds above hold for a query that stopped probing too: it must still have probed each shard while idle.
    assert idle.get("GetRecords", 0) >= 4, idle
    assert settling.get("GetRecords", 0) <= 4 * 5, settling
    # Each batch continues on the iterator the previous batch's task left on this executor.
    assert idle.get("GetShardIterator", 0) <= 4, idle
    print(f"API calls while reading ({busy_batches} batches): {busy}; idle {idle_seconds:.1f}s: {idle}")


def test_a_record_put_after_a_batch_that_found_one_is_read_without_the_idle_wait(
    spark: Any, ministack: str, kinesis_client_factory: Any, stream_name: str, tmp_path: Any, jvm_cbor_disabled: None
) -> None:
    """At the defaults, a batch that found records at the tips is followed by the next one after
    getRecords.fetchIntervalMs (200 ms), not idleProbeIntervalMs (1 s). Each record here is put just after the
    batch that read the previous one: the old rule (a full idleProbeIntervalMs after every batch at the tips)
    made each of these round trips last a whole interval. The interval is 30 s here, so the two rules stay apart on
    a loaded machine: a round trip under 10 s needs the short wait."""
    kinesis = kinesis_client_factory(ministack)
    create_stream(kinesis, stream_name, 2)
    trips = round_trips(
        spark,
        ministack,
        kinesis,
        stream_name,
        str(tmp_path / "chk"),
        8,
        startingPosition="TRIM_HORIZON",
        idleProbeIntervalMs="30000",
    )
    print(f"put-to-row seconds: {[round(t, 3) for t in trips]}")
    assert statistics.median(trips) < 10, trips


def test_fail_on_data_loss_both_ways(ministack: str, tmp_path: Any) -> None:
    """A partly read shard disappears while the query is stopped (ministack deletes split parents)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    job = Path(__file__).parent / "jobs" / "data_loss_job.py"
    done = subprocess.run(
        [sys.executable, str(job), ministack, str(tmp_path)], capture_output=True, text=True, timeout=600
    )
    results = {
        r["failOnDataLoss"]: r
        for r in (json.loads(line[7:]) for line in done.stdout.splitlines() if line.startswith("RESULT "))
    }
    assert set(results) == {"true", "false"}, done.stdout[-3000:] + done.stderr[-3000:]
    strict, lenient = results["true"], results["false"]
    assert 0 < strict["firstRun"] < strict["oldRecords"]
    assert "error" in strict, strict
    assert strict["lostShard"] in strict["error"] and "kinesis.failOnDataLoss=false" in strict["error"]
    assert "error" not in lenient, lenient
    assert lenient["rows"] == sorted(f"new-{i}" for i in range(20))
    # What was skipped is logged: the shard, where reading stopped, and why it went on.
    assert strict["skipWarnings"] == [], strict["skipWarnings"]
    assert any(lenient["lostShard"] in w and "failOnDataLoss is false" in w for w in lenient["skipWarnings"]), lenient
