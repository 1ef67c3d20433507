"""A streaming job for the cluster fault tests, submitted with spark-submit to a standalone master.

It reads a stream with small, slow fetches (so a batch takes seconds and a fault can land inside
one) and records, under --out:

- ``started/<batch>-<attempt>``: a batch began (written before its records are read);
- ``attempts/<batch>-<attempt>.json``: the records one attempt of a batch saw;
- ``batches/<batch>.json``: the batch's records, replaced atomically by a replay (idempotent sink).

It stops once ``batches/`` holds --expect records, printing ``RESULT <count>``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import uuid
from pathlib import Path

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
        attempt = uuid.uuid4().hex[:8]
        (out / "started" / f"{batch_id}-{attempt}").touch()
        rows = sorted(bytes(r["data"]).decode() for r in batch.select("data").collect())
        (out / "attempts" / f"{batch_id}-{attempt}.json").write_text(json.dumps(rows))
        staging = out / "batches" / f".{batch_id}-{attempt}.tmp"
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
    print(f"RESULT {total()}", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
