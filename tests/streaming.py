"""Helpers to run the connector in a streaming query and collect what each batch saw."""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

FORMAT = "aws-kinesis"


@dataclass(frozen=True)
class Row:
    data: str
    partition_key: str
    sequence_number: str
    shard_id: str
    stream_name: str
    arrival_ms: int


@dataclass
class BatchCollector:
    """A ``foreachBatch`` function that keeps every batch's rows by batch id.

    A replayed batch id replaces the earlier rows (the idempotent-sink pattern), and every attempt is
    also kept in ``attempts`` so a test can compare a batch with its replay.
    """

    batches: dict[int, list[Row]] = field(default_factory=dict)
    attempts: list[tuple[int, list[Row]]] = field(default_factory=list)
    fail_batch: int | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, df: Any, batch_id: int) -> None:
        rows = [
            Row(
                bytes(r["data"]).decode("utf-8"),
                r["partitionKey"],
                r["sequenceNumber"],
                r["shardId"],
                r["streamName"],
                int(r["arrival_ms"]),
            )
            for r in df.selectExpr(
                "data",
                "partitionKey",
                "sequenceNumber",
                "shardId",
                "streamName",
                "CAST(unix_millis(approximateArrivalTimestamp) AS BIGINT) AS arrival_ms",
            ).collect()
        ]
        with self.lock:
            self.attempts.append((batch_id, rows))
            if self.fail_batch == batch_id:
                self.fail_batch = None
                raise RuntimeError(f"injected failure in batch {batch_id}")
            self.batches[batch_id] = rows

    def rows(self) -> list[Row]:
        with self.lock:
            return [row for batch_id in sorted(self.batches) for row in self.batches[batch_id]]

    def data(self) -> list[str]:
        return [row.data for row in self.rows()]


def _load(r: Any, endpoint: str, stream: str, options: dict[str, str]) -> Any:
    r = r.option("kinesis.endpointUrl", endpoint).option("kinesis.region", "us-east-1")
    r = r.option("kinesis.streamName", stream)
    for key, value in options.items():
        r = r.option(key if key.startswith("kinesis.") else f"kinesis.{key}", value)
    return r.load()


def reader(spark: Any, endpoint: str, stream: str, **options: str) -> Any:
    """A streaming read of ``stream``; ``options`` are ``kinesis.*`` keys, the prefix optional."""
    return _load(spark.readStream.format(FORMAT), endpoint, stream, options)


def batch_read(spark: Any, endpoint: str, stream: str, **options: str) -> Any:
    """A batch read of ``stream`` under the awslabs format name; ``options`` as for :func:`reader`."""
    return _load(spark.read.format("aws-kinesis"), endpoint, stream, options)


def start(df: Any, collector: BatchCollector, checkpoint: str, trigger_ms: int = 200) -> Any:
    return (
        df.writeStream.foreachBatch(collector)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime=f"{trigger_ms} milliseconds")
        .start()
    )


def wait_for(
    condition: Callable[[], bool], query: Any | None = None, timeout: float = 300.0, what: str = "condition"
) -> None:
    """Wait until ``condition()`` holds, failing at once when ``query`` fails. ``timeout`` only guards against a
    hang: it is far above what any wait takes on a quiet machine, so a machine busy with other work passes too."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if query is not None and query.exception() is not None:
            raise AssertionError(f"query failed while waiting for {what}: {query.exception()}")
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def wait_batches(query: Any, count: int, timeout: float = 300.0) -> None:
    """Wait until the query has completed ``count`` more batches than it had, or has caught up: a batch after the
    current one found no new record.

    At the defaults (``kinesis.avoidEmptyBatches``) a caught-up query runs no further batch until a record arrives,
    so the batch that found nothing is the last one there is to wait for; Spark's progress report of an idle
    trigger (every 10 s, with the next batch's id) counts as one that found nothing too.
    """
    base = query.lastProgress["batchId"] if query.lastProgress else -1

    def done() -> bool:
        later = [p for p in query.recentProgress if p["batchId"] > base]
        return len({p["batchId"] for p in later}) >= count or any(p["numInputRows"] == 0 for p in later)

    wait_for(done, query, timeout, f"{count} batches, or one that found nothing new")


def stop(query: Any) -> None:
    """Stop the query, between batches where one comes within 10 s.

    A Python ``foreachBatch`` interrupted mid-batch reports the interruption as the query's failure. Behind a backlog
    a loaded machine may leave no gap between batches, so that failure is accepted here: the interrupted batch was
    not committed, and a restart runs it again. Any other failure is raised.
    """
    deadline = time.monotonic() + 10
    while query.isActive and query.status["isTriggerActive"] and time.monotonic() < deadline:
        time.sleep(0.05)
    query.stop()
    try:
        query.awaitTermination(60)
    except Exception as error:
        if not any(word in str(error) for word in ("Interrupted", "interrupted", "cancelled")):
            raise


def read_until(
    spark: Any,
    endpoint: str,
    stream: str,
    checkpoint: str,
    rows: int,
    collector: BatchCollector | None = None,
    **options: str,
) -> BatchCollector:
    """Run a query until it has seen ``rows`` rows and two more batches (nothing late), then stop it."""
    collector = collector if collector is not None else BatchCollector()
    query = start(reader(spark, endpoint, stream, **options), collector, checkpoint)
    try:
        wait_for(lambda: len(collector.rows()) >= rows, query, what=f"{rows} rows")
        wait_batches(query, 2)
    finally:
        stop(query)
    return collector


def round_trips(
    spark: Any, endpoint: str, kinesis: Any, stream: str, checkpoint: str, rounds: int, **options: str
) -> list[float]:
    """Put-to-row seconds of ``rounds`` records put one at a time into an otherwise idle stream (100 ms trigger).

    Each record is put as soon as the previous one's row reached ``foreachBatch``, so every record finds the query
    just after a batch that found a record. A first record, put and awaited before, warms the query up.
    """
    seen: dict[str, float] = {}
    arrived = threading.Condition()

    def sink(df: Any, _batch_id: int) -> None:
        data = [bytes(r["data"]).decode("utf-8") for r in df.select("data").collect()]
        with arrived:
            seen.update((d, time.monotonic()) for d in data)
            arrived.notify_all()

    def put_and_wait(data: str, query: Any) -> float:
        kinesis.put_record(StreamName=stream, PartitionKey=data, Data=data.encode())
        put_at = time.monotonic()
        deadline = put_at + 60
        with arrived:
            while data not in seen:
                if query.exception() is not None:
                    raise AssertionError(f"query failed: {query.exception()}")
                if time.monotonic() > deadline:
                    raise AssertionError(f"{data} not read within 60 s")
                arrived.wait(0.5)
            return seen[data] - put_at

    query = (
        reader(spark, endpoint, stream, **options)
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="100 milliseconds")
        .start()
    )
    try:
        put_and_wait("warm-up", query)
        return [put_and_wait(f"ping-{i}", query) for i in range(rounds)]
    finally:
        stop(query)


WALK_SEED = 20261128


def walk_seed() -> int:
    """The seed of a random walk: ``STRESS_SEED`` from the environment (a number, or ``random`` for a new walk each
    run), else the fixed ``WALK_SEED``, so that the suite takes the same steps every run and never passes by luck."""
    given = os.environ.get("STRESS_SEED", str(WALK_SEED))
    seed = random.randrange(1 << 31) if given == "random" else int(given)
    print(f"STRESS_SEED={seed}")
    return seed
