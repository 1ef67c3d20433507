"""Runs a named streaming query in its own Spark JVM with the Prometheus servlet on, and records
what they publish: tests/test_metrics_sink.py checks it.

``metrics_sink_job.py ENDPOINT STREAM WORKDIR``: the stream has two shards and 40 records. The job reads them, waits
until the servlet shows the lag of both shards and scrapes (``running.txt``),
splits the first shard, puts 40 more records, waits until the children's lag shows and scrapes again
(``resharded.txt``), stops the query and scrapes once more (``stopped.txt``). ``RESULT {...}`` on stdout gives the
application id, the shards and each phase's time.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import spark_kinesis
from harness.emulators import ACCESS_KEY, REGION, SECRET_KEY, free_port, kinesis_client
from harness.kinesis import put_plain, split_shard
from pyspark.sql import SparkSession
from streaming import BatchCollector, reader, stop, wait_batches, wait_for

QUERY = "lag check.v1"  # a space and a dot: the source name keeps neither


def scrape(url: str) -> str:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # the UI listens on loopback
    with opener.open(url, timeout=10) as response:
        return str(response.read().decode("utf-8"))


def lag_shards(text: str) -> set[str]:
    """The shards whose lag the scrape shows, as Prometheus spells them (``shardId_000000000000``)."""
    return set(re.findall(r"_kinesis_lag_check_v1_\w*?_(shardId_\d+)_millisBehindLatest_Value", text))


def prometheus(shard_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", shard_id)


def main() -> None:
    endpoint, stream, workdir = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    os.environ.update(AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY, AWS_REGION=REGION)
    began = time.monotonic()
    builder = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "true")
        .config("spark.ui.port", str(free_port()))
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.metrics.conf.*.sink.prometheusServlet.class", "org.apache.spark.metrics.sink.PrometheusServlet")
        .config("spark.metrics.conf.*.sink.prometheusServlet.path", "/metrics/prometheus")
    )
    spark = spark_kinesis.configure_spark(builder).getOrCreate()
    url = f"{spark.sparkContext.uiWebUrl}/metrics/prometheus"
    kinesis = kinesis_client(endpoint)
    shards = [s["ShardId"] for s in kinesis.list_shards(StreamName=stream)["Shards"]]
    phases = {"spark": time.monotonic() - began}

    collector = BatchCollector()
    df = reader(spark, endpoint, stream, startingPosition="TRIM_HORIZON")
    query = (
        df.writeStream.queryName(QUERY)
        .foreachBatch(collector)
        .option("checkpointLocation", str(workdir / "chk"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        wait_for(lambda: len(collector.rows()) >= 40, query, what="the first 40 records")
        wait_batches(query, 1)
        wait_for(lambda: lag_shards(scrape(url)) >= {prometheus(s) for s in shards}, query, 90, "every shard's lag")
        (workdir / "running.txt").write_text(scrape(url))
        phases["running"] = time.monotonic() - began

        children = split_shard(kinesis, stream, shards[0])
        put_plain(kinesis, stream, [(f"k{i}", f"after-{i:02d}") for i in range(40)])
        wait_for(lambda: len(collector.rows()) >= 80, query, what="the 40 records put after the split")
        wait_batches(query, 1)  # the batch that read the last rows has reported its metrics
        wanted = {prometheus(s) for s in [*children, shards[1]]}
        wait_for(lambda: lag_shards(scrape(url)) == wanted, query, 90, f"the lag of exactly {sorted(wanted)}")
        (workdir / "resharded.txt").write_text(scrape(url))
        phases["resharded"] = time.monotonic() - began
        rows = len(collector.rows())
    finally:
        stop(query)
    (workdir / "stopped.txt").write_text(scrape(url))
    phases["stopped"] = time.monotonic() - began
    result = {"app": spark.sparkContext.applicationId, "shards": shards, "children": children, "rows": rows}
    print("RESULT " + json.dumps({**result, "phases": phases}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
