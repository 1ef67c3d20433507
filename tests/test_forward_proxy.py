"""The connector behind an HTTP proxy with Basic authentication: polling and fan-out reads, and writes
(the KPL's native process and the driver's check of the stream), through a real forward proxy on
loopback (:mod:`harness.forward_proxy`) in front of kinesis-local.

The endpoint URLs name a host that only the proxy resolves (``kinesis.via-proxy.test``), so a call
that bypassed the proxy could not reach the emulator at all; the proxy counts what it carried. The
KPL speaks TLS to kinesis-local's TLS port through CONNECT tunnels; its proxy password stays in the
JVM (a loopback relay adds it), so the native process's command line carries none of it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import emulators
from harness.forward_proxy import ForwardProxy
from harness.jvm import producer_processes
from harness.kinesis import create_stream, put_plain, read_shard
from streaming import BatchCollector, start, stop, wait_for

pytestmark = pytest.mark.emulator

HOST = "kinesis.via-proxy.test"
USER = "spark-job"
PASSWORD = f"proxy-pw-{os.urandom(5).hex()}"


@pytest.fixture(scope="module")
def emulator() -> Iterator[emulators.Emulator]:
    """A kinesis-local of this module's own: its TLS port is for the sink's KPL. Killed after 1 s when it does
    not stop at once (node takes 10 s to end on SIGTERM; its data is thrown away anyway)."""
    emu = emulators.start("kinesis-local")
    try:
        yield emu
    finally:
        emu.stop(timeout=1.0)


@pytest.fixture(scope="module")
def proxy() -> Iterator[ForwardProxy]:
    with ForwardProxy(USER, PASSWORD, aliases={HOST: "127.0.0.1"}) as p:
        yield p


@pytest.fixture
def kinesis(emulator: emulators.Emulator) -> Any:
    """A boto3 client that talks to the emulator directly (never through the proxy)."""
    return emulators.kinesis_client(emulator.endpoint)


def _via_proxy(url: str) -> str:
    """The emulator's URL with the host only the proxy resolves."""
    return url.replace("127.0.0.1", HOST)


def _proxy_options(proxy: ForwardProxy, *, password: str = PASSWORD, family: str = "kinesis.") -> dict[str, str]:
    return {
        f"{family}proxyAddress": proxy.host,
        f"{family}proxyPort": str(proxy.port),
        f"{family}proxyUsername": USER,
        f"{family}proxyPassword": password,
    }


def _read_options(emulator: emulators.Emulator, stream: str, **extra: str) -> dict[str, str]:
    return {
        "kinesis.endpointUrl": _via_proxy(emulator.endpoint),
        "kinesis.region": emulators.REGION,
        "kinesis.streamName": stream,
        "kinesis.startingPosition": "TRIM_HORIZON",
        **extra,
    }


def _expected_authorization() -> str:
    import base64

    return "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()


def test_polling_read_goes_through_the_proxy(
    spark: Any, emulator: emulators.Emulator, proxy: ForwardProxy, kinesis: Any, stream_name: str
) -> None:
    create_stream(kinesis, stream_name, 2)
    sent = [f"polled-{i}" for i in range(40)]
    put_plain(kinesis, stream_name, sent)
    proxy.reset()
    options = _read_options(emulator, stream_name, **_proxy_options(proxy))
    rows = spark.read.format("aws-kinesis").options(**options).load().selectExpr("CAST(data AS STRING) AS d")
    assert sorted(r["d"] for r in rows.collect()) == sorted(sent)
    counts = proxy.counts()
    print(f"\nproxy counts for a polling batch read of 40 records on 2 shards: {dict(counts)}")
    assert counts["GetRecords"] >= 2 and counts["ListShards"] >= 1, counts
    assert counts["407"] == 0
    assert set(proxy.authorizations) == {_expected_authorization()}


def test_fan_out_read_goes_through_the_proxy(
    spark: Any, emulator: emulators.Emulator, proxy: ForwardProxy, kinesis: Any, stream_name: str, tmp_path: Path
) -> None:
    """The consumer calls (Apache client) are forwarded requests; SubscribeToShard (Netty, h2c) goes through a
    CONNECT tunnel to the plain port."""
    create_stream(kinesis, stream_name, 1)
    sent = [f"pushed-{i}" for i in range(10)]
    put_plain(kinesis, stream_name, sent)
    proxy.reset()
    options = _read_options(
        emulator,
        stream_name,
        # Without the driver's idle probes (kinesis.avoidEmptyBatches, on by default, calls GetRecords once the
        # stream is idle), a fan-out read makes no GetRecords call at all.
        **{
            "kinesis.consumerType": "SubscribeToShard",
            "kinesis.consumerName": "via-proxy",
            "kinesis.avoidEmptyBatches": "false",
        },
        **_proxy_options(proxy),
    )
    collector = BatchCollector()
    df = spark.readStream.format("aws-kinesis").options(**options).load()
    query = start(df, collector, str(tmp_path / "chk"))
    try:
        wait_for(lambda: len(collector.rows()) >= len(sent), query, what="10 rows")
    finally:
        stop(query)
    assert sorted(collector.data()) == sorted(sent)
    counts = proxy.counts()
    print(f"\nproxy counts for a fan-out read of 10 records: {dict(counts)}")
    assert counts["RegisterStreamConsumer"] == 1 and counts["DescribeStreamConsumer"] >= 1, counts
    assert counts[f"CONNECT {HOST}:{emulator.port}"] >= 1, counts
    assert counts["GetRecords"] == 0 and counts["407"] == 0, counts


def test_write_goes_through_the_proxy_and_keeps_the_password_off_the_command_line(
    spark: Any, emulator: emulators.Emulator, proxy: ForwardProxy, kinesis: Any, stream_name: str
) -> None:
    """With the awslabs names of the options. The driver's DescribeStreamSummary (Apache) and the KPL's
    requests (through the relay) both open CONNECT tunnels to the TLS port."""
    create_stream(kinesis, stream_name, 1)
    proxy.reset()
    jvm_pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
    before = set(producer_processes(jvm_pid))
    rows = [(f"key-{i}", f"written-{i}") for i in range(30)]
    df = spark.createDataFrame(rows, "partitionKey STRING, data STRING")
    options = {
        "kinesis.endpointUrl": _via_proxy(emulator.tls_endpoint),
        "kinesis.region": emulators.REGION,
        "kinesis.streamName": stream_name,
        "kinesis.sink.verifyCertificate": "false",
        "kinesis.sink.aggregationEnabled": "false",
        **_proxy_options(proxy, family="kinesis.sink."),
    }
    df.write.format("aws-kinesis").mode("append").options(**options).save()
    shard = kinesis.list_shards(StreamName=stream_name)["Shards"][0]["ShardId"]
    landed, _ = read_shard(kinesis, stream_name, shard)
    assert sorted(r["Data"].decode() for r in landed) == sorted(d for _, d in rows)
    counts = proxy.counts()
    print(f"\nproxy counts for a write of 30 rows: {dict(counts)}")
    tls_port = emulator.tls_endpoint.rsplit(":", 1)[1]
    assert counts[f"CONNECT {HOST}:{tls_port}"] >= 2, counts
    assert counts["407"] == 0 and set(proxy.authorizations) == {_expected_authorization()}
    started = set(producer_processes(jvm_pid)) - before
    assert len(started) == 1, f"expected one new kinesis_producer for the proxied write, got {started}"
    cmdline = Path(f"/proc/{started.pop()}/cmdline").read_bytes().lower()
    for form in (PASSWORD.encode(), PASSWORD.encode().hex().encode()):
        assert form not in cmdline, "the native process's command line carries the proxy password"
    assert USER.encode().hex().encode() not in cmdline and b"127.0.0.1".hex().encode() in cmdline


def test_java_producer_writes_through_the_proxy_and_starts_no_native_process(
    spark: Any, emulator: emulators.Emulator, proxy: ForwardProxy, kinesis: Any, stream_name: str
) -> None:
    """kinesis.sink.producer=JAVA with the kinesis.proxy* options: the in-JVM producer's Netty client tunnels to
    the TLS port through the proxy with its Basic credentials, as the source's clients do, and no kinesis_producer
    process starts."""
    from harness import kpl

    create_stream(kinesis, stream_name, 2)
    proxy.reset()
    jvm_pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
    before = set(producer_processes(jvm_pid))
    rows = [(f"key-{i % 40}", f"java-{i}") for i in range(300)]
    options = {
        "kinesis.endpointUrl": _via_proxy(emulator.tls_endpoint),
        "kinesis.region": emulators.REGION,
        "kinesis.streamName": stream_name,
        "kinesis.sink.producer": "JAVA",
        "kinesis.sink.verifyCertificate": "false",
        **_proxy_options(proxy),
    }
    spark.createDataFrame(rows, "partitionKey STRING, data STRING").write.format("aws-kinesis").mode("append").options(
        **options
    ).save()
    landed = []
    for shard in kinesis.list_shards(StreamName=stream_name)["Shards"]:
        records, _ = read_shard(kinesis, stream_name, shard["ShardId"])
        for r in records:
            data = bytes(r["Data"])
            landed += [u.data.decode() for u in kpl.decode(data)] if kpl.is_aggregated(data) else [data.decode()]
    assert sorted(landed) == sorted(d for _, d in rows)
    counts = proxy.counts()
    print(f"\nproxy counts for a JAVA write of 300 rows: {dict(counts)}")
    tls_port = emulator.tls_endpoint.rsplit(":", 1)[1]
    assert counts[f"CONNECT {HOST}:{tls_port}"] >= 2, counts
    assert counts["407"] == 0 and set(proxy.authorizations) == {_expected_authorization()}
    assert set(producer_processes(jvm_pid)) - before == set()


def test_a_wrong_password_fails_clearly(
    spark: Any, emulator: emulators.Emulator, proxy: ForwardProxy, kinesis: Any, stream_name: str
) -> None:
    create_stream(kinesis, stream_name, 1)
    proxy.reset()
    wrong = _proxy_options(proxy, password="not-the-password")
    options = _read_options(emulator, stream_name, **wrong, **{"kinesis.clientNumRetries": "0"})
    started = time.monotonic()
    with pytest.raises(Exception) as error:
        spark.read.format("aws-kinesis").options(**options).load().count()
    message = str(error.value)
    assert "407 Proxy Authentication Required" in message and f"user '{USER}'" in message, message
    assert "kinesis.proxyPassword" in message and "not-the-password" not in message
    write = {
        "kinesis.endpointUrl": _via_proxy(emulator.tls_endpoint),
        "kinesis.region": emulators.REGION,
        "kinesis.streamName": stream_name,
        "kinesis.sink.verifyCertificate": "false",
        "kinesis.clientNumRetries": "0",
        **_proxy_options(proxy, password="not-the-password", family="kinesis.sink."),
    }
    df = spark.createDataFrame([("k", "v")], "partitionKey STRING, data STRING")
    with pytest.raises(Exception) as error:
        df.write.format("aws-kinesis").mode("append").options(**write).save()
    assert "407 Proxy Authentication Required" in str(error.value), str(error.value)
    assert time.monotonic() - started < 60
    assert proxy.counts()["407"] >= 2


def test_write_by_stream_arn(spark: Any, emulator: emulators.Emulator, kinesis: Any, stream_name: str) -> None:
    """``kinesis.streamArn`` on a write: the region comes from the ARN, the driver's check asks by ARN, and the rows
    land. An ARN of another account is refused before any row: the KPL writes by name, in its credentials' account."""
    create_stream(kinesis, stream_name, 1)
    arn = kinesis.describe_stream_summary(StreamName=stream_name)["StreamDescriptionSummary"]["StreamARN"]
    df = spark.createDataFrame([(f"k{i}", f"by-arn-{i}") for i in range(5)], "partitionKey STRING, data STRING")
    options = {
        "kinesis.endpointUrl": emulator.tls_endpoint,
        "kinesis.streamArn": arn,
        "kinesis.sink.verifyCertificate": "false",
        "kinesis.sink.aggregationEnabled": "false",
    }
    df.write.format("aws-kinesis").mode("append").options(**options).save()
    shard = kinesis.list_shards(StreamName=stream_name)["Shards"][0]["ShardId"]
    landed, _ = read_shard(kinesis, stream_name, shard)
    assert sorted(r["Data"].decode() for r in landed) == [f"by-arn-{i}" for i in range(5)]

    other_account = arn.replace(arn.split(":")[4], "111122223333")
    with pytest.raises(Exception) as error:
        df.write.format("aws-kinesis").mode("append").options(**{**options, "kinesis.streamArn": other_account}).save()
    message = str(error.value)
    assert "account 111122223333" in message, message
    assert "cannot write to another account's stream" in message
    landed, _ = read_shard(kinesis, stream_name, shard)
    assert len(landed) == 5, "nothing was written for the refused ARN"
