"""Fault injection between the connector and the emulator: throttling, expired iterators, internal
errors and connections cut mid-response, on every API the polling source calls; refused, reset and
cut SubscribeToShard subscriptions over HTTP/2 for enhanced fan-out; and the emulator itself killed
and restarted while a query runs.

The faults come from the proxy in tests/harness/proxy.py, which answers in Kinesis' own JSON error
format (checked here against boto3, an independent AWS SDK). The query must keep running, back
off, and read every record exactly once.
"""

from __future__ import annotations

import http.client
import socket
import time
from collections import Counter

import botocore.exceptions
import pytest
from harness import emulators
from harness.kinesis import create_stream, list_shards, put_plain, read_shard
from streaming import BatchCollector, read_until, reader, start, stop, wait_batches, wait_for

pytestmark = pytest.mark.emulator


@pytest.mark.parametrize(
    ("kind", "code"),
    [
        ("throttle", "ProvisionedThroughputExceededException"),
        ("limit", "LimitExceededException"),
        ("expired", "ExpiredIteratorException"),
        ("internal", "InternalFailure"),
    ],
)
def test_injected_errors_are_real_kinesis_errors_to_an_sdk(kinesis_local, counting_proxy, kind, code):
    proxy = counting_proxy(kinesis_local)
    proxy.inject("ListStreams", kind)
    client = emulators.kinesis_client(proxy.url, attempts=2)
    with pytest.raises(botocore.exceptions.ClientError) as caught:
        client.list_streams()
    assert caught.value.response["Error"]["Code"] == code
    assert proxy.injected()[f"ListStreams:{kind}"] >= 1
    proxy.clear_faults()
    client.list_streams()


def test_cut_connection_breaks_off_inside_the_response_body(kinesis_local, counting_proxy):
    # Checked with http.client: boto3 happens to accept a truncated JSON body as an empty answer.
    proxy = counting_proxy(kinesis_local)
    proxy.inject("ListStreams", "cut")
    connection = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    connection.request(
        "POST",
        "/",
        body=b"{}",
        headers={"X-Amz-Target": "Kinesis_20131202.ListStreams", "Content-Type": "application/x-amz-json-1.1"},
    )
    response = connection.getresponse()
    with pytest.raises(http.client.IncompleteRead):
        response.read()
    assert proxy.injected() == {"ListStreams:cut": 1}


def test_query_survives_faults_on_every_polling_api(
    spark, kinesis_local, kinesis_client_factory, stream_name, stream_cleanup, counting_proxy, tmp_path
):
    client = kinesis_client_factory(kinesis_local)
    stream_cleanup(client, create_stream(client, stream_name, shards=3))
    expected = [f"f-{i:04d}" for i in range(600)]
    put_plain(client, stream_name, expected)

    proxy = counting_proxy(kinesis_local, seed=7)
    # Each kind the checks below require is injected on its operation's first calls, whatever the threads' timing;
    # the random shares after them come in an order that timing decides, so no check relies on them.
    proxy.inject("GetRecords", "throttle", times=1)
    proxy.inject("GetRecords", "expired", times=1)
    proxy.inject("GetRecords", "throttle", probability=0.25)
    proxy.inject("GetRecords", "expired", probability=0.1)
    proxy.inject("GetRecords", "internal", probability=0.05)
    proxy.inject("GetRecords", "cut", probability=0.05)
    proxy.inject("GetShardIterator", "throttle", times=1)  # surely the first call, then a random share
    proxy.inject("GetShardIterator", "throttle", probability=0.25)
    proxy.inject("GetShardIterator", "cut", probability=0.05)
    # The source lists shards only when a shard ends or a periodic check is due, a handful of calls in this run, so
    # the first listing is always refused (a random share alone could miss all of them); later ones by chance.
    proxy.inject("ListShards", "limit", times=1)
    proxy.inject("ListShards", "limit", probability=0.3)
    proxy.inject("DescribeStreamSummary", "limit", times=2)

    collector = read_until(
        spark,
        proxy.url,
        stream_name,
        str(tmp_path / "chk"),
        len(expected),
        startingPosition="TRIM_HORIZON",
        maxFetchRecordsPerShard="50",
        # A call is faulted with probability up to 0.45 here, far above anything Kinesis does; with the default 5
        # SDK retries one call in a few hundred fails every attempt, and one failed task ends a local-mode query
        # (no task retries). 10 retries make that vanishingly rare without hiding how each fault is handled.
        **{"getRecords.numberOfRecordsPerFetch": "20", "clientRetryIntervalsMs": "20", "clientNumRetries": "10"},
    )
    data = collector.data()
    injected = proxy.injected()
    print("injected faults:", injected)
    assert sorted(data) == expected, "records lost or repeated under faults"
    for operation in ("GetRecords:throttle", "GetRecords:expired", "GetShardIterator:throttle", "ListShards:limit"):
        assert injected.get(operation, 0) > 0, f"no {operation} fault was injected; the test proves nothing"


def test_efo_query_survives_faults_on_subscribe_to_shard_over_http2(
    spark, kinesis_local, kinesis_client_factory, stream_name, stream_cleanup, counting_proxy, tmp_path
):
    """Enhanced fan-out through the faulting proxy, over HTTP/2 (h2c prior knowledge, the connector's default and
    what AWS needs), as the EFO tests in test_efo_emulator.py run against kinesis-local.

    SubscribeToShard calls are refused with LimitExceededException and ResourceInUseException (answered by the
    proxy on the HTTP/2 stream, as Kinesis does), subscriptions are broken off after their first events (stream
    reset), and once the whole connection is closed under every live subscription. Records are put in rounds while
    the query runs, so that later records come in later events of renewed subscriptions.

    Seen with the connector's shaded AWS SDK: the stream reset reaches the connector as the normal end of a
    subscription (logged at INFO as "The service ended the subscription", renewed at once, not counted against
    kinesis.subscribeToShard.maxRetries), while the closed connection arrives as an IOException and counts as a
    retry. Either way the renewal starts after the last delivered event, which is what this test checks.
    """
    client = kinesis_client_factory(kinesis_local)
    stream_cleanup(client, create_stream(client, stream_name, shards=2))
    proxy = counting_proxy(kinesis_local, seed=11)
    # The first three subscriptions are refused, refused and cut right after their initial response, whatever the
    # timing; the random faults after them vary with the order of the calls, and no check relies on them.
    proxy.inject("SubscribeToShard", "limit", times=1)
    proxy.inject("SubscribeToShard", "in_use", times=1)
    proxy.inject("SubscribeToShard", "cut", times=1, after_frames=1)
    proxy.inject("SubscribeToShard", "limit", probability=0.4, times=2)
    proxy.inject("SubscribeToShard", "in_use", probability=0.4, times=2)
    proxy.inject("SubscribeToShard", "cut", probability=0.6, times=3, after_frames=2)
    proxy.inject("SubscribeToShard", "drop", probability=0.5, times=1, after_frames=3)

    expected: list[str] = []
    collector = BatchCollector()
    options = {
        "consumerType": "SubscribeToShard",
        "consumerName": "faulty",
        "startingPosition": "TRIM_HORIZON",
        "maxFetchRecordsPerShard": "40",
        "subscribeToShard.maxRetries": "20",
    }
    query = start(reader(spark, proxy.url, stream_name, **options), collector, str(tmp_path / "chk"))
    try:
        for round_number in range(4):
            records = [f"e{round_number}-{i:03d}" for i in range(100)]
            put_plain(client, stream_name, records)
            expected.extend(records)
            wait_for(lambda: len(collector.rows()) >= len(expected) - 60, query, what="rows")
        wait_for(lambda: len(collector.rows()) >= len(expected), query, what=f"{len(expected)} rows")
        wait_batches(query, 2)
    finally:
        stop(query)
    injected = proxy.injected()
    counts = proxy.counts()
    print("injected faults:", injected, "calls:", counts)
    assert Counter(collector.data()) == Counter(expected), "records lost or repeated under SubscribeToShard faults"
    assert counts.get("<http2>", 0) > 0, "SubscribeToShard did not go over HTTP/2"
    for kind in ("limit", "in_use", "cut"):
        assert injected.get(f"SubscribeToShard:{kind}", 0) > 0, f"no {kind} fault was injected; the test proves nothing"


# kinesis-local (kinesis-mock) writes its whole state (streams, shards, records with their sequence numbers,
# consumers) to a JSON file every PERSIST_INTERVAL and loads it when it starts, so a restart on the same port keeps
# the stream: checked in this test's first assertion. It does not exit on SIGTERM; the test kills it with SIGKILL,
# a crash, after which it knows what it had persisted at the last interval.
_PERSISTED_KINESIS_LOCAL = {
    "SHOULD_PERSIST_DATA": "true",
    "LOAD_DATA_IF_EXISTS": "true",
    "PERSIST_INTERVAL": "200ms",
}


@pytest.mark.parametrize("consumer", ["GetRecords", "SubscribeToShard"])
def test_emulator_killed_and_restarted_while_the_query_runs(spark, stream_name, tmp_path, consumer):
    """The emulator dies in the middle of a query (SIGKILL), its port refuses connections for a few seconds, and a
    new emulator process comes back on the same port with the persisted state.

    The query either rides it out (SDK retries, subscription renewals) or fails; the designed behaviour for a
    failure (docs/guide/delivery.md) is that a query started again on the same
    checkpoint replays the unfinished batch exactly and goes on. The output, kept per batch id as an idempotent sink
    would, must be exactly the records put, before and after the restart.
    """
    env = {**_PERSISTED_KINESIS_LOCAL, "PERSIST_PATH": str(tmp_path / "emulator-state")}
    emulator = emulators.start("kinesis-local", env=env)
    try:
        client = emulators.kinesis_client(emulator.endpoint)
        create_stream(client, stream_name, shards=2)
        expected = [f"before-{i:03d}" for i in range(400)]
        put_plain(client, stream_name, expected)
        time.sleep(1.0)  # several persist intervals: the records are on disk before the crash

        collector = BatchCollector()
        # 10 records per shard and batch: reading all 400 takes 20 batches of at least one 200 ms trigger each, so
        # the crash below always lands part way, however fast or slow the machine.
        options = {"startingPosition": "TRIM_HORIZON", "maxFetchRecordsPerShard": "10"}
        if consumer == "SubscribeToShard":
            options.update(consumerType=consumer, consumerName="restart", consumerDeregisterOnStop="false")
        checkpoint = str(tmp_path / "chk")
        query = start(reader(spark, emulator.endpoint, stream_name, **options), collector, checkpoint)
        failures: list[str] = []
        try:
            wait_for(lambda: len(collector.rows()) >= 20, query, what="the first rows")
            assert len(collector.rows()) < len(expected), "the query read everything before the crash"
            emulator.stop(timeout=0)  # SIGTERM and at once SIGKILL: the process dies where it stands
            down_at = time.monotonic()
            with pytest.raises(OSError):
                socket.create_connection(("127.0.0.1", emulator.port), timeout=2).close()
            time.sleep(4.0)  # the port stays closed: every call of the query fails to connect meanwhile
            emulator = emulators.start("kinesis-local", port=emulator.port, env=env)
            print(f"emulator down for {time.monotonic() - down_at:.1f}s")
            client = emulators.kinesis_client(emulator.endpoint)
            assert _stream_records(client, stream_name) == sorted(expected), "the emulator lost state in the restart"
            after = [f"after-{i:03d}" for i in range(100)]
            put_plain(client, stream_name, after)
            expected += after

            def caught_up() -> bool:
                nonlocal query
                if query.exception() is not None:  # failed: start it again on its checkpoint
                    failures.append(str(query.exception()).splitlines()[0])
                    query = start(reader(spark, emulator.endpoint, stream_name, **options), collector, checkpoint)
                return len(collector.rows()) >= len(expected)

            wait_for(caught_up, what=f"{len(expected)} rows")
            wait_batches(query, 2)
        finally:
            stop(query)
        print(f"query failures: {failures or 'none'}; batches: {len(collector.attempts)}")
        assert Counter(collector.data()) == Counter(expected), "records lost or repeated across the emulator restart"
    finally:
        emulator.stop(timeout=0)


def _stream_records(client, stream):
    """Every record's data in the stream, sorted (read with boto3, not with the connector)."""
    data = []
    for shard in list_shards(client, stream):
        records, _ = read_shard(client, stream, shard["ShardId"])
        data.extend(r["Data"].decode() for r in records)
    return sorted(data)


@pytest.mark.parametrize("producer", ["KPL", "JAVA"])
def test_sink_survives_throttled_and_cut_put_records(
    spark, ministack, kinesis_client_factory, stream_name, counting_proxy, producer, request
):
    """Both producers (kinesis.sink.producer). The KPL speaks only HTTPS: it reaches the faulting proxy through a TLS
    front (tests/harness/tls_front.py); the in-JVM producer goes the same way. The proxy answers a share of the
    PutRecords with ProvisionedThroughputExceeded or InternalFailure, and breaks off a few responses after ministack
    stored the records. Every row must land. A refused request stored nothing, so only the cut responses may leave
    duplicates (the producer sends those records again): at most the rows in them."""
    from harness import kpl
    from harness.tls_front import TlsFront

    if producer == "JAVA":
        request.getfixturevalue("jvm_cbor_disabled")  # ministack takes no CBOR, the AWS SDK's default for Kinesis
    client = kinesis_client_factory(ministack)
    create_stream(client, stream_name, 2)
    proxy = counting_proxy(ministack, seed=5)
    # The first two calls are refused once each way, so the check on both kinds holds whatever the KPL's batching.
    proxy.inject("PutRecords", "throttle", times=1)
    proxy.inject("PutRecords", "internal", times=1)
    proxy.inject("PutRecords", "throttle", probability=0.3)
    proxy.inject("PutRecords", "internal", probability=0.1)
    proxy.inject("PutRecords", "cut", probability=0.05, times=3)
    writes, per_write = 30, 100
    rows = writes * per_write
    options = {
        "kinesis.region": emulators.REGION,
        "kinesis.streamName": stream_name,
        "kinesis.sink.verifyCertificate": "false",
        "kinesis.sink.producer": producer,
    }
    with TlsFront(proxy.url) as front:
        # Many small writes: each ends with a flush, so there are many PutRecords calls for the faults to hit.
        for w in range(writes):
            df = spark.range(w * per_write, (w + 1) * per_write, 1, 2).selectExpr(
                "concat('k', CAST(id % 97 AS STRING)) AS partitionKey",
                "concat('sink-fault-', CAST(id AS STRING)) AS data",
            )
            df.write.format("aws-kinesis").mode("append").options(
                **options, **{"kinesis.endpointUrl": front.url}
            ).save()
    landed = kpl.user_records(client, stream_name)
    injected = proxy.injected()
    print("injected faults:", injected, "PutRecords calls:", proxy.count("PutRecords"))
    assert set(landed) == {f"sink-fault-{i}".encode() for i in range(rows)}, "rows lost under PutRecords faults"
    assert injected.get("PutRecords:throttle", 0) > 0 and injected.get("PutRecords:internal", 0) > 0, injected
    duplicates = len(landed) - rows
    # Each write waits for its acknowledgements before the next starts, so a PutRecords carries rows of one write
    # only: a cut response can have stored, and so duplicate, at most one write's rows.
    cuts = injected.get("PutRecords:cut", 0)
    assert 0 <= duplicates <= cuts * per_write, (duplicates, injected)
    print(f"duplicates: {duplicates} after {cuts} cut responses")
