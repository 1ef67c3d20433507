"""Fault injection between the connector and the emulator: throttling, expired iterators, internal
errors and connections cut mid-response, on every API the polling source calls.

The faults come from the proxy in tests/harness/proxy.py, which answers in Kinesis' own JSON error
format (checked here against boto3, an independent AWS SDK). The query must keep running, back
off, and read every record exactly once.
"""

from __future__ import annotations

import http.client
from collections import Counter

import botocore.exceptions
import pytest
from harness import emulators
from harness.kinesis import create_stream, put_plain
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
    proxy.inject("GetRecords", "throttle", probability=0.25)
    proxy.inject("GetRecords", "expired", probability=0.1)
    proxy.inject("GetRecords", "internal", probability=0.05)
    proxy.inject("GetRecords", "cut", probability=0.05)
    proxy.inject("GetShardIterator", "throttle", probability=0.25)
    proxy.inject("GetShardIterator", "cut", probability=0.05)
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
        **{"getRecords.numberOfRecordsPerFetch": "20", "clientRetryIntervalsMs": "20"},
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
    """
    client = kinesis_client_factory(kinesis_local)
    stream_cleanup(client, create_stream(client, stream_name, shards=2))
    proxy = counting_proxy(kinesis_local, seed=11)
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
            wait_for(lambda: len(collector.rows()) >= len(expected) - 60, query, timeout=60, what="rows")
        wait_for(lambda: len(collector.rows()) >= len(expected), query, timeout=60, what=f"{len(expected)} rows")
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
