"""Runs two queries with every secret option set, logging at DEBUG, in its own Spark JVM.

Reads the secret values from ``<workdir>/secrets.json`` (never from the command line), and writes
everything a secret must never reach into ``<workdir>/artifacts/``: plan strings (``explain``,
``Scan.description``), streaming progress JSON and status, the Spark UI's REST answers and pages,
and the command lines of every process on the machine while the queries run. The DEBUG log goes to
``<workdir>/debug.log``. tests/test_secret_hygiene.py then looks for the secrets in all of it.

Query A: a role assumed with static keys + session token as base credentials and an external id
(ministack's STS), reading a stream in the role's account. Query B: a custom credentials provider
class with a secret parameter, reading a stream in the default account.
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


def run_query(spark: Any, name: str, endpoint: str, stream: str, options: dict[str, str], out: Path) -> int:
    df = reader(spark, endpoint, stream, startingPosition="TRIM_HORIZON", **options)
    plan = io.StringIO()
    with contextlib.redirect_stdout(plan):
        df.explain(extended=True)
    (out / f"{name}-explain-dataframe.txt").write_text(plan.getvalue())
    collector = BatchCollector()
    query = start(df, collector, str(out.parent / f"chk-{name}"))
    try:
        wait_for(lambda: len(collector.rows()) >= ROWS, query, what=f"{ROWS} rows ({name})")
        wait_batches(query, 2)
        plan = io.StringIO()
        with contextlib.redirect_stdout(plan):
            query.explain(extended=True)
        (out / f"{name}-explain-query.txt").write_text(plan.getvalue())
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
    counts = {
        "role": run_query(spark, "role", endpoint, setup["roleStream"], role_options, out),
        "custom": run_query(spark, "custom", endpoint, setup["defaultStream"], custom_options, out),
    }
    print("RESULT " + json.dumps(counts), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
