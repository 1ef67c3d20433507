"""Resources that are released: many queries, one after another, leave the Spark JVM as they found it.

Each query reads a few records from ministack and writes them back through the sink (the real KPL, over a TLS
front), with its own static keys for both, so every query needs its own credentials provider, Kinesis client,
DynamoDB client (its metadata lives in DynamoDB) and KPL producer with its native process. Once the queries
have stopped and the connector's idle grace period has passed (shortened here with the JVM system property
``io.sparkkinesis.resourceIdleMs``), the Spark JVM's threads, open file descriptors, TCP connections and
``kinesis_producer`` child processes must be back where they were after the first query, not grow with the
number of queries. Local mode: the driver is the executor, so both sides are measured in one JVM.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from harness import emulators, kpl
from harness.jvm import Usage, thread_names, usage
from harness.kinesis import create_stream, put_plain
from harness.tls_front import TlsFront
from streaming import reader, stop, wait_for

pytestmark = pytest.mark.emulator

QUERIES = 20
RECORDS = 5
IDLE_MS = 2000
IDLE_PROPERTY = "io.sparkkinesis.resourceIdleMs"

# What may differ between the first and the last measurement without anything leaking: Spark's own thread pools
# grow and shrink a little, and a socket or a file may be open for a moment.
THREAD_SLACK = 8
# Spark's block manager pools and the JDK's process reapers are cached thread pools whose idle threads end after
# 60 s: the last measurement waits that long for them before it counts threads as kept by the connector.
SETTLE_TIMEOUT = 90
FD_SLACK = 12
TCP_SLACK = 3


def within(current: Usage, baseline: Usage) -> bool:
    return (
        current.threads <= baseline.threads + THREAD_SLACK
        and current.fds <= baseline.fds + FD_SLACK
        and current.tcp <= baseline.tcp + TCP_SLACK
        and current.producers <= baseline.producers
    )


def settled(pid: int, baseline: Usage | None, timeout: float, producers: int | None = None) -> Usage:
    """The usage once the grace period has passed (and closing took its time): the first one within ``baseline``
    with at most ``producers`` KPL processes (or the last one seen)."""
    time.sleep(IDLE_MS / 1000 + 3)
    deadline = time.monotonic() + timeout

    def done(current: Usage) -> bool:
        return within(current, baseline) and (producers is None or current.producers <= producers)

    current = usage(pid)
    while baseline is not None and not done(current) and time.monotonic() < deadline:
        time.sleep(1)
        current = usage(pid)
    return current


def run_query(
    spark: Any, ministack: str, front: str, source: str, sink: str, table: str, checkpoint: str, index: int
) -> None:
    """One query with its own keys: reads the source stream's records and writes them to the sink stream."""
    keys = {"kinesis.awsAccessKeyId": f"AKIARES{index:05d}", "kinesis.awsSecretKey": f"secret-{uuid.uuid4().hex}"}
    df = reader(
        spark,
        ministack,
        source,
        startingPosition="TRIM_HORIZON",
        metadataCommitterType="DYNAMODB",
        **{"dynamodb.tableName": table, "dynamodb.endpointUrl": ministack},
        **keys,
    ).selectExpr("partitionKey", f"concat(data, cast('|q{index}' AS BINARY)) AS data")
    writer = (
        df.writeStream.format("aws-kinesis")
        .option("checkpointLocation", checkpoint)
        .option("kinesis.endpointUrl", front)
        .option("kinesis.region", emulators.REGION)
        .option("kinesis.streamName", sink)
        .option("kinesis.sink.verifyCertificate", "false")
        .options(**keys)
        .trigger(processingTime="200 milliseconds")
    )
    query = writer.start()
    try:
        wait_for(
            lambda: sum(p["numInputRows"] for p in query.recentProgress) >= RECORDS,
            query,
            what=f"query {index} to write {RECORDS} rows",
        )
    finally:
        stop(query)
    assert query.exception() is None, query.exception()


def test_resources_of_stopped_queries_are_released(
    spark: Any, ministack: str, jvm_cbor_disabled: None, aws_client_factory: Any, tmp_path: Any
) -> None:
    kinesis = aws_client_factory("kinesis", ministack)
    source, sink = f"res-in-{uuid.uuid4().hex[:8]}", f"res-out-{uuid.uuid4().hex[:8]}"
    create_stream(kinesis, source, 1)
    create_stream(kinesis, sink, 1)
    put_plain(kinesis, source, [(f"k{i}", f"rec-{i}") for i in range(RECORDS)])
    table = f"res-meta-{uuid.uuid4().hex[:8]}"

    system = spark._jvm.java.lang.System
    previous = system.getProperty(IDLE_PROPERTY)
    system.setProperty(IDLE_PROPERTY, str(IDLE_MS))
    pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
    measured: list[tuple[int, Usage]] = []
    names = []
    # Producers that earlier tests of this Spark JVM left open within their own (default) grace period.
    before = usage(pid)
    try:
        with TlsFront(ministack) as front:
            for index in range(QUERIES):
                run_query(spark, ministack, front.url, source, sink, table, str(tmp_path / f"chk-{index}"), index)
                if index == 0:
                    measured.append((1, settled(pid, None, 0)))
                    names.append(thread_names(pid))
            last = settled(pid, measured[0][1], timeout=SETTLE_TIMEOUT, producers=before.producers)
            measured.append((QUERIES, last))
            names.append(thread_names(pid))
    finally:
        if previous is None:
            system.clearProperty(IDLE_PROPERTY)
        else:
            system.setProperty(IDLE_PROPERTY, previous)
    for queries, use in measured:
        print(f"after {queries} queries: {use}")

    # Every query wrote every record (through its own producer, with its own keys).
    written = set(kpl.user_records(kinesis, sink))
    assert written == {f"rec-{i}|q{q}".encode() for i in range(RECORDS) for q in range(QUERIES)}

    (_, first), (_, last) = measured
    assert last.producers <= before.producers, f"KPL native processes of these queries still running: {last}"
    assert within(last, first), (
        f"resources grew with the number of queries: after 1 {first}, after {QUERIES} {last}; "
        f"threads that grew: {names[1] - names[0]}"
    )
