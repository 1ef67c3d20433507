"""Runs the data-loss scenario in its own Spark JVM (ministack needs the AWS SDK's CBOR off).

Scenario, once per value of kinesis.failOnDataLoss: a query reads part of a one-shard stream and
stops; the shard is split (ministack deletes the parent and its unread records, like a shard
expiring while the query was stopped); more records go to the children; the query restarts.
Prints one JSON line per mode: the rows read after the restart, or the error, and the connector's
warnings about skipped records (io.sparkkinesis at WARN goes to <workdir>/connector-warnings.log).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import spark_kinesis
from harness.emulators import ACCESS_KEY, REGION, SECRET_KEY, kinesis_client
from harness.kinesis import create_stream, list_shards, put_plain, split_shard
from pyspark.sql import SparkSession
from streaming import BatchCollector, reader, start, stop, wait_batches, wait_for

LOG4J = """
rootLogger.level = error
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d %p %c: %m%n%ex
logger.connector.name = io.sparkkinesis
logger.connector.level = warn
logger.connector.additivity = false
logger.connector.appenderRef.file.ref = warnings
appender.warnings.type = File
appender.warnings.name = warnings
appender.warnings.fileName = {path}
appender.warnings.layout.type = PatternLayout
appender.warnings.layout.pattern = %p %c: %m%n
"""

# Enough records that the first run, 10 per batch, cannot read them all before it is stopped.
OLD_RECORDS = 3000


def run_mode(spark: Any, kinesis: Any, endpoint: str, workdir: Path, fail: str) -> dict[str, object]:
    stream = f"loss-{fail}-{int(time.time() * 1000)}"
    create_stream(kinesis, stream, 1)
    put_plain(kinesis, stream, [f"old-{i}" for i in range(OLD_RECORDS)])
    options = {"startingPosition": "TRIM_HORIZON", "maxFetchRecordsPerShard": "10", "failOnDataLoss": fail}
    checkpoint = str(workdir / f"chk-{fail}")
    first = BatchCollector()
    query = start(reader(spark, endpoint, stream, **options), first, checkpoint)
    wait_for(lambda: len(first.rows()) >= 10, query, what="first rows")
    stop(query)
    parent = list_shards(kinesis, stream)[0]
    split_shard(kinesis, stream, parent["ShardId"])  # in the middle of its range; returns once the stream is ACTIVE
    put_plain(kinesis, stream, [f"new-{i}" for i in range(20)])
    second = BatchCollector()
    query = start(reader(spark, endpoint, stream, **options), second, checkpoint)
    result: dict[str, object] = {
        "failOnDataLoss": fail,
        "firstRun": len(first.rows()),
        "oldRecords": OLD_RECORDS,
        "lostShard": parent["ShardId"],
    }
    try:
        wait_for(
            lambda: query.exception() is not None or len(second.rows()) >= 20,
            timeout=90,
            what="an error or the new rows",
        )
        if query.exception() is not None:
            result["error"] = str(query.exception())
        else:
            wait_batches(query, 1)
            result["rows"] = sorted(second.data())
        warnings = (workdir / "connector-warnings.log").read_text(errors="replace").splitlines()
        result["skipWarnings"] = [line for line in warnings if "Skipping" in line and stream in line]
    finally:
        if query.isActive:
            stop(query)
    return result


def main() -> None:
    endpoint, workdir = sys.argv[1], Path(sys.argv[2])
    os.environ.update(AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY, AWS_REGION=REGION)
    log4j = workdir / "log4j2.properties"
    log4j.write_text(LOG4J.format(path=workdir / "connector-warnings.log"))
    builder = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.extraJavaOptions", f"-Daws.cborEnabled=false -Dlog4j2.configurationFile={log4j}")
        .config("spark.sql.shuffle.partitions", "2")
    )
    spark = spark_kinesis.configure_spark(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    kinesis = kinesis_client(endpoint)
    for fail in ("true", "false"):
        print("RESULT " + json.dumps(run_mode(spark, kinesis, endpoint, workdir, fail)), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
