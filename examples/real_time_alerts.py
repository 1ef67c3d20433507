"""Flag large payments the moment they arrive: Spark's real-time mode (Spark 4.1 and newer).

Run it with the connector jar on the classpath::

    spark-submit --master 'local[4]' --jars "$(spark-kinesis jar)" examples/real_time_alerts.py \
        --stream payments --region eu-west-1 --consumer-name payment-alerts

Each record is a JSON payment (``{"account": ..., "amount": ...}``). In real-time mode the query's
tasks run for a whole batch and hand each record to the sink as it arrives; the batch duration
(``--batch``) only sets how often offsets are checkpointed. The query needs a task slot per open
shard. Alerts are appended, one JSON line each, to files under ``--output`` (a stand-in for a
notification service). With ``--expect N`` the query stops once N alerts are written and prints
``RESULT {...}``; the tests use that to check the example end to end against an emulator
(``--endpoint http://127.0.0.1:4567``; ``--polling`` reads with GetRecords instead of enhanced
fan-out, for emulators without it).
"""

from __future__ import annotations

import argparse
import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, StringType, StructField, StructType
from spark_kinesis import ConsumerType, KinesisSource, StartingPosition
from spark_kinesis.realtime import real_time_trigger

PAYMENT = StructType([StructField("account", StringType()), StructField("amount", DoubleType())])


def alert_writer(directory: str) -> Any:
    """A ``foreach`` writer that appends each alert to a file of its task (made here so Spark ships it by value)."""

    class AlertWriter:
        def open(self, partition_id: int, epoch_id: int) -> bool:
            path = os.path.join(directory, f"{epoch_id}-{partition_id}-{uuid.uuid4().hex}.jsonl")
            self.out = open(path, "a", encoding="utf-8")  # noqa: SIM115
            return True

        def process(self, row: Any) -> None:
            self.out.write(json.dumps({"account": row["account"], "amount": row["amount"]}) + "\n")
            self.out.flush()

        def close(self, error: BaseException | None) -> None:
            self.out.close()

    return AlertWriter()


def alerts_written(directory: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for path in directory.glob("*.jsonl") for line in path.read_text().splitlines()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stream", required=True)
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument("--endpoint", help="Kinesis endpoint URL (default: the region's)")
    parser.add_argument("--consumer-name", default="payment-alerts")
    parser.add_argument("--polling", action="store_true", help="read with GetRecords instead of fan-out")
    parser.add_argument("--threshold", type=float, default=1000.0)
    parser.add_argument("--batch", default="5 minutes", help="real-time batch duration (checkpoint interval)")
    parser.add_argument("--output", default=f"/tmp/payment-alerts-{int(time.time())}")
    parser.add_argument("--checkpoint", default=f"/tmp/payment-alerts-chk-{int(time.time())}")
    parser.add_argument("--expect", type=int, help="stop after writing this many alerts")
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()

    spark = SparkSession.builder.appName("payment-alerts").getOrCreate()
    source = KinesisSource(
        stream_name=args.stream,
        region=args.region,
        endpoint_url=args.endpoint,
        starting_position=StartingPosition.trim_horizon(),
        consumer_type=ConsumerType.GET_RECORDS if args.polling else ConsumerType.SUBSCRIBE_TO_SHARD,
        consumer_name=None if args.polling else args.consumer_name,
    )
    alerts = (
        source.read_stream(spark)
        .select(F.from_json(F.col("data").cast("string"), PAYMENT).alias("p"))
        .select("p.account", "p.amount")
        .where(F.col("amount") > args.threshold)
    )
    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    writer = alerts.writeStream.foreach(alert_writer(str(output))).option("checkpointLocation", args.checkpoint)
    query = real_time_trigger(writer, args.batch).start()

    deadline = time.monotonic() + args.timeout
    while args.expect is None or len(alerts_written(output)) < args.expect:
        if query.exception() is not None or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    query.stop()
    if query.exception() is not None:
        raise SystemExit(f"the query failed: {query.exception()}")
    written = alerts_written(output)
    accounts = sorted({a["account"] for a in written})
    print("RESULT " + json.dumps({"alerts": len(written), "accounts": accounts}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
