"""Source metrics in the query progress and DataSource V2 task metrics in the SQL metrics, against kinesis-local."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from harness.kinesis import create_stream, put_plain
from streaming import reader

pytestmark = pytest.mark.emulator


def _scan_metrics(query: Any) -> dict[str, int]:
    """The SQL metrics of the Kinesis scan node in the query's last executed batch."""
    plan = query._jsq.streamingQuery().lastExecution().executedPlan()
    leaves = plan.collectLeaves().iterator()
    while leaves.hasNext():
        node = leaves.next()
        metrics = node.metrics()
        if metrics.contains("kinesisRecordsRead"):
            names = ["kinesisRecordsRead", "kinesisBytesRead", "kinesisThrottledCalls", "kinesisMaxMillisBehindLatest"]
            return {name: int(metrics.apply(name).value()) for name in names}
    raise AssertionError(f"no Kinesis scan with custom metrics in {plan.toString()}")


def _metric(api: str) -> str:
    """The source metric of an operation's count: ``ListShards`` -> ``listShardsCalls``."""
    return api[0].lower() + api[1:] + "Calls"


def _reported_calls(progress: list[dict[str, Any]]) -> dict[str, int]:
    """Sums each batch's API call metrics once (a trigger without new data repeats the last batch's metrics)."""
    by_batch: dict[str, dict[str, str]] = {}
    for p in progress:
        source = p["sources"][0]
        if source["metrics"]:
            by_batch[json.dumps(source["endOffset"], sort_keys=True)] = source["metrics"]
    totals: dict[str, int] = {}
    for metrics in by_batch.values():
        for name, value in metrics.items():
            if name.endswith("Calls") and name not in ("throttledCalls", "apiCalls", "driverApiCalls"):
                totals[name] = totals.get(name, 0) + int(value)
        assert int(metrics["apiCalls"]) == sum(
            int(v)
            for n, v in metrics.items()
            if n.endswith("Calls") and n not in ("throttledCalls", "apiCalls", "driverApiCalls")
        )
    return {name: n for name, n in totals.items() if n}


def _received(proxy: Any) -> dict[str, int]:
    """What the proxy passed on to Kinesis, by metric name."""
    return {_metric(api): n for api, n in proxy.counts().items() if n and not api.startswith("<")}


def test_api_call_metrics_equal_the_requests_kinesis_received(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Any, counting_proxy: Any
) -> None:
    """Three Trigger.Once runs on one checkpoint, through a counting proxy: every request of every run (start-up,
    planning, tasks) is reported in the metrics of the batch it served, by operation, and nothing else is."""
    create_stream(kinesis, stream_name, 2)
    put_plain(kinesis, stream_name, [f"r-{i:03d}" for i in range(200)])
    proxy = counting_proxy(kinesis_local)
    progress: list[dict[str, Any]] = []
    for _ in range(3):
        once = (
            reader(spark, proxy.url, stream_name, startingPosition="TRIM_HORIZON", maxFetchRecordsPerShard="25")
            .writeStream.format("noop")
            .option("checkpointLocation", str(tmp_path / "chk"))
            .trigger(once=True)
            .start()
        )
        assert once.awaitTermination(60)
        assert once.exception() is None
        progress += once.recentProgress
    reported = _reported_calls(progress)
    received = _received(proxy)
    assert 2 * 25 < sum(p["numInputRows"] for p in progress) <= 3 * 2 * 25
    print(f"Trigger.Once x3: metrics {reported}, proxy {received}")
    assert reported == received, f"metrics {reported} != proxy {received}"
    # Each run describes the stream once and lists its shards; tasks read with GetRecords.
    assert reported["describeStreamSummaryCalls"] == 3
    assert reported["listShardsCalls"] >= 3
    assert reported["getRecordsCalls"] >= 3 * 2


@pytest.mark.smoke
def test_lag_and_volume_metrics_drain_to_zero_and_task_metrics_reach_the_sql_metrics(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Any, counting_proxy: Any
) -> None:
    create_stream(kinesis, stream_name, 1)
    # Two waves three seconds apart: while the first is read, the reader is seconds behind the tip.
    put_plain(kinesis, stream_name, [f"w1-{i:03d}" for i in range(200)])
    time.sleep(3.0)
    put_plain(kinesis, stream_name, [f"w2-{i:03d}" for i in range(200)])
    proxy = counting_proxy(kinesis_local)
    query = (
        reader(spark, proxy.url, stream_name, startingPosition="TRIM_HORIZON", maxRecordsPerTrigger="100")
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "chk"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120), "the AvailableNow query did not stop by itself"
    assert query.exception() is None
    progress = [p for p in query.recentProgress if p["sources"][0]["metrics"]]
    metrics = [p["sources"][0]["metrics"] for p in progress]
    with_rows = [m for p, m in zip(progress, metrics, strict=True) if p["numInputRows"] > 0]
    assert sum(int(m["recordsRead"]) for m in metrics) == 400
    assert [int(m["recordsRead"]) for m in with_rows] == [p["numInputRows"] for p in progress if p["numInputRows"]]
    assert all(int(m["bytesRead"]) == 6 * int(m["recordsRead"]) for m in metrics)
    for m in metrics:
        for name in ("avgMsBehindLatest", "maxMsBehindLatest", "minMsBehindLatest"):
            assert float(m[name]) >= 0
        assert int(m["getRecordsCalls"]) >= 1
        assert int(m["throttledCalls"]) == 0
    lags = [int(m["maxMsBehindLatest"]) for m in metrics]
    assert lags[0] >= 2000, f"the first batch is seconds behind the tip: {lags}"
    assert lags == sorted(lags, reverse=True), f"the lag shrinks as the backlog drains: {lags}"
    assert lags[-1] == 0, f"the last batch ends at the tip: {lags}"
    # Every request Kinesis received is in a batch's metrics, except those of the trigger that found the run done.
    reported = _reported_calls(query.recentProgress)
    received = _received(proxy)
    print(f"AvailableNow: metrics {reported}, proxy {received}")
    tail = {name: received[name] - reported.get(name, 0) for name in received}
    assert set(reported) <= set(received) and all(n >= 0 for n in tail.values()), (reported, received)
    assert tail.get("getRecordsCalls", 0) <= 1 and tail.get("listShardsCalls", 0) <= 1, tail
    assert sum(tail.values()) == tail.get("getRecordsCalls", 0) + tail.get("listShardsCalls", 0), tail

    # One batch of the first wave, from a fresh checkpoint: the scan's task metrics match the source metrics.
    once = (
        reader(spark, kinesis_local, stream_name, startingPosition="TRIM_HORIZON", maxFetchRecordsPerShard="50")
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "chk-once"))
        .trigger(once=True)
        .start()
    )
    assert once.awaitTermination(60)
    source = once.lastProgress["sources"][0]["metrics"]
    scan = _scan_metrics(once)
    assert scan["kinesisRecordsRead"] == int(source["recordsRead"]) == 50
    assert scan["kinesisBytesRead"] == int(source["bytesRead"]) == 300
    assert scan["kinesisThrottledCalls"] == int(source["throttledCalls"])
    assert scan["kinesisMaxMillisBehindLatest"] == int(source["maxMsBehindLatest"]) >= 2000
