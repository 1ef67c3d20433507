"""Runs two queries with every secret option set, logging at DEBUG, in its own Spark JVM.

Reads the secret values from ``<workdir>/secrets.json`` (never from the command line), and writes
everything a secret must never reach into ``<workdir>/artifacts/``: plan strings (``explain``,
``Scan.description``), streaming progress JSON and status, the Spark UI's REST answers and pages,
and the command lines of every process on the machine while the queries run. The DEBUG log goes to
``<workdir>/debug.log``. tests/test_secret_hygiene.py then looks for the secrets in all of it.

Query A: a role assumed with static keys + session token as base credentials and an external id
(ministack's STS), reading a stream in the role's account, with its metadata in DynamoDB (so the
DynamoDB client logs at DEBUG too). Query B: a custom credentials provider class with a secret
parameter, reading a stream in the default account. Query C: the sink (the KPL and its native
process) writing query A's stream into a second stream of the role's account with the same role
and keys, through a TLS front for the KPL.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import spark_kinesis
from harness.emulators import ACCESS_KEY, REGION, SECRET_KEY, free_port
from harness.tls_front import TlsFront
from pyspark.sql import SparkSession
from streaming import BatchCollector, reader, start, stop, wait_batches, wait_for

ROWS = 20


def command_lines() -> str:
    lines = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                lines.append(
                    proc.name + " " + (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
                )
    return "\n".join(lines)


def fetch(url: str) -> str:
    try:
        # No proxy: the UI listens on loopback.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(url, timeout=10) as response:
            return str(response.read().decode("utf-8", "replace"))
    except Exception as error:  # a page that fails is recorded, the checks then look at what there is
        return f"FETCH FAILED {url}: {error}"


def explain(df_or_query: Any) -> str:
    plan = io.StringIO()
    with contextlib.redirect_stdout(plan):
        df_or_query.explain(extended=True)
    return plan.getvalue()


def capture(spark: Any, name: str, query: Any, out: Path) -> None:
    """Everything a running query shows: plans, progress, command lines, Spark UI answers."""
    (out / f"{name}-explain-query.txt").write_text(explain(query))
    progress = {
        "jvm": [p.json() for p in query._jsq.recentProgress()],
        "python": [str(p) for p in query.recentProgress],
        "status": query.status,
    }
    (out / f"{name}-progress.json").write_text(json.dumps(progress, default=str))
    (out / f"{name}-cmdlines.txt").write_text(command_lines())
    ui = spark.sparkContext.uiWebUrl
    app = spark.sparkContext.applicationId
    for page, url in {
        "sql": f"{ui}/api/v1/applications/{app}/sql?details=true&planDescription=true",
        "environment": f"{ui}/api/v1/applications/{app}/environment",
        "jobs": f"{ui}/api/v1/applications/{app}/jobs",
        "stages": f"{ui}/api/v1/applications/{app}/stages?details=true",
        "streaming-page": f"{ui}/StreamingQuery/",
        "sql-page": f"{ui}/SQL/",
    }.items():
        (out / f"{name}-ui-{page}.txt").write_text(fetch(url))


def run_sink(spark: Any, endpoint: str, setup: dict[str, Any], options: dict[str, str], out: Path) -> int:
    """Query C: read the role stream, write it to the role's sink stream with the same secrets."""
    with TlsFront(endpoint) as front:
        df = reader(spark, endpoint, setup["roleStream"], startingPosition="TRIM_HORIZON", **options).selectExpr(
            "partitionKey", "data"
        )
        writer = (
            df.writeStream.format("aws-kinesis")
            .option("checkpointLocation", str(out.parent / "chk-sink"))
            .option("kinesis.endpointUrl", front.url)
            .option("kinesis.region", REGION)
            .option("kinesis.streamName", setup["sinkStream"])
            .option("kinesis.sink.verifyCertificate", "false")
            .trigger(processingTime="200 milliseconds")
        )
        for key, value in options.items():
            writer = writer.option(f"kinesis.{key}", value)
        query = writer.start()
        try:
            wait_for(
                lambda: sum(p["numInputRows"] for p in query.recentProgress) >= ROWS, query, what=f"{ROWS} rows (sink)"
            )
            wait_batches(query, 2)
            capture(spark, "sink", query, out)
            return int(sum(p["numInputRows"] for p in query.recentProgress))
        finally:
            stop(query)


def run_query(spark: Any, name: str, endpoint: str, stream: str, options: dict[str, str], out: Path) -> int:
    df = reader(spark, endpoint, stream, startingPosition="TRIM_HORIZON", **options)
    (out / f"{name}-explain-dataframe.txt").write_text(explain(df))
    collector = BatchCollector()
    query = start(df, collector, str(out.parent / f"chk-{name}"))
    try:
        wait_for(lambda: len(collector.rows()) >= ROWS, query, what=f"{ROWS} rows ({name})")
        wait_batches(query, 2)
        capture(spark, name, query, out)
    finally:
        stop(query)
    return len(collector.rows())


def main() -> None:
    endpoint, workdir = sys.argv[1], Path(sys.argv[2])
    secrets = json.loads((workdir / "secrets.json").read_text())
    setup = json.loads((workdir / "setup.json").read_text())
    out = workdir / "artifacts"
    out.mkdir(exist_ok=True)
    os.environ.update(AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY, AWS_REGION=REGION)
    java_options = f"-Daws.cborEnabled=false -Dlog4j2.configurationFile={workdir / 'log4j2.properties'}"
    builder = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "true")
        .config("spark.ui.port", str(free_port()))
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.extraJavaOptions", java_options)
        .config("spark.jars", setup["providerJar"])
        .config("spark.sql.shuffle.partitions", "2")
    )
    spark = spark_kinesis.configure_spark(builder).getOrCreate()
    role_options = {
        "stsRoleArn": setup["roleArn"],
        "stsEndpointUrl": endpoint,
        "stsSessionName": "hygiene",
        "stsExternalId": secrets["externalId"],
        "awsAccessKeyId": secrets["accessKeyId"],
        "awsSecretKey": secrets["secretKey"],
        "sessionToken": secrets["sessionToken"],
    }
    custom_options = {
        "credentialProviderClass": setup["providerClass"],
        "credentialProviderParam": secrets["providerParam"],
    }
    dynamodb_options = {
        "metadataCommitterType": "DYNAMODB",
        "dynamodb.tableName": setup["table"],
        "dynamodb.endpointUrl": endpoint,
    }
    counts = {
        "role": run_query(spark, "role", endpoint, setup["roleStream"], {**role_options, **dynamodb_options}, out),
        "custom": run_query(spark, "custom", endpoint, setup["defaultStream"], custom_options, out),
        "sink": run_sink(spark, endpoint, setup, role_options, out),
    }
    print("RESULT " + json.dumps(counts), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
