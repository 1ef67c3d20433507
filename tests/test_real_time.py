"""Spark's real-time mode (``Trigger.RealTime``, Spark 4.1 and newer) end to end, against the emulators.

A real-time query's tasks run for a whole batch and emit records as they arrive. The sink here is a
Python ``foreach`` writer that appends each row, with the batch (epoch) that emitted it, to a file per
task; the tests then check the rows against what was put. Every shard read needs a task slot for
the whole batch, and the session has two (``local[2]``), so the streams have at most two open shards.

Emulator notes: ministack pushes SubscribeToShard events at once (so fan-out is fast there) but
deletes split parents; kinesis-local keeps them, so the reshard test runs there (both readers; it
pushes fan-out events about once a second).
"""

from __future__ import annotations

import os
import re
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyspark
import pytest
from harness import emulators
from harness.kinesis import create_stream, deaggregate, merge_shards, open_shards, put_plain, split_shard
from spark_kinesis.realtime import ALLOWLIST_CHECK_CONF, real_time_trigger, require_real_time
from streaming import reader, wait_for, walk_seed
from test_stress import Walk

pytestmark = pytest.mark.emulator

HAS_REAL_TIME = tuple(int(p) for p in pyspark.__version__.split(".")[:2]) >= (4, 1)
needs_real_time = pytest.mark.skipif(not HAS_REAL_TIME, reason="real-time mode needs Spark 4.1 or newer")

EFO = {"consumerType": "SubscribeToShard"}
# Steps of the real-time stress walk (each restart costs a few seconds of Spark start-up).
REAL_TIME_STEPS = int(os.environ.get("STRESS_STEPS", "20"))


def file_writer(directory: str) -> Any:
    """A ``foreach`` writer: one line ``<epoch>\t<data>`` per row, in a file per task attempt.

    The class is made here, not at module level, so that Spark's Python workers (which cannot
    import this test module) receive it by value.
    """

    class FileWriter:
        def open(self, partition_id: int, epoch_id: int) -> bool:
            self.epoch = epoch_id
            name = f"{epoch_id}-{partition_id}-{uuid.uuid4().hex}.rows"
            self.file = open(os.path.join(directory, name), "a", encoding="utf-8")  # noqa: SIM115
            return True

        def process(self, row: Any) -> None:
            self.file.write(f"{self.epoch}\t{row['d']}\n")
            self.file.flush()

        def close(self, error: BaseException | None) -> None:
            self.file.close()

    return FileWriter()


def rows_written(directory: Path) -> list[tuple[int, str]]:
    out = []
    for path in sorted(directory.glob("*.rows")):
        for line in path.read_text(encoding="utf-8").splitlines():
            epoch, data = line.split("\t", 1)
            out.append((int(epoch), data))
    return out


def stream_and_output(kinesis: Any, stream: str, shards: int, tmp_path: Path) -> tuple[Path, Path]:
    """Create the stream; return the directory the ``foreach`` writer fills, and the checkpoint."""
    create_stream(kinesis, stream, shards)
    out = tmp_path / "out"
    out.mkdir()
    return out, tmp_path / "chk"


def start_real_time(df: Any, out: Path, checkpoint: Path, batch: str = "5 seconds") -> Any:
    writer = df.selectExpr("CAST(data AS STRING) AS d").writeStream.foreach(file_writer(str(out)))
    return real_time_trigger(writer, batch).option("checkpointLocation", str(checkpoint)).start()


def committed_batches(checkpoint: Path) -> set[int]:
    commits = checkpoint / "commits"
    return {int(p.name) for p in commits.iterdir() if p.name.isdigit()} if commits.exists() else set()


# A temporary file of Spark's offset or commit log (``.0.<uuid>.tmp``) and its checksum (``..0.<uuid>.tmp.crc``).
LOG_TEMP = re.compile(r"\.{1,2}\d+\.[0-9a-f-]{36}\.tmp(\.crc)?")


def clear_interrupted_first_batch_writes(checkpoint: Path) -> list[str]:
    """Remove what a stop left of the first batch's offset- and commit-log writes, if no batch was committed.

    Real-time mode logs a batch's offsets and then its commit when the batch ends, each to a temporary file that
    Spark renames. Without Hadoop's native library, the local file system creates that file and then sets its mode
    by running ``chmod`` in a child process; the interrupt of ``query.stop()`` breaks that wait and leaves the file
    behind. A real-time start first deletes the offsets of batches never committed; then, with no batch left, it
    requires ``offsets`` and ``commits`` to be empty and otherwise fails with
    ``STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY``. Nothing was committed, so removing the files is what a user would
    do: the next start begins at batch 0 again. Returns the paths removed, relative to ``checkpoint``.
    """
    commits = checkpoint / "commits"
    if committed_batches(checkpoint):
        return []
    left = [p for log in (checkpoint / "offsets", commits) if log.is_dir() for p in log.iterdir()]
    left = [p for p in left if LOG_TEMP.fullmatch(p.name)]
    for path in left:
        path.unlink()
    return sorted(str(p.relative_to(checkpoint)) for p in left)


def check_exactly(
    written: list[tuple[int, str]],
    sent: list[str],
    may_repeat_from: int | None = None,
    may_repeat_in: set[int] | None = None,
) -> None:
    """Every record sent is written, once; a record may be written again only if it was first written by a batch
    >= ``may_repeat_from``, or by one of ``may_repeat_in``."""
    counts = Counter(data for _, data in written)
    missing = [d for d in sent if counts[d] == 0]
    assert not missing, f"{len(missing)} records lost, e.g. {missing[:5]}"
    unexpected = set(counts) - set(sent)
    assert not unexpected, f"rows that were never put: {sorted(unexpected)[:5]}"
    repeated = {d for d, n in counts.items() if n > 1}
    first_epoch: dict[str, int] = {}
    for epoch, data in sorted(written, key=lambda r: r[0]):
        first_epoch.setdefault(data, epoch)

    def may_repeat(epoch: int) -> bool:
        return (may_repeat_from is not None and epoch >= may_repeat_from) or epoch in (may_repeat_in or set())

    wrong = sorted(d for d in repeated if not may_repeat(first_epoch[d]))
    assert not wrong, f"{len(wrong)} records written twice outside an unfinished batch, e.g. {wrong[:5]}"


def test_interrupted_log_writes_of_an_uncommitted_first_batch_are_cleared_and_nothing_else(tmp_path: Path) -> None:
    """Names as Spark 4.2 left them when a stop hit batch 0's offset write (13 of 15 stops so timed) or its commit
    write (3 of 5): each time, the next start failed with STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY."""
    temp = ".0.f61decc9-f04f-40cb-956f-b8b073f9d922.tmp"
    offsets, commits = tmp_path / "offsets", tmp_path / "commits"
    offsets.mkdir()
    commits.mkdir()
    (offsets / "0").write_text("v1")  # logged, not committed: a real-time start deletes it itself
    (offsets / temp).write_text("v1")
    (commits / temp).write_text("v1")
    (commits / f".{temp}.crc").write_text("")
    (commits / "notes.txt").write_text("not Spark's")
    assert clear_interrupted_first_batch_writes(tmp_path) == [
        f"commits/.{temp}.crc",
        f"commits/{temp}",
        f"offsets/{temp}",
    ]
    assert sorted(p.name for p in offsets.iterdir()) == ["0"]
    assert sorted(p.name for p in commits.iterdir()) == ["notes.txt"]
    # Once a batch is committed, leftovers are harmless and stay: Spark resumes after that batch.
    (commits / "0").write_text("v1")
    (commits / temp.replace(".0.", ".1.")).write_text("v1")
    assert clear_interrupted_first_batch_writes(tmp_path) == []
    assert len(list(commits.iterdir())) == 3


@pytest.mark.smoke
def test_real_time_needs_spark_4_1_and_names_the_versions() -> None:
    with pytest.raises(ValueError, match=r"needs Spark 4\.1 or newer; this is Spark 4\.0\.4"):
        require_real_time("4.0.4")
    with pytest.raises(ValueError, match=r"needs Spark 4\.1 or newer; this is Spark 3\.5\.9"):
        require_real_time("3.5.9")
    require_real_time("4.1.0")
    require_real_time("4.3.0")
    if HAS_REAL_TIME:
        require_real_time()
    else:
        with pytest.raises(ValueError, match=rf"this is Spark {pyspark.__version__}"):
            require_real_time()


@pytest.mark.smoke
@needs_real_time
def test_real_time_fan_out_reads_every_record_once_as_it_arrives(
    spark: Any, ministack: str, kinesis_client_factory: Any, stream_name: str, tmp_path: Path, jvm_cbor_disabled: None
) -> None:
    kinesis = kinesis_client_factory(ministack)
    out, checkpoint = stream_and_output(kinesis, stream_name, 2, tmp_path)
    before = [f"early-{i}" for i in range(50)]
    put_plain(kinesis, stream_name, [(f"k{i}", d) for i, d in enumerate(before)])
    df = reader(spark, ministack, stream_name, startingPosition="TRIM_HORIZON", consumerName="rt-efo", **EFO)
    query = start_real_time(df, out, checkpoint)
    try:
        wait_for(lambda: len(rows_written(out)) >= 50, query, what="the records put before the start")
        during = [f"live-{i}" for i in range(100)]
        for i in range(0, 100, 10):
            put_plain(kinesis, stream_name, [(f"k{j}", during[j]) for j in range(i, i + 10)])
            time.sleep(0.1)
        wait_for(lambda: len(rows_written(out)) >= 150, query, what="the records put while running")
        # Rows are emitted inside a running batch, not only when it ends.
        first_live_epoch = min(e for e, d in rows_written(out) if d.startswith("live-"))
        wait_for(lambda: len(committed_batches(checkpoint)) >= 2, query, what="two committed batches")
        assert query.exception() is None
        progress = [p for p in query.recentProgress if p["sources"]]
        metrics = progress[-1]["sources"][0]["metrics"]
        assert metrics["getRecordsCalls"] == "0" and metrics["getShardIteratorCalls"] == "0", metrics
    finally:
        query.stop()
    check_exactly(rows_written(out), before + during)
    assert first_live_epoch in {e for e, _ in rows_written(out)}


@needs_real_time
def test_real_time_restart_from_the_checkpoint_loses_nothing_and_repeats_only_the_unfinished_batch(
    spark: Any, ministack: str, kinesis_client_factory: Any, stream_name: str, tmp_path: Path, jvm_cbor_disabled: None
) -> None:
    kinesis = kinesis_client_factory(ministack)
    out, checkpoint = stream_and_output(kinesis, stream_name, 2, tmp_path)
    sent: list[str] = []

    def put(prefix: str, n: int) -> None:
        batch = [f"{prefix}-{i}" for i in range(n)]
        put_plain(kinesis, stream_name, [(f"key-{i % 13}", d) for i, d in enumerate(batch)])
        sent.extend(batch)

    options = {"startingPosition": "TRIM_HORIZON", "consumerName": "rt-restart", **EFO}
    put("a", 60)
    query = start_real_time(reader(spark, ministack, stream_name, **options), out, checkpoint, "5 seconds")
    try:
        wait_for(lambda: len(committed_batches(checkpoint)) >= 1, query, what="a committed batch")
        put("b", 60)
        wait_for(lambda: len(rows_written(out)) >= 120, query, what="the second lot")
    finally:
        query.stop()  # in the middle of a batch: its offset is not logged
    unfinished_from = max(committed_batches(checkpoint)) + 1
    put("c", 60)
    query = start_real_time(reader(spark, ministack, stream_name, **options), out, checkpoint, "5 seconds")
    try:
        wait_for(lambda: {d for _, d in rows_written(out)} >= set(sent), query, what="every record after the restart")
        wait_for(lambda: max(committed_batches(checkpoint)) >= unfinished_from + 1, query, what="a batch after")
    finally:
        query.stop()
    check_exactly(rows_written(out), sent, may_repeat_from=unfinished_from)


@needs_real_time
def test_real_time_polling_reads_every_record_once(
    spark: Any, ministack: str, kinesis_client_factory: Any, stream_name: str, tmp_path: Path, jvm_cbor_disabled: None
) -> None:
    kinesis = kinesis_client_factory(ministack)
    out, checkpoint = stream_and_output(kinesis, stream_name, 2, tmp_path)
    sent = [f"p-{i}" for i in range(120)]
    df = reader(spark, ministack, stream_name, startingPosition="TRIM_HORIZON")
    query = start_real_time(df, out, checkpoint, "5 seconds")
    try:
        for i in range(0, 120, 20):
            put_plain(kinesis, stream_name, [(f"k{j}", sent[j]) for j in range(i, i + 20)])
            time.sleep(0.2)
        wait_for(lambda: len(rows_written(out)) >= 120, query, what="every record")
        wait_for(lambda: len(committed_batches(checkpoint)) >= 2, query, what="two committed batches")
    finally:
        query.stop()
    check_exactly(rows_written(out), sent)


@needs_real_time
@pytest.mark.parametrize("consumer", ["GetRecords", "SubscribeToShard"])
def test_real_time_split_and_merge_keep_every_record_and_the_order_of_each_key(
    spark: Any, kinesis_local: str, kinesis_client_factory: Any, stream_name: str, tmp_path: Path, consumer: str
) -> None:
    kinesis = kinesis_client_factory(kinesis_local)
    out, checkpoint = stream_and_output(kinesis, stream_name, 1, tmp_path)
    keys = [f"key-{k}" for k in range(8)]
    sent: list[str] = []
    sequence = Counter[str]()

    def put(n: int) -> None:
        batch = []
        for i in range(n):
            key = keys[i % len(keys)]
            batch.append((key, f"{key}#{sequence[key]}"))
            sequence[key] += 1
        put_plain(kinesis, stream_name, batch)
        sent.extend(d for _, d in batch)

    options = {"consumerType": consumer, "consumerName": "rt-reshard"} if consumer == "SubscribeToShard" else {}
    df = reader(spark, kinesis_local, stream_name, startingPosition="TRIM_HORIZON", **options)
    query = start_real_time(df, out, checkpoint, "5 seconds")
    try:
        put(40)
        wait_for(lambda: len(rows_written(out)) >= 40, query, what="the first lot")
        parent = kinesis.list_shards(StreamName=stream_name)["Shards"][0]["ShardId"]
        children = split_shard(kinesis, stream_name, parent)
        put(40)
        wait_for(lambda: len(rows_written(out)) >= 80, query, what="the records after the split")
        merge_shards(kinesis, stream_name, *sorted(children))
        put(40)
        wait_for(lambda: len(rows_written(out)) >= 120, query, what="the records after the merge")
    finally:
        query.stop()
    written = rows_written(out)
    check_exactly(written, sent)
    # A key lives in one shard per batch (parents and children are never read in one batch), and a task
    # writes its rows in shard order: by batch, then in file order, each key's records are in put order.
    by_key: dict[str, list[tuple[int, int]]] = {}
    for epoch, data in written:
        key, n = data.split("#")
        by_key.setdefault(key, []).append((epoch, int(n)))
    for key, seen in by_key.items():
        in_order = [n for _, n in sorted(seen, key=lambda r: r[0])]  # stable: keeps file order within a batch
        assert in_order == list(range(sequence[key])), f"{key} out of order: {in_order}"


@pytest.fixture(scope="module")
def tls_kinesis_local() -> Iterator[tuple[str, str]]:
    """(plain, https) endpoints of one kinesis-local: the sink's producer (the KPL) speaks only HTTPS."""
    with emulators.running("kinesis-local") as emulator:
        yield emulator.endpoint, emulator.tls_endpoint


@needs_real_time
@pytest.mark.parametrize("producer", ["KPL", "JAVA"])
def test_real_time_kinesis_to_kinesis_through_the_sink(
    spark: Any, tls_kinesis_local: tuple[str, str], stream_name: str, tmp_path: Path, producer: str
) -> None:
    """Both producers. The in-JVM one keeps the default buffering time (1 s): with few rows it sends at once."""
    from spark_kinesis import KinesisSink, KinesisSource, SinkProducer, StartingPosition

    plain, tls = tls_kinesis_local
    kinesis = emulators.kinesis_client(plain)
    source, target = stream_name, f"{stream_name}-out"
    create_stream(kinesis, source, 2)
    create_stream(kinesis, target, 1)
    sent = [f"event-{i}" for i in range(200)]
    events = KinesisSource(
        stream_name=source, endpoint_url=plain, region="us-east-1", starting_position=StartingPosition.trim_horizon()
    ).read_stream(spark)
    sink = KinesisSink(
        stream_name=target,
        endpoint_url=tls,
        region="us-east-1",
        verify_certificate=False,
        producer=SinkProducer(producer),
        record_max_buffered_time_ms=50 if producer == "KPL" else None,
    )
    enriched = events.selectExpr("CONCAT('seen:', CAST(data AS STRING)) AS data", "partitionKey")
    checkpoint = tmp_path / "chk"
    spark.conf.set(ALLOWLIST_CHECK_CONF, "true")
    with pytest.raises(ValueError, match=ALLOWLIST_CHECK_CONF):
        sink.write_stream(enriched, str(checkpoint), real_time="5 seconds")
    spark.conf.set(ALLOWLIST_CHECK_CONF, "false")
    query = sink.write_stream(enriched, str(checkpoint), real_time="5 seconds")
    shard = kinesis.list_shards(StreamName=target)["Shards"][0]["ShardId"]
    iterator = kinesis.get_shard_iterator(StreamName=target, ShardId=shard, ShardIteratorType="TRIM_HORIZON")[
        "ShardIterator"
    ]
    received: list[str] = []

    def drain() -> bool:
        nonlocal iterator
        response = kinesis.get_records(ShardIterator=iterator, Limit=1000)
        iterator = response["NextShardIterator"]
        received.extend(d.decode() for d in deaggregate(response["Records"]))
        return len(received) >= len(sent)

    try:
        put_plain(kinesis, source, [(f"k{i}", d) for i, d in enumerate(sent)])
        wait_for(drain, query, what="every record in the target stream")
        wait_for(lambda: len(committed_batches(checkpoint)) >= 1, query, what="a committed batch")
    finally:
        query.stop()
        spark.conf.unset(ALLOWLIST_CHECK_CONF)
    assert Counter(received) == Counter(f"seen:{d}" for d in sent)


class RealTimeWalk(Walk):
    """The stress walk of ``test_stress.py`` in real-time mode: puts, stops and restarts from the checkpoint,
    splits and merges at random, with at most two open shards (the session has two task slots, and every shard a
    batch reads holds one). A stop ends a batch that has not finished: its rows may be written again after the
    restart, and only its rows."""

    def __init__(self, *args: Any, out: Path, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.out = out
        self.unfinished: set[int] = set()

    def start(self) -> None:
        if self.query is None:
            df = reader(self.spark, self.endpoint, self.stream, **self.options)
            self.query = start_real_time(df, self.out, Path(self.checkpoint))
            self.log.append("start")

    def stop(self) -> None:
        if self.query is not None:
            self.query.stop()
            self.query = None
            checkpoint = Path(self.checkpoint)
            self.unfinished.add(max(committed_batches(checkpoint), default=-1) + 1)
            cleared = clear_interrupted_first_batch_writes(checkpoint)
            self.log.append(f"stop (removed {cleared}: stopped while batch 0 was being logged)" if cleared else "stop")

    def split(self) -> None:
        if len(open_shards(self.client, self.stream)) < 2:
            super().split()

    def check(self) -> None:
        self.start()
        try:
            wait_for(
                lambda: {d for _, d in rows_written(self.out)} >= set(self.put),
                self.query,
                what="all records",
            )
            check_exactly(rows_written(self.out), self.put, may_repeat_in=self.unfinished)
        except AssertionError as error:
            self.fail(str(error))
        self.log.append(f"check {len(self.put)}")


@needs_real_time
def test_real_time_random_walk_of_puts_restarts_and_reshards(
    spark: Any, kinesis_local: str, kinesis_client_factory: Any, stream_name: str, tmp_path: Path
) -> None:
    seed = walk_seed()
    client = kinesis_client_factory(kinesis_local)
    create_stream(client, stream_name, 1)
    out = tmp_path / "out"
    out.mkdir()
    options = {"startingPosition": "TRIM_HORIZON"}
    walk = RealTimeWalk(spark, kinesis_local, client, stream_name, str(tmp_path / "chk"), options, seed, out=out)
    walk.run(REAL_TIME_STEPS)
    kinds = Counter(entry.split()[0] for entry in walk.log)
    assert set(kinds) == {"add", "stop", "start", "split", "merge", "check"}, kinds
    print(f"STRESS_SEED={seed}: {len(walk.log)} steps, {dict(kinds)}")


@needs_real_time
def test_real_time_with_fewer_task_slots_than_shards_fails_naming_the_cause(
    spark: Any, ministack: str, kinesis_client_factory: Any, stream_name: str, tmp_path: Path, jvm_cbor_disabled: None
) -> None:
    """Three shards, two slots: the third shard's task starts only after its batch ended and reads nothing."""
    kinesis = kinesis_client_factory(ministack)
    out, checkpoint = stream_and_output(kinesis, stream_name, 3, tmp_path)
    put_plain(kinesis, stream_name, [(f"k{i}", f"r-{i}") for i in range(30)])
    query = start_real_time(reader(spark, ministack, stream_name, startingPosition="TRIM_HORIZON"), out, checkpoint)
    try:
        with pytest.raises(Exception) as failure:
            query.awaitTermination(120)
        assert "task slot per shard" in str(failure.value), str(failure.value)[:2000]
    finally:
        query.stop()
