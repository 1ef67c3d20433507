"""Enhanced fan-out consumers end to end on kinesis-local: several streams in one source (one consumer per stream),
consumers the query does not own (``kinesis.consumerArn``), and tags on registration.

Emulator findings these tests rely on (kinesis-local 0.6.2, checked with boto3):

* RegisterStreamConsumer accepts ``Tags`` but does not store them: ListTagsForResource on the consumer's ARN answers
  no tags. The tags' way to Kinesis is therefore checked on the wire (``RetryLevelsSuite``: the SDK client against a
  loopback endpoint that keeps the request body); here, only that a registration with tags succeeds.
* SubscribeToShard with the ARN of a consumer that does not exist answers ResourceNotFoundException naming the
  consumer's ARN; a consumer not yet ACTIVE answers ResourceInUseException "... is not in an ACTIVE state".
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from harness.kinesis import create_stream, put_plain, unique_stream_name
from streaming import BatchCollector, reader, start, stop, wait_batches, wait_for

pytestmark = pytest.mark.emulator

EFO = {"consumerType": "SubscribeToShard", "startingPosition": "TRIM_HORIZON"}
CONSUMER_CALLS = ("RegisterStreamConsumer", "DescribeStreamConsumer", "DeregisterStreamConsumer", "ListStreamConsumers")


def _stream_arn(kinesis: Any, stream: str) -> str:
    arn: str = kinesis.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]["StreamARN"]
    return arn


def _consumers(kinesis: Any, stream: str) -> list[dict[str, Any]]:
    listed = kinesis.list_stream_consumers(StreamARN=_stream_arn(kinesis, stream))["Consumers"]
    return [c for c in listed if c["ConsumerStatus"] != "DELETING"]


def _register(kinesis: Any, stream: str, name: str) -> str:
    """Registers a consumer the way an operator would (not through the connector) and waits until it is ACTIVE."""
    arn: str = kinesis.register_stream_consumer(StreamARN=_stream_arn(kinesis, stream), ConsumerName=name)["Consumer"][
        "ConsumerARN"
    ]
    deadline = time.monotonic() + 30
    while kinesis.describe_stream_consumer(ConsumerARN=arn)["ConsumerDescription"]["ConsumerStatus"] != "ACTIVE":
        assert time.monotonic() < deadline, f"consumer {arn} did not become ACTIVE"
        time.sleep(0.2)
    return arn


class _Producer:
    """Puts 10 numbered records into each stream every 50 ms until stopped; ``sent[stream]`` is what it wrote."""

    def __init__(self, kinesis: Any, streams: list[str]) -> None:
        self.kinesis, self.streams = kinesis, streams
        self.sent: dict[str, list[str]] = {s: [] for s in streams}
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        n = 0
        while not self.stopping.is_set():
            for stream in self.streams:
                batch = [f"live-{n + i}" for i in range(10)]
                put_plain(self.kinesis, stream, batch)
                self.sent[stream].extend(batch)
            n += 10
            time.sleep(0.05)

    def __enter__(self) -> _Producer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.thread.join(30)


def test_two_streams_over_fan_out_every_record_once_under_a_live_producer_and_across_a_restart(
    spark: Any, kinesis_local: str, kinesis: Any, stream_cleanup: Any, tmp_path: Any, counting_proxy: Any
) -> None:
    """One source, two streams (2 and 1 shards), one consumer of the same name on each: a live producer writes to
    both while the query runs, is stopped and restarted from its checkpoint. Every record of each stream is read
    exactly once, by SubscribeToShard only; the consumers are registered on both streams and deregistered."""
    a = stream_cleanup(kinesis, unique_stream_name("efo-multi-a"))
    b = stream_cleanup(kinesis, unique_stream_name("efo-multi-b"))
    create_stream(kinesis, a, 2)
    create_stream(kinesis, b, 1)
    proxy = counting_proxy(kinesis_local)
    collector = BatchCollector()
    checkpoint = str(tmp_path / "chk")
    # Without the driver's idle probes (kinesis.avoidEmptyBatches, on by default, calls GetRecords while idle), the
    # fan-out reader makes no polling call.
    options = {**EFO, "consumerName": "multi-reader", "maxFetchRecordsPerShard": "50", "avoidEmptyBatches": "false"}

    def of(stream: str) -> Counter[str]:
        return Counter(r.data for r in collector.rows() if r.stream_name == stream)

    with _Producer(kinesis, [a, b]) as producer:
        query = start(reader(spark, proxy.url, f"{a},{b}", **options), collector, checkpoint)
        try:
            wait_for(lambda: len(of(a)) >= 100 and len(of(b)) >= 100, query, what="rows of both")
            assert {c["ConsumerName"] for s in (a, b) for c in _consumers(kinesis, s)} == {"multi-reader"}
            assert len(_consumers(kinesis, a)) == 1 == len(_consumers(kinesis, b))
        finally:
            stop(query)
        first_run = len(collector.rows())
        query = start(reader(spark, proxy.url, f"{a},{b}", **options), collector, checkpoint)
        try:
            wait_for(lambda: len(collector.rows()) > first_run + 50, query, what="rows after restart")
            producer.stopping.set()
            producer.thread.join(30)
            wait_for(
                lambda: of(a) == Counter(producer.sent[a]) and of(b) == Counter(producer.sent[b]),
                query,
                what="every record of both streams",
            )
            wait_batches(query, 2)
        finally:
            stop(query)
    assert of(a) == Counter(producer.sent[a]) and of(b) == Counter(producer.sent[b]), "each record exactly once"
    assert {r.shard_id for r in collector.rows() if r.stream_name == a} == {
        "shardId-000000000000",
        "shardId-000000000001",
    }
    counts = proxy.counts()
    print(f"records: {len(producer.sent[a])} + {len(producer.sent[b])}; API calls: {counts}")
    assert counts.get("GetRecords", 0) == 0 and counts.get("GetShardIterator", 0) == 0, counts
    # Each run registers the consumer of each stream on start and deregisters it on stop: 2 streams, 2 runs.
    assert counts.get("RegisterStreamConsumer", 0) == 4 == counts.get("DeregisterStreamConsumer", 0), counts
    assert _consumers(kinesis, a) == [] == _consumers(kinesis, b)


def test_consumer_arns_read_with_no_consumer_call_and_leave_the_consumers_registered(
    spark: Any, kinesis_local: str, kinesis: Any, stream_cleanup: Any, tmp_path: Any, counting_proxy: Any
) -> None:
    """Two streams read through consumers registered beforehand, given by ARN (in the other order than the
    streams): every record once; the query, driver and executors, makes no Register, Describe, Deregister or
    ListStreamConsumers call, and the consumers are still there after it stopped."""
    a = stream_cleanup(kinesis, unique_stream_name("efo-arn-a"))
    b = stream_cleanup(kinesis, unique_stream_name("efo-arn-b"))
    create_stream(kinesis, a, 2)
    create_stream(kinesis, b, 1)
    arns = {s: _register(kinesis, s, "ops-owned") for s in (a, b)}
    sent = {s: [f"{s}-{i}" for i in range(60)] for s in (a, b)}
    for s in (a, b):
        put_plain(kinesis, s, sent[s])
    proxy = counting_proxy(kinesis_local)
    collector = BatchCollector()
    options = {**EFO, "consumerArn": f"{arns[b]}, {arns[a]}"}
    query = start(reader(spark, proxy.url, f"{a},{b}", **options), collector, str(tmp_path / "chk"))
    try:
        wait_for(lambda: len(collector.rows()) >= 120, query, what="120 rows")
        wait_batches(query, 1)
    finally:
        stop(query)
    for s in (a, b):
        assert Counter(r.data for r in collector.rows() if r.stream_name == s) == Counter(sent[s])
    counts = proxy.counts()
    print(f"API calls: {counts}")
    assert all(counts.get(call, 0) == 0 for call in CONSUMER_CALLS), counts
    assert counts.get("SubscribeToShard", 0) >= 3
    for s in (a, b):
        assert [(c["ConsumerARN"], c["ConsumerStatus"]) for c in _consumers(kinesis, s)] == [(arns[s], "ACTIVE")]


def test_a_missing_consumer_arn_fails_the_first_batch_naming_the_option_and_the_fix(
    spark: Any, kinesis_local: str, kinesis: Any, stream_cleanup: Any, tmp_path: Any, counting_proxy: Any
) -> None:
    stream = stream_cleanup(kinesis, unique_stream_name("efo-arn-missing"))
    create_stream(kinesis, stream, 1)
    put_plain(kinesis, stream, ["x"])
    missing = f"{_stream_arn(kinesis, stream)}/consumer/never-registered:1700000000"
    proxy = counting_proxy(kinesis_local)
    query = start(reader(spark, proxy.url, stream, **EFO, consumerArn=missing), BatchCollector(), str(tmp_path / "c"))
    try:
        # awaitTermination raises the query's failure (and returns False if it still runs after 60 s).
        with pytest.raises(Exception, match="cannot read through the enhanced fan-out consumer"):
            query.awaitTermination(60)
        assert query.exception() is not None, "the query failed"
        message = str(query.exception())
    finally:
        query.stop()
    # KINESIS_CONSUMER_UNUSABLE's sentence (the condition's name is the exception's, not part of its message).
    assert "cannot read through the enhanced fan-out consumer" in message and missing in message, message
    assert "it does not exist" in message and "kinesis.consumerArn" in message, message
    assert "spark-kinesis consumers register" in message, message
    assert all(proxy.counts().get(call, 0) == 0 for call in CONSUMER_CALLS), proxy.counts()


def test_consumer_option_combinations_are_refused_when_the_query_is_defined(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str
) -> None:
    create_stream(kinesis, stream_name, 1)
    arn = f"{_stream_arn(kinesis, stream_name)}/consumer/c:1"
    for extra, said in [
        ({"consumerName": "c"}, "kinesis.consumerName and kinesis.consumerArn are both set"),
        ({"consumerDeregisterOnStop": "false"}, "is never deregistered by the query"),
        ({"consumerTags": "team=risk"}, "kinesis.consumerTags tags the consumers the query registers"),
    ]:
        with pytest.raises(Exception) as error:
            reader(spark, kinesis_local, stream_name, **EFO, consumerArn=arn, **extra)
        assert said in str(error.value)
    with pytest.raises(Exception) as error:
        reader(spark, kinesis_local, f"{stream_name},other", **EFO, consumerArn=arn)
    assert "kinesis.consumerArn" in str(error.value) and "expected one consumer of each stream read" in str(error.value)


def test_consumers_command_registers_with_tags_shows_arns_and_tags_and_takes_an_arn(
    kinesis_local: str, kinesis: Any, stream_name: str, stream_cleanup: Any
) -> None:
    """``spark-kinesis consumers``: register with --tags, list and describe (by ARN) show the ARN and the tags
    Kinesis answers (none on kinesis-local, which does not keep consumer tags), deregister by ARN."""
    from conftest import TEST_ENV

    stream_cleanup(kinesis, create_stream(kinesis, stream_name, 1))
    env = {**os.environ, **TEST_ENV}
    connection = ["--endpoint-url", kinesis_local, "--region", "us-east-1"]
    exe = str(Path(sys.executable).parent / "spark-kinesis")

    def run(*args: str) -> list[list[str]]:
        done = subprocess.run([exe, "consumers", *args, *connection], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
        return [line.split() for line in done.stdout.splitlines()]

    registered = run("register", "--stream", stream_name, "--name", "tagged", "--tags", "team=risk,env=test")
    assert registered[0] == ["NAME", "STATUS", "ARN", "TAGS"] and registered[1][:2] == ["tagged", "ACTIVE"]
    arn = registered[1][2]
    assert [c["ConsumerARN"] for c in _consumers(kinesis, stream_name)] == [arn]
    assert run("list", "--stream", stream_name)[1][:3] == ["tagged", "ACTIVE", arn]
    # kinesis-local answers ListTagsForResource for the consumer with no tags (see the module's docstring).
    assert kinesis.list_tags_for_resource(ResourceARN=arn)["Tags"] == []
    assert run("describe", "--arn", arn)[1] == ["tagged", "ACTIVE", arn]
    run("deregister", "--arn", arn)
    assert _consumers(kinesis, stream_name) == []
    done = subprocess.run(
        [exe, "consumers", "register", "--stream", stream_name, "--name", "t", "--tags", "aws:x=1", *connection],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode != 0 and "keys not starting with 'aws:'" in done.stderr, done.stderr
