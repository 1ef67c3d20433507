"""A streaming job for the cluster fault tests, submitted with spark-submit to a standalone master.

It reads a stream with small, slow fetches (so a batch takes seconds and a fault can land inside
one) and records, under --out (``<run>`` is --run, naming this driver process; ``<attempt>`` is
random per call of the sink):

- ``started/<batch>-<run>-<attempt>``: a batch began (written before its records are read);
- ``attempts/<batch>-<run>-<attempt>.json``: the records one attempt of a batch saw;
- ``batches/<batch>.json``: the batch's records, replaced atomically by a replay (idempotent sink);
- ``summary-<run>.json``: at the end, what the driver's own REST API (/api/v1) says about failed
  tasks and removed executors, so a test can check that a fault really hit a task.

With ``--pause-after-rows S`` each attempt waits S seconds after recording its rows and before
writing its batch: a window in which the batch has been read but not committed, for a test to kill
the driver in.

With ``--hold-tasks DIR`` every task of batch 1 and later, once it has read its records, writes
``DIR/held-<pid of its Python worker>`` and waits until ``DIR/release`` exists: a task that is
surely running, for a test to kill its executor under.

It stops once ``batches/`` holds --expect records, printing ``RESULT <count>``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from spark_kinesis import KinesisSource, StartingPosition


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--stream", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--expect", type=int, required=True)
    parser.add_argument("--timeout", type=float, default=240)
    parser.add_argument("--run", default="run")
    parser.add_argument("--pause-after-rows", type=float, default=0.0)
    parser.add_argument("--hold-tasks", default="")
    args = parser.parse_args()
    out = Path(args.out)
    for sub in ("started", "attempts", "batches"):
        (out / sub).mkdir(parents=True, exist_ok=True)

    spark = SparkSession.builder.appName("cluster-fault-job").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    records = KinesisSource(
        stream_name=args.stream,
        region="us-east-1",
        endpoint_url=args.endpoint,
        starting_position=StartingPosition.trim_horizon(),
        max_fetch_records_per_shard=150,
        records_per_fetch=25,
        fetch_interval_ms=400,
    ).read_stream(spark)

    def total() -> int:
        return sum(len(json.loads(p.read_text())) for p in (out / "batches").glob("*.json"))

    def sink(batch: DataFrame, batch_id: int) -> None:
        attempt = f"{batch_id}-{args.run}-{uuid.uuid4().hex[:8]}"
        (out / "started" / attempt).touch()
        if args.hold_tasks and batch_id >= 1:
            rows = sorted(batch.select("data").rdd.mapPartitions(_held(args.hold_tasks)).collect())
        else:
            rows = sorted(bytes(r["data"]).decode() for r in batch.select("data").collect())
        (out / "attempts" / f"{attempt}.json").write_text(json.dumps(rows))
        if args.pause_after_rows > 0 and rows:
            time.sleep(args.pause_after_rows)  # read, not yet committed: the window for a driver kill
        staging = out / "batches" / f".{attempt}.tmp"
        staging.write_text(json.dumps(rows))
        os.replace(staging, out / "batches" / f"{batch_id}.json")

    query = (
        records.writeStream.foreachBatch(sink)
        .option("checkpointLocation", args.checkpoint)
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    deadline = time.monotonic() + args.timeout
    while total() < args.expect and time.monotonic() < deadline:
        if query.exception() is not None:
            raise SystemExit(f"query failed: {query.exception()}")
        time.sleep(0.5)
    while query.status["isTriggerActive"]:
        time.sleep(0.05)
    query.stop()
    (out / f"summary-{args.run}.json").write_text(json.dumps(_failure_summary(spark)))
    print(f"RESULT {total()}", flush=True)
    spark.stop()


def _held(folder: str) -> Any:
    """A partition function that reads its records, then waits in its task until ``folder/release`` exists."""

    def hold(rows: Any) -> Any:
        data = [bytes(r["data"]).decode() for r in rows]
        here, release = Path(folder), Path(folder) / "release"
        if not release.exists():
            here.mkdir(parents=True, exist_ok=True)
            (here / f"held-{os.getpid()}").touch()
            deadline = time.monotonic() + 300
            while not release.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        return iter(data)

    return hold


def _failure_summary(spark: SparkSession) -> dict[str, Any]:
    """Failed tasks and removed executors of this application, from the driver's REST API (needs the UI on)."""
    context = spark.sparkContext
    base = f"{context.uiWebUrl}/api/v1/applications/{context.applicationId}"

    def get(path: str) -> Any:
        with urllib.request.urlopen(base + path, timeout=10) as response:
            return json.loads(response.read())

    stages = get("/stages")
    executors = get("/allexecutors")
    return {
        "failedTasks": sum(stage.get("numFailedTasks", 0) for stage in stages),
        "removedExecutors": {
            e["id"]: e.get("removeReason", "") for e in executors if e["id"] != "driver" and not e.get("isActive", True)
        },
    }


if __name__ == "__main__":
    main()
