"""Executor affinity on a Spark standalone cluster: Kinesis handshakes per batch at steady state.

A master and two workers on loopback (tests/harness/cluster.py), one ministack emulator, and for each reader
(polling, enhanced fan-out) and each value of ``kinesis.executorAffinity`` (false: Spark places tasks freely, the
former behaviour; true: each shard's task prefers one executor) a fresh 4-shard stream with a steady input
(``--rate`` records/s) and a driver submitted with spark-submit (this file, ``job``), which reads with a 500 ms
trigger into a noop sink for ``--seconds`` and prints each batch's source metrics. After a warm-up (the first
``--warmup`` seconds), the GetShardIterator (polling) and SubscribeToShard (fan-out) calls per batch are averaged:
with affinity, a shard's task lands on the executor that holds its iterator or live subscription, and continues on
it. With --results, appends the rows to the benchmark command's one table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

SHARDS = 4
READERS = (("polling", {}), ("fan-out", {"kinesis.consumerType": "SubscribeToShard"}))
HANDSHAKES = {"polling": "getShardIteratorCalls", "fan-out": "subscribeToShardCalls"}


def job(args: Any) -> None:
    """The driver: read for ``--seconds`` with the given options, then print every batch's metrics."""
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("affinity-benchmark").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    deadline = time.monotonic() + 60
    # Every executor registered (block managers: the driver's and one per executor) before the query plans.
    while spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() < args.executors + 1:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{args.executors} executors did not register within 60 s")
        time.sleep(0.5)
    reader = spark.readStream.format("aws-kinesis")
    for key, value in json.loads(args.options).items():
        reader = reader.option(key, value)
    query = (
        reader.load()
        .writeStream.format("noop")
        .option("checkpointLocation", args.checkpoint)
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    started = time.monotonic()
    while time.monotonic() - started < args.seconds:
        if query.exception() is not None:
            raise RuntimeError(str(query.exception()))
        time.sleep(1)
    progress = query.recentProgress
    query.stop()
    for p in progress:
        batch = {
            "timestamp": p["timestamp"],
            "ms": p["durationMs"]["triggerExecution"],
            "metrics": p["sources"][0]["metrics"],
        }
        print("BATCH " + json.dumps(batch))
    spark.stop()


def put_steadily(kinesis: Any, stream: str, rate: int, stop: threading.Event) -> None:
    """Put ``rate`` records/s (a tenth every 100 ms) until ``stop`` is set."""
    tick = 0
    next_tick = time.monotonic()
    while not stop.is_set():
        entries = [{"PartitionKey": f"k{tick}-{i}", "Data": b"x" * 100} for i in range(max(1, rate // 10))]
        kinesis.put_records(StreamName=stream, Records=entries)
        tick += 1
        next_tick += 0.1
        time.sleep(max(0.0, next_tick - time.monotonic()))


def run_once(
    cluster: Any, endpoint: str, kinesis: Any, reader: str, options: dict[str, str], args: Any
) -> dict[str, Any]:
    import spark_kinesis
    from harness.cluster import SPARK_HOME, spark_env
    from harness.kinesis import create_stream

    stream = f"bench-affinity-{time.time_ns()}"
    create_stream(kinesis, stream, SHARDS)
    work = Path(tempfile.mkdtemp(prefix="bench-affinity-"))
    full = {
        "kinesis.endpointUrl": endpoint,
        "kinesis.region": "us-east-1",
        "kinesis.streamName": stream,
        "kinesis.startingPosition": "LATEST",
        **options,
    }
    if "kinesis.consumerType" in options:
        full["kinesis.consumerName"] = f"affinity-{time.time_ns()}"
    java_options = "-Daws.cborEnabled=false"
    command = [
        str(SPARK_HOME / "bin" / "spark-submit"),
        "--master", cluster.master_url,
        "--jars", ",".join(spark_kinesis.jar_paths()),
        "--conf", f"spark.driver.extraJavaOptions={java_options}",
        "--conf", f"spark.executor.extraJavaOptions={java_options}",
        "--conf", "spark.executor.memory=768m",
        "--conf", "spark.driver.host=127.0.0.1",
        "--conf", "spark.ui.enabled=false",
        str(Path(__file__).resolve()), "job",
        "--options", json.dumps(full), "--checkpoint", str(work / "checkpoint"),
        "--seconds", str(args.seconds), "--executors", "2",
    ]  # fmt: skip
    stop = threading.Event()
    producer = threading.Thread(target=put_steadily, args=(kinesis, stream, args.rate, stop), daemon=True)
    producer.start()
    env = {**spark_env(), "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=args.seconds + 240)
    finally:
        stop.set()
        producer.join()
    if done.returncode != 0:
        raise RuntimeError(f"the {reader} driver failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}")
    batches = [json.loads(line[6:]) for line in done.stdout.splitlines() if line.startswith("BATCH ")]
    first = min(b["timestamp"] for b in batches)
    steady_batches = [b for b in batches if b["timestamp"] >= _shifted(first, args.warmup)]
    steady = [b["metrics"] for b in steady_batches]
    handshakes = [int(m[HANDSHAKES[reader]]) for m in steady]
    durations = sorted(int(b["ms"]) for b in steady_batches)
    return {
        "batches": len(steady),
        "handshakes_per_batch": sum(handshakes) / max(1, len(steady)),
        "batches_with_handshakes": sum(1 for h in handshakes if h > 0),
        "records_per_batch": sum(int(m["recordsRead"]) for m in steady) / max(1, len(steady)),
        "median_batch_ms": durations[len(durations) // 2] if durations else None,
    }


def _shifted(timestamp: str, seconds: float) -> str:
    """An ISO-8601 progress timestamp (UTC, ``...Z``) moved by ``seconds``, in the same form (so they sort)."""
    from datetime import UTC, datetime, timedelta

    moment = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    return (moment + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command")
    job_args = sub.add_parser("job")
    job_args.add_argument("--options", required=True)
    job_args.add_argument("--checkpoint", required=True)
    job_args.add_argument("--seconds", type=float, required=True)
    job_args.add_argument("--executors", type=int, required=True)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--warmup", type=float, default=20)
    parser.add_argument("--rate", type=int, default=200)
    parser.add_argument("--results")
    args = parser.parse_args()
    if args.command == "job":
        job(args)
        return

    from harness import emulators
    from harness.cluster import standalone_cluster
    from results import add_row

    # Executors inherit the daemons' environment: the emulator's keys reach them through the default chain.
    keys = {
        "AWS_ACCESS_KEY_ID": emulators.ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": emulators.SECRET_KEY,
        "AWS_REGION": "us-east-1",
    }
    os.environ.update(keys)
    with emulators.running("ministack") as emulator, tempfile.TemporaryDirectory() as work:
        kinesis = emulators.kinesis_client(emulator.endpoint)
        with standalone_cluster(Path(work), workers=2, cores=2, memory="1g", env=keys) as cluster:
            for reader, options in READERS:
                measured = {}
                for affinity in ("false", "true"):
                    got = run_once(
                        cluster,
                        emulator.endpoint,
                        kinesis,
                        reader,
                        {**options, "kinesis.executorAffinity": affinity},
                        args,
                    )
                    measured[affinity] = got
                    print(f"{reader}, executorAffinity={affinity}: {json.dumps(got)}", flush=True)
                api = "GetShardIterator" if reader == "polling" else "SubscribeToShard"
                after, before = measured["true"], measured["false"]
                add_row(
                    args.results,
                    f"standalone cluster (2 workers x 2 cores), {reader}, {SHARDS} shards, {args.rate} records/s, "
                    "500 ms trigger, steady state",
                    f"{api} per batch",
                    f"{after['handshakes_per_batch']:.2f} ({after['batches_with_handshakes']} of "
                    f"{after['batches']} batches)",
                    baseline="kinesis.executorAffinity=false",
                    baseline_value=f"{before['handshakes_per_batch']:.2f} ({before['batches_with_handshakes']} of "
                    f"{before['batches']} batches)",
                )


if __name__ == "__main__":
    main()
