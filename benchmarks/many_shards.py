"""The cost of many shards: one shard per task against grouped read tasks, at 16, 256 and 1,024 shards.

For each shard count, a stream on ministack gets a backlog of --records-per-shard records per shard (random
partition keys, so about that many per shard). A query (local[2], a 1 s processing-time trigger, a noop sink, the
Hadoop metadata committer in its checkpoint) reads it from TRIM_HORIZON, once with ``kinesis.shardsPerTask=1`` (the
baseline: the behaviour before grouping) and once with the automatic grouping, in the same run. Kinesis requests go
through the counting proxy (tests/harness/proxy.py). Reported per shard count and mode:

* the backlog: the time from the query's start until every record is read, and the JVM's CPU (local mode: driver
  and executor) per million records over that time;
* the idle batches after it (--idle-seconds): triggerExecution median and max, the driver's planning time
  (latestOffset median), metadata entries written per batch (files in the batch's metadata directory), and Kinesis
  requests per batch by operation (ListShards pages, GetRecords, ...).

An idle batch of a polling query calls GetRecords once per shard, and on ministack those calls are most of its time:
ministack serves them on one Python thread, and every GetRecords first rebuilds the record list of every shard of
the stream (its retention sweep, ``_expire_records``) and every request scans all iterators handed out in the last 5
minutes (``_expire_iterators``), so a call costs it milliseconds and more as the stream and the run grow. To tell
the connector's own cost from the emulator's, the idle batches are measured a second time, per shard count and mode,
against ``TipOnlyKinesis.java``: a loopback endpoint for a stream of empty shards that answers at once (or after
--tip-latency-ms, a model of the service's response time). It speaks the JSON protocol and the real SDK clients call
it; it is a benchmark aid only, never a stand-in for the emulator tests.

Last, at --fan-out-shards (1,024 by default), an enhanced fan-out query's idle batches on ministack itself, one shard
per task and grouped: an idle fan-out batch makes no Kinesis call, so there the emulator measures the connector's own
idle cost. The session's driver heap (--driver-memory, 8 GiB by default) holds the subscriptions' buffers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from harness import emulators  # noqa: E402
from harness.kinesis import create_stream, put_plain  # noqa: E402
from harness.proxy import CountingProxy  # noqa: E402
from results import add_row, java_endpoint  # noqa: E402
from sessions import kinesis_stream  # noqa: E402


def process_cpu_seconds(spark: Any) -> float:
    """CPU time of the Spark JVM (driver and, in local mode, the executor), from /proc (user and system)."""
    pid = spark._jvm.java.lang.ProcessHandle.current().pid()
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def entries_by_batch(checkpoint: str) -> Counter[int]:
    """Metadata entries the tasks wrote, by batch: ``<checkpoint>/sources/0/kinesis/<runId>/<batchId>/<key>``."""
    counts: Counter[int] = Counter()
    root = Path(checkpoint) / "sources" / "0" / "kinesis"
    for run in root.iterdir() if root.exists() else []:
        for batch in run.iterdir():
            if batch.is_dir() and batch.name.isdigit():
                counts[int(batch.name)] += sum(1 for f in batch.iterdir() if not f.name.startswith("."))
    return counts


def start_query(
    spark: Any, endpoint: str, stream: str, grouped: bool, checkpoint: str, options: dict[str, str] | None = None
) -> Any:
    """The measured query: from TRIM_HORIZON, 1 s trigger, noop sink; one shard per task unless `grouped`."""
    reader = kinesis_stream(spark, endpoint, stream, options)
    if not grouped:
        reader = reader.option("kinesis.shardsPerTask", "1")
    return (
        reader.load()
        .writeStream.format("noop")
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="1 second")
        .start()
    )


def measure(
    spark: Any, endpoint: str, proxy: CountingProxy, shards: int, per_shard: int, grouped: bool, idle_seconds: float
) -> dict[str, Any]:
    kinesis = emulators.kinesis_client(endpoint)
    stream = f"bench-shards-{shards}-{'grouped' if grouped else 'single'}-{time.time_ns()}"
    create_stream(kinesis, stream, shards, timeout=300)
    records = shards * per_shard
    put_plain(kinesis, stream, (f"record {i}" for i in range(records)))
    checkpoint = tempfile.mkdtemp(prefix="bench-shards-chk-")
    proxy.reset()
    cpu_before = process_cpu_seconds(spark)
    started = time.monotonic()
    query = start_query(spark, proxy.url, stream, grouped, checkpoint)
    try:
        read = 0
        seen: set[int] = set()
        while read < records:
            if query.exception() is not None:
                raise RuntimeError(f"the query failed: {query.exception()}")
            if time.monotonic() - started > 1800:
                raise TimeoutError(f"{read} of {records} records read in 30 minutes")
            for p in query.recentProgress:
                if p["batchId"] not in seen:
                    seen.add(p["batchId"])
                    read += int(p["numInputRows"])
            time.sleep(0.05)
        backlog_s = time.monotonic() - started
        backlog_cpu = process_cpu_seconds(spark) - cpu_before
        last_backlog_batch = max(seen)
        proxy.reset()
        idle_started = time.monotonic()

        def idle_batches() -> list[dict[str, Any]]:
            return [p for p in query.recentProgress if p["batchId"] > last_backlog_batch and p["numInputRows"] == 0]

        # At least --idle-seconds, and at least 3 idle batches (a batch of 1,024 one-shard tasks takes seconds).
        while time.monotonic() - idle_started < idle_seconds or len(idle_batches()) < 3:
            if time.monotonic() - idle_started > 600:
                break
            time.sleep(0.1)
        calls = proxy.counts()
        idle = idle_batches()
        # Per completed idle batch; a batch still running when counting stops adds its requests (an overestimate).
    finally:
        query.stop()
    if len(idle) < 2:
        raise RuntimeError(f"only {len(idle)} idle batches in {idle_seconds}s")
    return {
        "shards": shards,
        "mode": mode_label(grouped),
        "records": records,
        "backlogSeconds": round(backlog_s, 2),
        "cpuSecondsPerMillionRecords": round(backlog_cpu / records * 1e6, 1),
        **idle_summary(idle, checkpoint),
        "kinesisCallsPerIdleBatch": {op: round(n / len(idle), 2) for op, n in sorted(calls.items())},
    }


def mode_label(grouped: bool) -> str:
    return "grouped (automatic)" if grouped else "one shard per task"


def idle_summary(idle: list[dict[str, Any]], checkpoint: str) -> dict[str, Any]:
    """Medians and maxima over idle batches, their metadata entries, and the requests the source counted per batch."""
    entries = entries_by_batch(checkpoint)
    calls: Counter[str] = Counter()
    for p in idle:
        metrics = p["sources"][0].get("metrics", {})
        for key, value in metrics.items():
            if key.endswith("Calls") and key not in ("apiCalls", "driverApiCalls", "throttledCalls"):
                calls[key[: -len("Calls")]] += int(value)
    return {
        "idleBatches": len(idle),
        "idleTriggerMsMedian": statistics.median(p["durationMs"].get("triggerExecution", 0) for p in idle),
        "idleTriggerMsMax": max(p["durationMs"].get("triggerExecution", 0) for p in idle),
        "planningMsMedian": statistics.median(p["durationMs"].get("latestOffset", 0) for p in idle),
        "metadataEntriesPerIdleBatch": round(statistics.mean(entries.get(p["batchId"], 0) for p in idle), 1),
        "sourceCallsPerIdleBatch": {op: round(n / len(idle), 2) for op, n in sorted(calls.items()) if n},
    }


def idle_after_warm_up(query: Any, idle_seconds: float, timeout: float) -> tuple[list[dict[str, Any]], float | None]:
    """The progress of the batches after the first 3 (the warm-up), once --idle-seconds have passed since the first of
    them and there are 3 at least (or `timeout` seconds after the start); and the warm-up's seconds (None if it
    never ended)."""
    started = time.monotonic()
    first: float | None = None

    def idle() -> list[dict[str, Any]]:
        return [p for p in query.recentProgress if p["batchId"] >= 3]

    while first is None or time.monotonic() - first < idle_seconds or len(idle()) < 3:
        if query.exception() is not None:
            raise RuntimeError(f"the query failed: {query.exception()}")
        if time.monotonic() - started > timeout:
            break
        if first is None and idle():
            first = time.monotonic()
        time.sleep(0.2)
    return idle(), round(first - started, 1) if first is not None else None


def measure_idle_tip_only(
    spark: Any, shards: int, grouped: bool, idle_seconds: float, latency_ms: int
) -> dict[str, Any]:
    """Idle batches of a query at the tips of `shards` empty shards, served by TipOnlyKinesis.java."""
    stream = f"tip-only-{shards}"
    checkpoint = tempfile.mkdtemp(prefix="bench-shards-tip-chk-")
    with java_endpoint("TipOnlyKinesis.java", stream, str(shards), str(latency_ms)) as endpoint:
        # The first 3 batches open every shard's iterator.
        query = start_query(spark, endpoint, stream, grouped, checkpoint)
        row, _ = idle_row(
            query, checkpoint, shards, grouped, f"TipOnlyKinesis, {latency_ms} ms per answer", idle_seconds, 600
        )
    return row


def measure_idle_fan_out(spark: Any, endpoint: str, shards: int, grouped: bool, idle_seconds: float) -> dict[str, Any]:
    """Idle batches of an enhanced fan-out query at the tips of `shards` empty shards on ministack.

    An idle fan-out batch makes no Kinesis call (records are pushed), so this is the emulator's own measure of the
    connector's idle cost. Each subscription's event buffer lives in the driver's heap (--driver-memory).
    """
    kinesis = emulators.kinesis_client(endpoint)
    stream = f"bench-fan-out-{shards}-{'grouped' if grouped else 'single'}-{time.time_ns()}"
    create_stream(kinesis, stream, shards, timeout=300)
    checkpoint = tempfile.mkdtemp(prefix="bench-shards-efo-chk-")
    query = start_query(
        spark,
        endpoint,
        stream,
        grouped,
        checkpoint,
        {"kinesis.consumerType": "SubscribeToShard", "kinesis.consumerName": "bench-many-shards"},
    )
    # The first 3 batches subscribe to every shard.
    row, warm_up_seconds = idle_row(
        query, checkpoint, shards, grouped, "ministack, enhanced fan-out", idle_seconds, 900
    )
    return {**row, "subscribedInSeconds": warm_up_seconds}


def idle_row(
    query: Any, checkpoint: str, shards: int, grouped: bool, endpoint: str, idle_seconds: float, timeout: float
) -> tuple[dict[str, Any], float | None]:
    """Waits for the idle batches after the warm-up, stops the query, summarizes them; also the warm-up's seconds."""
    try:
        batches, warm_up_seconds = idle_after_warm_up(query, idle_seconds, timeout=timeout)
    finally:
        query.stop()
    if len(batches) < 3:
        raise RuntimeError(f"only {len(batches)} idle batches ({endpoint})")
    row = {"shards": shards, "mode": mode_label(grouped), "endpoint": endpoint, **idle_summary(batches, checkpoint)}
    return row, warm_up_seconds


def idle_notes(row: dict[str, Any]) -> str:
    return (
        f"planning {row['planningMsMedian']:g} ms; {row['metadataEntriesPerIdleBatch']:g} metadata entries per idle "
        f"batch; source's calls per idle batch {json.dumps(row['sourceCallsPerIdleBatch'])}"
    )


def report_pair(
    results: str | None, measure_one: Callable[[bool], dict[str, Any]], notes: Callable[[dict[str, Any]], str]
) -> None:
    """Measures one shard per task, then grouped, and adds both rows; the grouped row names the first as baseline."""
    baseline: dict[str, Any] = {}
    for grouped in (False, True):
        row = measure_one(grouped)
        print(json.dumps(row), flush=True)
        where = f", {row['endpoint']}" if "endpoint" in row else ""
        add_row(
            results,
            f"{row['shards']} shards, {row['mode']}{where}",
            "idle batch triggerExecution median / max ms",
            f"{row['idleTriggerMsMedian']:g} / {row['idleTriggerMsMax']:g}",
            **compared_with(baseline, row),
            notes=notes(row),
        )
        baseline = baseline or row


def compared_with(baseline: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    """The grouped row's baseline columns: one shard per task, same size, same run; ratio of the idle medians."""
    if not baseline:
        return {}
    return {
        "baseline": baseline["mode"],
        "baseline_value": f"{baseline['idleTriggerMsMedian']:g} / {baseline['idleTriggerMsMax']:g}",
        "ratio": row["idleTriggerMsMedian"] / baseline["idleTriggerMsMedian"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", default="16,256,1024", help="comma-separated shard counts (empty: none)")
    parser.add_argument("--records-per-shard", type=int, default=100)
    parser.add_argument("--idle-seconds", type=float, default=20.0)
    parser.add_argument("--results", help="JSON-lines file to append the table rows to (see results.py)")
    parser.add_argument(
        "--endpoints",
        choices=("both", "ministack", "tip-only"),
        default="both",
        help="ministack (backlog and idle), TipOnlyKinesis.java (idle only), or both",
    )
    parser.add_argument("--tip-latency-ms", type=int, default=0, help="TipOnlyKinesis' delay before each answer")
    parser.add_argument(
        "--fan-out-shards",
        default="1024",
        help="comma-separated shard counts of the idle fan-out runs on ministack (empty: none)",
    )
    parser.add_argument(
        "--driver-memory",
        default="8g",
        help="the local session's heap (spark.driver.memory): what the fan-out runs' subscriptions must fit in",
    )
    args = parser.parse_args()
    os.environ.update(
        AWS_ACCESS_KEY_ID=emulators.ACCESS_KEY, AWS_SECRET_ACCESS_KEY=emulators.SECRET_KEY, AWS_REGION="us-east-1"
    )
    import spark_kinesis
    from pyspark.sql import SparkSession

    with emulators.running("ministack") as emulator, CountingProxy(emulator.endpoint) as proxy:
        spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.jars", ",".join(spark_kinesis.jar_paths()))
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.extraJavaOptions", "-Daws.cborEnabled=false")
            # The subscriptions' event buffers live in this heap (docs: Enhanced fan-out, Memory).
            .config("spark.driver.memory", args.driver_memory)
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        try:
            # A first query warms the JVM up (class loading, JIT), so that the first measured mode pays no more.
            measure(spark, emulator.endpoint, proxy, 4, 50, True, 2.0)
            sizes = [int(s) for s in args.shards.split(",") if s.strip()]
            for shards in sizes if args.endpoints != "tip-only" else []:
                # Baseline and grouped alternate within each size, so both see the same machine.
                report_pair(
                    args.results,
                    lambda grouped, n=shards: measure(
                        spark, emulator.endpoint, proxy, n, args.records_per_shard, grouped, args.idle_seconds
                    ),
                    lambda row: (
                        f"backlog of {row['records']} records in {row['backlogSeconds']} s, "
                        f"{row['cpuSecondsPerMillionRecords']} CPU s per million; planning "
                        f"{row['planningMsMedian']:g} ms; {row['metadataEntriesPerIdleBatch']:g} metadata entries "
                        f"per idle batch; Kinesis calls per idle batch {json.dumps(row['kinesisCallsPerIdleBatch'])}"
                    ),
                )
            for shards in sizes if args.endpoints != "ministack" else []:
                report_pair(
                    args.results,
                    lambda grouped, n=shards: measure_idle_tip_only(
                        spark, n, grouped, args.idle_seconds, args.tip_latency_ms
                    ),
                    idle_notes,
                )
            fan_out = [int(s) for s in args.fan_out_shards.split(",") if s.strip()]
            for shards in fan_out if args.endpoints != "tip-only" else []:
                report_pair(
                    args.results,
                    lambda grouped, n=shards: measure_idle_fan_out(
                        spark, emulator.endpoint, n, grouped, args.idle_seconds
                    ),
                    lambda row: f"subscribed in {row['subscribedInSeconds']} s; {idle_notes(row)}",
                )
        finally:
            spark.stop()


if __name__ == "__main__":
    main()
