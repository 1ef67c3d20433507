"""Source metrics in the query progress and DataSource V2 task metrics in the SQL metrics, against kinesis-local."""

from __future__ import annotations

import time
from typing import Any

import pytest
from harness.kinesis import create_stream, put_plain
from streaming import reader

pytestmark = pytest.mark.emulator


@pytest.fixture
def kinesis(kinesis_local: str, kinesis_client_factory: Any) -> Any:
    return kinesis_client_factory(kinesis_local)


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


def test_lag_and_volume_metrics_drain_to_zero_and_task_metrics_reach_the_sql_metrics(
    spark: Any, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Any
) -> None:
    create_stream(kinesis, stream_name, 1)
    # Two waves three seconds apart: while the first is read, the reader is seconds behind the tip.
    put_plain(kinesis, stream_name, [f"w1-{i:03d}" for i in range(200)])
    time.sleep(3.0)
    put_plain(kinesis, stream_name, [f"w2-{i:03d}" for i in range(200)])
    query = (
        reader(spark, kinesis_local, stream_name, startingPosition="TRIM_HORIZON", maxRecordsPerTrigger="100")
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
        assert int(m["throttledCalls"]) >= 0
        assert int(m["getShardIteratorCalls"]) >= 0
    lags = [int(m["maxMsBehindLatest"]) for m in metrics]
    assert lags[0] >= 2000, f"the first batch is seconds behind the tip: {lags}"
    assert lags == sorted(lags, reverse=True), f"the lag shrinks as the backlog drains: {lags}"
    assert lags[-1] == 0, f"the last batch ends at the tip: {lags}"

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
