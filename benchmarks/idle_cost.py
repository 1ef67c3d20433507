"""What an idle stream costs a query, per idle minute: Spark batches, checkpoint files, metadata entries, calls.

One emulator (kinesis-local by default, as issue 28 measured), a 4-shard stream per case, Spark's default trigger
(a batch as soon as the previous one ends) and a JVM ``foreach`` sink (LatencyProbe.java, compiled as
benchmarks/latency.py does). Cases: polling and enhanced fan-out, each at the defaults and with
``kinesis.avoidEmptyBatches=false`` (``--option-key`` and ``--option-value`` give another key or value, e.g. the
awslabs ``kinesis.internal.avoidEmptyBatches``, which an old build accepted and ignored). Each case: a warm-up
record read, a few seconds to settle, then ``--idle-seconds`` of idle stream, watched through the counting proxy:
batches run (the checkpoint's highest offset file), files the checkpoint gained (offsets, commits and their
checksums; metadata entries under ``<checkpoint>/sources/0/kinesis``; it is listed every 0.5 s, so files purged
after ``minBatchesToRetain`` still count) and Kinesis calls by type. Then the latency of the first record after the
idle spell (put -> row handed to the sink), again after ``--spells - 1`` shorter spells of ``--spell-seconds``, and
whether every record put was read exactly once. Prints a table and one JSON line; with --results, appends rows.

With ``--storage s3a`` the checkpoint (and so the source's metadata under it) is on ``s3a://`` against ministack's
S3, through a second counting proxy: the window then also counts S3 requests by type (PUT, GET, HEAD, LIST, DELETE,
POST), scaled to an idle hour. S3A and the S3 SDK come from the local Maven repository (the versions the Scala suites
use for the pyspark's Hadoop), resolved offline by ``mvn dependency:build-classpath``.

    .venv/bin/python benchmarks/idle_cost.py [--idle-seconds 60] [--storage s3a] [--connector-jars LINE.jar,DEPS.jar]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from harness import emulators  # noqa: E402
from harness.kinesis import create_stream  # noqa: E402
from harness.proxy import CountingProxy  # noqa: E402
from latency import compile_probe, failed  # noqa: E402
from results import add_row  # noqa: E402
from sessions import CBOR_OFF, add_connector_jars, kinesis_stream, local_session  # noqa: E402

SHARDS = 4
EFO = {"kinesis.consumerType": "SubscribeToShard"}
READERS = (("polling", {}), ("fan-out", EFO))


# S3 requests by type, from the S3 proxy's "<METHOD> <path>[?list-type|?delete]" counts.
S3_TYPES = ("PUT", "GET", "HEAD", "LIST", "DELETE", "POST")
# S3 Standard request prices in us-east-1, USD per 1,000 requests (DELETE is free).
S3_PRICE_PER_1000 = {"PUT": 0.005, "POST": 0.005, "LIST": 0.005, "GET": 0.0004, "HEAD": 0.0004, "DELETE": 0.0}
S3_BUCKET = "bench-idle-cost"


def s3_request_type(operation: str) -> str:
    method, _, path = operation.partition(" ")
    if path.endswith("?list-type"):
        return "LIST"
    if path.endswith("?delete") or method == "DELETE":
        return "DELETE"
    return method if method in S3_TYPES else "other"


class Checkpoint:
    """A checkpoint location: a local directory, or a prefix of ``S3_BUCKET`` read through ``s3`` (boto3)."""

    def __init__(self, label: str, s3: Any | None) -> None:
        self.s3 = s3
        if s3 is None:
            self.root = Path(tempfile.mkdtemp(prefix="bench-idle-cost-chk-"))
            self.location = str(self.root)
        else:
            self.prefix = f"{re.sub(r'[^a-z0-9]+', '-', label)}-{time.time_ns()}/"
            self.location = f"s3a://{S3_BUCKET}/{self.prefix}"

    def listing(self) -> set[str]:
        if self.s3 is None:
            return {str(p.relative_to(self.root)) for p in self.root.rglob("*") if p.is_file()}
        keys: set[str] = set()
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=S3_BUCKET, Prefix=self.prefix):
            keys |= {item["Key"][len(self.prefix) :] for item in page.get("Contents", [])}
        return keys


def s3a_session_conf(endpoint: str) -> dict[str, str]:
    """Spark settings for ``s3a://`` on an S3 emulator at ``endpoint`` with the dummy test credentials."""
    hadoop = {
        "fs.s3a.endpoint": endpoint,
        "fs.s3a.endpoint.region": emulators.REGION,
        "fs.s3a.path.style.access": "true",
        "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.access.key": emulators.ACCESS_KEY,
        "fs.s3a.secret.key": emulators.SECRET_KEY,
        "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
    }
    return {f"spark.hadoop.{key}": value for key, value in hadoop.items()}


def s3a_jars(spark_jars: Path) -> list[str]:
    """hadoop-aws for the Hadoop of ``spark_jars`` and the AWS SDK's S3 client with what it needs, from ~/.m2."""
    hadoop = next(spark_jars.glob("hadoop-client-api-*.jar")).name.removeprefix("hadoop-client-api-")[: -len(".jar")]
    line = next(p for p in sorted((ROOT / "lines").glob("*/pom.xml")) if f"<hadoop.version>{hadoop}<" in p.read_text())
    project = Path(tempfile.mkdtemp(prefix="bench-s3a-classpath-"))
    # The line's own test classpath holds exactly S3A's runtime set (lines/pom.xml): list it, keep what Spark lacks.
    out = project / "classpath.txt"
    subprocess.run(
        [
            "mvn",
            "-B",
            "-q",
            "-o",
            "-f",
            str(line),
            "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:build-classpath",
            "-Dmdep.includeScope=test",
            f"-Dmdep.outputFile={out}",
        ],
        check=True,
        timeout=300,
    )
    wanted = (
        "/org/apache/hadoop/hadoop-aws/",
        "/software/amazon/awssdk/",
        "/software/amazon/s3/",
        "/org/reactivestreams/",
        "/software/amazon/eventstream/",
    )
    return [jar for jar in out.read_text().strip().split(":") if any(w in jar for w in wanted)]


class FilesSeen:
    """Every file of ``checkpoint`` seen by a listing every 0.5 s, from ``start()`` on."""

    def __init__(self, checkpoint: Checkpoint) -> None:
        self.checkpoint = checkpoint
        self.seen: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def listing(self) -> set[str]:
        return self.checkpoint.listing()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.seen |= self.listing()
            self._stop.wait(0.5)

    def start(self) -> FilesSeen:
        self._thread.start()
        return self

    def stop(self) -> set[str]:
        self._stop.set()
        self._thread.join()
        return self.seen | self.listing()


def last_batch(checkpoint: Checkpoint) -> int:
    ids = [int(name.split("/", 1)[1]) for name in checkpoint.listing() if re.fullmatch(r"offsets/\d+", name)]
    return max(ids, default=-1)


def first_row_ms(kinesis: Any, stream: str, probe: Any, query: Any, label: str, timeout: float = 60.0) -> float:
    """Puts one record stamped with its put time; the put-to-row latency of its row, in milliseconds."""
    kinesis.put_record(StreamName=stream, PartitionKey=label, Data=f"t={time.time():.6f}".encode())
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        failed(query)
        samples = list(probe.drain())
        if samples:
            if len(samples) > 1:
                raise RuntimeError(f"{label}: {len(samples)} rows for one record")
            return float(samples[0])
        time.sleep(0.02)
    raise RuntimeError(f"{label}: the record was not read within {timeout} s")


def measure(spark: Any, kinesis: Any, endpoint: str, options: dict[str, str], args: Any, label: str) -> dict[str, Any]:
    stream = f"bench-idle-cost-{time.time_ns()}"
    create_stream(kinesis, stream, SHARDS)
    checkpoint = Checkpoint(label, args.s3)
    jvm = spark._jvm
    probe = jvm.LatencyProbe
    query = (
        kinesis_stream(spark, endpoint, stream, options, consumer_prefix="idle")
        .load()
        .select("data")
        ._jdf.writeStream()
        .foreach(probe())
        .option("checkpointLocation", checkpoint.location)
        .start()
    )
    try:
        probe.drain()
        warm_ms = first_row_ms(kinesis, stream, probe, query, "warm-up", timeout=180)
        time.sleep(args.settle_seconds)
        before_files = FilesSeen(checkpoint).listing()
        watcher = FilesSeen(checkpoint).start()
        args.proxy.reset()
        if args.s3_proxy:
            args.s3_proxy.reset()
        batch_before = last_batch(checkpoint)
        started = time.monotonic()
        time.sleep(args.idle_seconds)
        minutes = (time.monotonic() - started) / 60
        batches = last_batch(checkpoint) - batch_before
        calls = args.proxy.counts()
        s3_requests: Counter[str] = Counter()
        for op, n in (args.s3_proxy.counts() if args.s3_proxy else {}).items():
            s3_requests[s3_request_type(op)] += n
        new_files = watcher.stop() - before_files
        latencies = [first_row_ms(kinesis, stream, probe, query, "after-idle-0")]
        for spell in range(1, args.spells):
            time.sleep(args.spell_seconds)
            latencies.append(first_row_ms(kinesis, stream, probe, query, f"after-idle-{spell}"))
        time.sleep(2)
        extra = len(list(probe.drain()))
    finally:
        query.stop()
    metadata = [f for f in new_files if "/kinesis/" in f]  # the source's metadata: <checkpoint>/sources/0/kinesis
    return {
        "minutes": round(minutes, 2),
        "batchesPerMinute": round(batches / minutes, 1),
        "checkpointFilesPerMinute": round((len(new_files) - len(metadata)) / minutes, 1),
        "metadataEntriesPerMinute": round(len(metadata) / minutes, 1),
        "callsPerMinute": {op: round(n / minutes, 1) for op, n in sorted(calls.items())},
        "firstRowMs": [round(ms) for ms in latencies],
        "warmUpMs": round(warm_ms),
        "duplicateRows": extra,
        **(
            {
                "s3RequestsPerHour": {kind: round(s3_requests[kind] * 60 / minutes) for kind in S3_TYPES},
                "s3UsdPerMonth": round(
                    sum(S3_PRICE_PER_1000.get(k, 0.005) * n / 1000 for k, n in s3_requests.items())
                    * 60
                    * 24
                    * 30
                    / minutes,
                    3,
                ),
            }
            if args.s3_proxy
            else {}
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle-seconds", type=float, default=60.0, help="the idle window measured per case")
    parser.add_argument("--settle-seconds", type=float, default=5.0, help="after the warm-up record, before the window")
    parser.add_argument("--spells", type=int, default=3, help="first-record latencies: after the window, then more")
    parser.add_argument("--spell-seconds", type=float, default=10.0, help="the idle spells after the first")
    parser.add_argument("--emulator", default="kinesis-local", choices=emulators.KINDS)
    parser.add_argument("--option-key", default="kinesis.avoidEmptyBatches")
    parser.add_argument("--option-value", default="false", help="the value of --option-key in the second case")
    parser.add_argument("--cases", default="", help="comma-separated substrings of case labels to run")
    parser.add_argument(
        "--storage", default="local", choices=("local", "s3a"), help="where the checkpoint is: s3a is ministack's S3"
    )
    add_connector_jars(parser)
    parser.add_argument("--results", help="JSON-lines file to append the table rows to (see results.py)")
    args = parser.parse_args()
    os.environ.update(
        AWS_ACCESS_KEY_ID=emulators.ACCESS_KEY, AWS_SECRET_ACCESS_KEY=emulators.SECRET_KEY, AWS_REGION="us-east-1"
    )
    import pyspark

    cases = [
        (f"{reader}, {mode}", {**options, **({args.option_key: args.option_value} if mode != "defaults" else {})})
        for reader, options in READERS
        for mode in ("defaults", f"{args.option_key.split('.')[-1]}={args.option_value}")
    ]
    cases = [c for c in cases if not args.cases or any(w in c[0] for w in args.cases.split(","))]
    probe_jar = compile_probe(Path(pyspark.__file__).parent / "jars", Path(tempfile.mkdtemp(prefix="idle-probe-")))
    table: list[tuple[str, dict[str, Any]]] = []
    with contextlib.ExitStack() as stack:
        emulator = stack.enter_context(emulators.running(args.emulator))
        proxy = stack.enter_context(CountingProxy(emulator.endpoint))
        args.proxy = proxy
        args.s3 = args.s3_proxy = None
        jars, conf = [str(probe_jar)], dict(CBOR_OFF)
        if args.storage == "s3a":
            ministack = (
                emulator if args.emulator == "ministack" else stack.enter_context(emulators.running("ministack"))
            )
            args.s3_proxy = stack.enter_context(CountingProxy(ministack.endpoint))
            args.s3 = emulators.kinesis_client(ministack.endpoint, service="s3")
            args.s3.create_bucket(Bucket=S3_BUCKET)
            jars += s3a_jars(Path(pyspark.__file__).parent / "jars")
            conf.update(s3a_session_conf(args.s3_proxy.url))
        kinesis = emulators.kinesis_client(emulator.endpoint)
        spark = local_session(args.connector_jars, jars=jars, conf=conf)
        for label, options in cases:
            table.append((label, measure(spark, kinesis, proxy.url, options, args, label)))
            print(label, json.dumps(table[-1][1]), flush=True)
        spark.stop()

    conditions = (
        f"{SHARDS} shards, {args.emulator}, Spark's default trigger, local[2] on {os.cpu_count()} cores, "
        f"{args.idle_seconds:.0f} s idle window, checkpoint on {args.storage}"
    )
    print(f"\nIdle stream cost per minute, {conditions}")
    print(f"{'case':34s} {'batches':>8s} {'chk files':>9s} {'metadata':>8s} {'first row ms':>22s}  calls/min")
    for label, r in table:
        print(
            f"{label:34s} {r['batchesPerMinute']:8.1f} {r['checkpointFilesPerMinute']:9.1f} "
            f"{r['metadataEntriesPerMinute']:8.1f} {r['firstRowMs']!s:>22s}  {r['callsPerMinute']}"
            + (f"  S3 per idle hour {r['s3RequestsPerHour']}, ${r['s3UsdPerMonth']}/month" if args.s3_proxy else "")
        )
        add_row(
            args.results,
            f"idle stream, {label}",
            "per idle minute: Spark batches / checkpoint files / metadata entries; first row after idle (ms)",
            f"{r['batchesPerMinute']:.0f} / {r['checkpointFilesPerMinute']:.0f} / {r['metadataEntriesPerMinute']:.0f}; "
            f"{statistics.median(r['firstRowMs']):.0f}",
            notes=f"calls per minute {r['callsPerMinute']}; first rows {r['firstRowMs']} ms; {conditions}",
        )
    print(json.dumps({"scenario": "idle cost", "conditions": conditions, "cases": dict(table)}))


if __name__ == "__main__":
    main()
