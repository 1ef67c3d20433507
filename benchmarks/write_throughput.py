"""Write throughput of the sink next to the bare KPL, aggregation on and off, in one run.

* baseline: benchmarks/BareKplWriter.java, the KPL inside our shaded jar fed from one thread with the
  sink's default producer settings and back-pressure, no Spark.
* sink: a Spark batch write (``local[2]``, two partitions) of the same rows through
  ``df.write.format("aws-kinesis")``, with the sink's defaults, once per producer (``--producers``): the KPL
  (``kinesis.sink.producer=KPL``) and the in-JVM one (``JAVA``; the AWS SDK's CBOR is turned off in the Spark JVM,
  as ministack needs).

Both write to ministack served over TLS (the KPL speaks only HTTPS; ministack also answers the KPL's STS
GetCallerIdentity), to a fresh 4-shard stream each, after a warm-up write that lets the producer learn
the stream's shards. Timed: from the first row to the last acknowledgement. The ratio is the sink's
rows/s over the bare KPL's rows/s in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from harness import emulators  # noqa: E402
from harness.kinesis import create_stream, list_shards, read_shard  # noqa: E402
from results import add_row  # noqa: E402


def kinesis_records(client: Any, stream: str) -> int:
    """How many Kinesis records the stream holds (aggregates count as one)."""
    return sum(
        len(read_shard(client, stream, shard["ShardId"], max_calls=1000)[0]) for shard in list_shards(client, stream)
    )


def bare_kpl(jar: str, endpoint: str, stream: str, rows: int, size: int, aggregate: bool) -> dict[str, Any]:
    url = urlparse(endpoint)
    import pyspark

    slf4j = [str(p) for p in (Path(pyspark.__file__).parent / "jars").glob("slf4j-api-*.jar")]
    host, port = url.hostname or "", str(url.port)
    command = ["java", "-cp", os.pathsep.join([jar, *slf4j]), str(ROOT / "benchmarks" / "BareKplWriter.java")]
    out = subprocess.run(
        [*command, host, port, host, port, stream, str(rows), str(size), str(aggregate).lower()],
        check=True,
        capture_output=True,
        text=True,
        timeout=900,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def sink(
    spark: Any, endpoint: str, stream: str, rows: int, size: int, aggregate: bool, producer: str
) -> dict[str, Any]:
    options = {
        "kinesis.endpointUrl": endpoint,
        "kinesis.region": "us-east-1",
        "kinesis.streamName": stream,
        "kinesis.sink.verifyCertificate": "false",
        "kinesis.sink.aggregationEnabled": str(aggregate).lower(),
        "kinesis.sink.producer": producer,
    }
    if producer == "KPL":
        options["kinesis.sink.stsEndpointUrl"] = endpoint

    def frame(n: int, prefix: str) -> Any:
        return spark.range(0, n, 1, 2).selectExpr(
            f"concat('{prefix}', CAST(id % 1000 AS STRING)) AS partitionKey",
            f"CAST(rpad(CAST(id AS STRING), {size}, 'x') AS BINARY) AS data",
        )

    frame(100, "warm-").write.format("aws-kinesis").mode("append").options(**options).save()
    time.sleep(2)
    df = frame(rows, "key-").cache()
    df.count()
    started = time.monotonic()
    df.write.format("aws-kinesis").mode("append").options(**options).save()
    seconds = time.monotonic() - started
    df.unpersist()
    return {"rows": rows, "seconds": seconds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jar", required=True)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--results", help="JSON-lines file to append the table rows to (see results.py)")
    parser.add_argument("--producers", default="KPL,JAVA", help="kinesis.sink.producer values to run, comma-separated")
    args = parser.parse_args()
    producers = [p.strip().upper() for p in args.producers.split(",") if p.strip()]
    for key, value in {
        "AWS_ACCESS_KEY_ID": emulators.ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": emulators.SECRET_KEY,
        "AWS_REGION": emulators.REGION,
    }.items():
        os.environ[key] = value
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    import spark_kinesis
    import urllib3
    from pyspark.sql import SparkSession

    urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)  # the emulator's self-signed certificate

    spark = spark_kinesis.configure_spark(
        SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
    ).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    # ministack takes no CBOR, the AWS SDK's default for Kinesis (the KPL speaks JSON; the driver's check and the
    # in-JVM producer use the SDK).
    spark._jvm.java.lang.System.setProperty("aws.cborEnabled", "false")
    results = []
    with emulators.running("ministack", tls=True) as emulator:
        client = emulators.kinesis_client(emulator.endpoint)
        for aggregate in (True, False):
            base_stream = create_stream(client, f"bench-kpl-{aggregate}-{time.time_ns()}", 4)
            base = bare_kpl(args.jar, emulator.endpoint, base_stream, args.rows, args.size, aggregate)
            mode = "on" if aggregate else "off"
            base_rate = base["rows"] / base["seconds"]
            # Every stream also holds the 100 warm-up rows; per row counts them in.
            written = args.rows + 100
            base_per_row = kinesis_records(client, base_stream) / written
            results.append((f"bare KPL, aggregation {mode}", base_rate, base["seconds"], base_per_row))
            for producer in producers:
                sink_stream = create_stream(client, f"bench-sink-{producer}-{aggregate}-{time.time_ns()}", 4)
                ours = sink(spark, emulator.endpoint, sink_stream, args.rows, args.size, aggregate, producer)
                sink_rate = ours["rows"] / ours["seconds"]
                sink_per_row = kinesis_records(client, sink_stream) / written
                add_row(
                    args.results,
                    f"sink ({producer}), {args.size} B rows, aggregation {mode}",
                    "rows/s (Kinesis records per row)",
                    f"{sink_rate:.0f} ({sink_per_row:.4f})",
                    baseline="bare KPL, same rows and settings",
                    baseline_value=f"{base_rate:.0f} ({base_per_row:.4f})",
                    ratio=sink_rate / base_rate,
                    notes=f"{args.rows} rows, 4 shards, ministack over TLS, df.write of 2 partitions",
                )
                results.append((f"sink {producer}, aggregation {mode}", sink_rate, ours["seconds"], sink_per_row))
                results.append((f"ratio sink {producer} / bare, aggr. {mode}", sink_rate / base_rate, 0.0, 0.0))
    spark.stop()
    print(f"\nwrite throughput: {args.rows} rows of {args.size} B, ministack over TLS, 4 shards\n")
    print(f"{'':40} {'rows/s':>10} {'seconds':>9} {'records/row':>12}")
    for name, value, seconds, per_row in results:
        if name.startswith("ratio"):
            print(f"{name:40} {value:>10.2f}")
        else:
            print(f"{name:40} {value:>10.0f} {seconds:>9.2f} {per_row:>12.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
