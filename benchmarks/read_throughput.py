"""Read throughput of the source against bare AWS SDK loops, measured in the same run.

Both read the same 4-shard streams on a local ministack emulator, through the same counting proxy
(so both pay the same loopback hop, and the proxy counts the connector's API calls by type). With
``--emulator memory`` they read benchmarks/MemoryKinesis.java instead, an endpoint that keeps the streams in memory
and answers at once (it counts the calls itself; its SubscribeToShard sends events as fast as the reader takes them):
at a million records ministack, not the reader, sets the pace.

* baselines: benchmarks/BareGetRecordsLoop.java, the AWS SDK for Java v2 in a plain loop, one thread
  per shard, no pacing: the ceiling a polling connector cannot pass; and benchmarks/BareSubscribeLoop.java,
  the SDK's SubscribeToShard on every shard, the ceiling for EFO. Both de-aggregate every Kinesis record into
  its user records with the KPL's own protobuf classes (KplDeaggregator.java), as a KCL consumer would, so the
  KPL-aggregated rows compare like with like;
* connector: a Spark query (local[2], noop sink) reading the stream from TRIM_HORIZON until it has
  every record, with the default options, with getRecords.fetchIntervalMs=0, with a batch limit, and with
  enhanced fan-out (SubscribeToShard; its rows show no GetRecords, and SubscribeToShard calls instead); and one
  batch read (spark.read, TRIM_HORIZON to the tip, default options) of the same backlog. With ``--real-time``,
  only a real-time mode query (Spark 4.1+, a slot per shard, RowCounter.java as its sink).

Every measurement is taken --rounds times, the baselines and the connector's variants taking turns in each round
(so that no variant is always the first after the warm-up, when the JIT is still compiling), and the median of
each is reported. Prints one table; ratios are connector / baseline of the same run. With --results, also appends
the rows (throughput and CPU seconds per million records) and the run's conditions to the benchmark command's one
table. Run with benchmarks/run.sh.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from harness import emulators  # noqa: E402
from harness.kinesis import create_stream, put_plain  # noqa: E402
from harness.proxy import CountingProxy  # noqa: E402
from results import (  # noqa: E402
    add_conditions,
    add_row,
    emulator_version,
    java_endpoint,
    jvm_pid,
    process_cpu_seconds,
)
from sessions import CBOR_OFF, add_connector_jars, kinesis_stream, local_session  # noqa: E402

SCENARIO = "read, {reader}, {shards} shards, {kind}"


def compile_deaggregator(jar: str, into: Path) -> Path:
    """KplDeaggregator.java compiled against the shaded jar (the KPL's protobuf classes), for the bare loops."""
    source = ROOT / "benchmarks" / "KplDeaggregator.java"
    subprocess.run(["javac", "-cp", jar, "-d", str(into), str(source)], check=True)
    return into


def bare_java(program: str, class_path: list[str], *args: str) -> dict[str, Any]:
    """Run one of the bare SDK programs of this folder and return the JSON line it prints."""
    done = subprocess.run(
        [
            "java",
            "-Daws.cborEnabled=false",
            "-cp",
            os.pathsep.join(class_path),
            str(ROOT / "benchmarks" / program),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{program} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def connector(spark: Any, endpoint: str, stream: str, expected: int, options: dict[str, str]) -> dict[str, Any]:
    df = kinesis_stream(spark, endpoint, stream, options).load().selectExpr("length(data) AS size")
    pid = jvm_pid(spark)
    cpu_started = process_cpu_seconds(pid)
    started = time.monotonic()
    query = df.writeStream.format("noop").option("checkpointLocation", f"/tmp/bench-chk-{time.time_ns()}").start()
    rows = 0
    while rows < expected:
        if query.exception() is not None:
            raise RuntimeError(str(query.exception()))
        if time.monotonic() - started > max(300, expected / 10_000):
            progress = [
                (p["batchId"], p["numInputRows"], p["durationMs"].get("triggerExecution"))
                for p in query.recentProgress[-20:]
            ]
            raise RuntimeError(f"only {rows} of {expected} rows after {time.monotonic() - started:.0f} s: {progress}")
        rows = sum(p["numInputRows"] for p in query.recentProgress)
        time.sleep(0.05)
    seconds = time.monotonic() - started
    cpu_seconds = process_cpu_seconds(pid) - cpu_started
    query.stop()
    reading = [p for p in query.recentProgress if p["numInputRows"] > 0]
    rows = sum(p["numInputRows"] for p in reading)  # with any batch that ended after the last look: exactly all
    if rows != expected:
        raise RuntimeError(f"the query read {rows} rows, expected {expected}")
    return {"records": rows, "seconds": seconds, "cpuSeconds": cpu_seconds, "batches": len(reading)} | steady_state(
        reading
    )


def steady_state(progress: list[dict[str, Any]]) -> dict[str, Any]:
    """Records and seconds after the first batch that read any: from its end to the last batch's end (the query's
    start-up, planning and first fetches excluded). Empty when one batch read everything."""

    def end(p: dict[str, Any]) -> float:
        started = datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp()
        return float(started + p["durationMs"]["triggerExecution"] / 1000)

    if len(progress) < 2:
        return {}
    return {
        "steadyRecords": sum(p["numInputRows"] for p in progress[1:]),
        "steadySeconds": end(progress[-1]) - end(progress[0]),
    }


def batch_read(spark: Any, endpoint: str, stream: str, expected: int, options: dict[str, str]) -> dict[str, Any]:
    """One batch read (spark.read) of the whole stream, TRIM_HORIZON to the tip, summing the data lengths."""
    df = (
        spark.read.format("aws-kinesis")
        .option("kinesis.endpointUrl", endpoint)
        .option("kinesis.region", "us-east-1")
        .option("kinesis.streamName", stream)
        .options(**options)
        .load()
        .selectExpr("count(*) AS n", "sum(length(data)) AS bytes")
    )
    pid = jvm_pid(spark)
    cpu_started = process_cpu_seconds(pid)
    started = time.monotonic()
    rows = int(df.collect()[0]["n"])
    seconds = time.monotonic() - started
    if rows != expected:
        raise RuntimeError(f"the batch read returned {rows} rows, expected {expected}")
    return {"records": rows, "seconds": seconds, "cpuSeconds": process_cpu_seconds(pid) - cpu_started, "batches": 1}


def real_time_read(spark: Any, endpoint: str, stream: str, expected: int, options: dict[str, str]) -> dict[str, Any]:
    """A real-time mode query (Trigger.RealTime, batches of 10 s) reading the stream from TRIM_HORIZON into
    RowCounter.java until it has every record. Its progress comes only at a batch's end, so the rate after start-up
    is taken from the sink: from its first row to its last."""
    jvm = spark._jvm
    counter = jvm.RowCounter
    counter.reset()
    writer = (
        kinesis_stream(spark, endpoint, stream, options)
        .load()
        .select("data")
        ._jdf.writeStream()
        .foreach(counter())
        .outputMode("update")
        .option("checkpointLocation", f"/tmp/bench-chk-{time.time_ns()}")
        .trigger(jvm.org.apache.spark.sql.streaming.Trigger.RealTime("10 seconds"))
    )
    pid = jvm_pid(spark)
    cpu_started = process_cpu_seconds(pid)
    started = time.monotonic()
    query = writer.start()
    try:
        while counter.rows() < expected:
            if query.exception().isDefined():
                raise RuntimeError(str(query.exception().get()))
            if time.monotonic() - started > max(300, expected / 10_000):
                raise RuntimeError(f"only {counter.rows()} of {expected} rows after {time.monotonic() - started:.0f} s")
            time.sleep(0.05)
        seconds = time.monotonic() - started
        cpu_seconds = process_cpu_seconds(pid) - cpu_started
    finally:
        query.stop()
    rows = int(counter.rows())
    return {
        "records": rows,
        "seconds": seconds,
        "cpuSeconds": cpu_seconds,
        "batches": 1,
        "steadyRecords": rows,
        "steadySeconds": counter.spanNanos() / 1e9,
    }


def flight_recorder(pid: int, action: str, name: str, into: Path | None = None) -> None:
    """Starts (JFR's ``profile`` settings) or stops (into a file) a flight recording of the JVM ``pid`` with jcmd."""
    command = ["jcmd", str(pid), f"JFR.{action}", f"name={name}"]
    command.append("settings=profile" if action == "start" else f"filename={into}")
    subprocess.run(command, check=True, capture_output=True, timeout=120)


def active_consumer(kinesis: Any, stream: str) -> str:
    """A new enhanced fan-out consumer of the stream, registered and ACTIVE (as the bare loop's is before it is timed);
    the query finds it ACTIVE, uses it, and deregisters it when it stops."""
    arn = kinesis.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]["StreamARN"]
    name = f"bench-{time.time_ns()}"
    kinesis.register_stream_consumer(StreamARN=arn, ConsumerName=name)
    deadline = time.monotonic() + 60
    while (
        kinesis.describe_stream_consumer(StreamARN=arn, ConsumerName=name)["ConsumerDescription"]["ConsumerStatus"]
        != "ACTIVE"
    ):
        if time.monotonic() > deadline:
            raise RuntimeError(f"consumer {name} not ACTIVE after 60 s")
        time.sleep(0.05)
    return name


def user_records(count: int, size: int) -> list[tuple[str, str]]:
    """``count`` (partition key, data) pairs, each data ``size`` bytes, numbered."""
    payload = "x" * (size - 8)
    return [(f"key-{i}", f"{i:07d}-{payload}") for i in range(count)]


def put_plain_parallel(kinesis: Any, stream: str, records: list[tuple[str, str]], writers: int = 8) -> None:
    """``records`` put with PutRecords by ``writers`` threads at once, each on its own run of the list."""
    chunk = 10_000
    with ThreadPoolExecutor(writers) as pool:
        list(pool.map(lambda i: put_plain(kinesis, stream, records[i : i + chunk]), range(0, len(records), chunk)))


def aggregate_of(records: list[tuple[str, str]]) -> bytes:
    """One KPL aggregate (aws-kinesis-agg) of ``records``, all of which must fit in one."""
    from aws_kinesis_agg.aggregator import RecordAggregator

    aggregator = RecordAggregator()
    for key, data in records:
        if aggregator.add_user_record(key, data.encode()) is not None:
            raise RuntimeError("the records do not fit in one aggregate")
    return bytes(aggregator.clear_and_get().get_contents()[2])


def load_streams(
    kinesis: Any, count: int, size: int, shards: int, aggregated_count: int | None = None
) -> tuple[tuple[str, str], ...]:
    """Two new streams: ``count`` plain user records, and ``aggregated_count`` (default ``count``) user records in
    KPL aggregates of 400; (label, name) of each.

    The plain records are numbered and put by parallel writers. Like the KPL, an aggregate holds only records of the
    shard it is routed to (by explicit hash key; readers drop sub-records outside the shard's range): one aggregate
    is built per shard and put as often as that shard's share of the records needs (the last one shorter), so that
    10 million aggregated records cost 25,000 puts and no per-record work here.
    """
    aggregated_count = count if aggregated_count is None else aggregated_count
    plain, aggregated = f"bench-plain-{time.time_ns()}", f"bench-agg-{time.time_ns()}"
    create_stream(kinesis, plain, shards)
    create_stream(kinesis, aggregated, shards)
    loaded = time.monotonic()
    put_plain_parallel(kinesis, plain, user_records(count, size))
    listed = kinesis.list_shards(StreamName=aggregated)["Shards"]
    ranges = [(int(s["HashKeyRange"]["StartingHashKey"]), int(s["HashKeyRange"]["EndingHashKey"])) for s in listed]
    per_aggregate = 400
    members: list[list[tuple[str, str]]] = [[] for _ in listed]
    for key, data in user_records(per_aggregate * len(listed) * 8, size):
        hashed = int.from_bytes(hashlib.md5(key.encode()).digest(), "big")
        owner = next(i for i, (low, high) in enumerate(ranges) if low <= hashed <= high)
        if len(members[owner]) < per_aggregate:
            members[owner].append((key, data))
    if any(len(m) < per_aggregate for m in members):
        raise RuntimeError("too few candidate keys to fill one aggregate per shard")
    aggregates = [aggregate_of(m) for m in members]
    puts: list[dict[str, Any]] = []
    for shard in range(len(ranges)):
        share = aggregated_count // len(listed) + (1 if shard < aggregated_count % len(listed) else 0)
        full, rest = divmod(share, per_aggregate)
        request = {"ExplicitHashKey": str(ranges[shard][0]), "PartitionKey": members[shard][0][0]}
        puts += [{**request, "Data": aggregates[shard]}] * full
        if rest:
            puts.append({**request, "Data": aggregate_of(members[shard][:rest])})

    def put_batch(start: int) -> None:  # 100 aggregates of 40 kB: within PutRecords' 5 MB
        batch = puts[start : start + 100]
        response = kinesis.put_records(StreamName=aggregated, Records=batch)
        if response.get("FailedRecordCount"):
            raise RuntimeError(f"{response['FailedRecordCount']} aggregates were not put: {response['Records'][:3]}")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put_batch, range(0, len(puts), 100)))
    print(
        f"loaded {count:,} plain and {aggregated_count:,} aggregated records of {size} B in "
        f"{time.monotonic() - loaded:.1f}s",
        file=sys.stderr,
    )
    return (f"plain {size} B", plain), ("KPL-aggregated", aggregated)


NETTY_ARTIFACTS = ("common", "buffer", "transport", "resolver", "codec", "codec-http", "codec-http2", "handler")


def memory_kinesis_class_path() -> str:
    """MemoryKinesis.java's class path: the Netty 4.1 jars of the version the AWS SDK of pom.xml uses (its
    aws-sdk-java-pom's netty.version), from ~/.m2, where scripts/setup.sh's Maven build puts them."""
    m2 = Path.home() / ".m2" / "repository"
    sdk = re.search(r"<awssdk.version>([^<]+)<", (ROOT / "pom.xml").read_text())
    sdk_pom = m2 / "software/amazon/awssdk/aws-sdk-java-pom" / (sdk[1] if sdk else "?")
    poms = list(sdk_pom.glob("*.pom"))
    netty = re.search(r"<netty.version>([^<]+)<", poms[0].read_text()) if poms else None
    if netty is None:
        raise RuntimeError(f"no {sdk_pom}/*.pom naming netty.version: run scripts/setup.sh (its Maven build) first")
    jars = [m2 / "io/netty" / f"netty-{a}" / netty[1] / f"netty-{a}-{netty[1]}.jar" for a in NETTY_ARTIFACTS]
    missing = [str(j) for j in jars if not j.is_file()]
    if missing:
        raise RuntimeError(f"MemoryKinesis.java needs {', '.join(missing)}: run scripts/setup.sh (its Maven build)")
    return os.pathsep.join(str(j) for j in jars)


class MemoryEndpoint:
    """benchmarks/MemoryKinesis.java at ``url``, with ``counts``/``reset`` of the requests per operation, as
    CountingProxy has them."""

    def __init__(self, url: str) -> None:
        self.url = url

    def counts(self) -> dict[str, int]:
        with urllib.request.urlopen(f"{self.url}/counts", timeout=30) as answer:
            return dict(json.loads(answer.read()))

    def reset(self) -> None:
        urllib.request.urlopen(urllib.request.Request(f"{self.url}/reset", method="POST"), timeout=30).close()


def add_emulator(parser: argparse.ArgumentParser) -> None:
    """Add ``--emulator``: what serves the streams (see :func:`endpoint`)."""
    parser.add_argument(
        "--emulator",
        choices=("ministack", "memory"),
        default="ministack",
        help="what serves the streams: ministack, or MemoryKinesis.java (for reads of millions)",
    )


@contextmanager
def endpoint(kind: str, counted: bool = True) -> Iterator[Any]:
    """The endpoint the readers use (its ``url``): MemoryKinesis, which counts requests per operation itself, or
    ministack, behind a CountingProxy unless not ``counted``."""
    if kind == "memory":
        options = ("-cp", memory_kinesis_class_path(), "-Xmx4g", "-XX:+UseParallelGC")
        with java_endpoint("MemoryKinesis.java", jvm_options=options) as url:
            yield MemoryEndpoint(url)
    elif counted:
        with emulators.running("ministack") as emulator, CountingProxy(emulator.endpoint) as proxy:
            yield proxy
    else:
        with emulators.running("ministack") as emulator:
            yield argparse.Namespace(url=emulator.endpoint)


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of each measure over the rounds (records/s as seconds, CPU seconds, batches, records/s after the
    first batch); the rest as run 1."""
    steady = [r for r in runs if r.get("steadySeconds")]
    return {
        **runs[0],
        "seconds": statistics.median(r["seconds"] for r in runs),
        "cpuSeconds": statistics.median(r["cpuSeconds"] for r in runs),
        "batches": round(statistics.median(r["batches"] for r in runs)) if "batches" in runs[0] else None,
        "steadyRate": statistics.median(r["steadyRecords"] / r["steadySeconds"] for r in steady) if steady else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100000, help="plain user records")
    parser.add_argument("--aggregated-records", type=int, help="KPL-aggregated user records (default: --records)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="1 million plain and 1 million KPL-aggregated records served by MemoryKinesis, one round, the default "
        "polling, fan-out and batch reads only",
    )
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3, help="measurements of each row; the median is reported")
    parser.add_argument("--jar", required=True)
    parser.add_argument("--results", help="JSON-lines file to append the table rows to (see results.py)")
    parser.add_argument(
        "--spark-line-row",
        action="store_true",
        help="only plain records, polling with defaults, against the bare GetRecords loop; the scenario names "
        "the running pyspark's version (run with another Spark line's venv)",
    )
    parser.add_argument(
        "--profile",
        metavar="DIR",
        help="record each connector variant's first round with Java Flight Recorder into DIR (see profile_summary.py)",
    )
    add_emulator(parser)
    parser.add_argument(
        "--real-time",
        action="store_true",
        help="only real-time mode (Spark 4.1+), polling, against the bare GetRecords loop; the session has a slot "
        "per shard, as real-time mode needs",
    )
    parser.add_argument(
        "--only",
        help="only the connector variants whose name contains this text, or one of several separated by | (e.g. "
        "'defaults|batch read')",
    )
    add_connector_jars(parser)
    args = parser.parse_args()
    if args.quick:
        # MemoryKinesis: ministack's SubscribeToShard stalls for minutes on a million aggregated records.
        args.records, args.aggregated_records, args.rounds, args.emulator = 1_000_000, 1_000_000, 1, "memory"
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
    load_at_start = os.getloadavg()  # a shared machine's other work shows in the ratios: printed with the table
    os.environ.update(
        AWS_ACCESS_KEY_ID=emulators.ACCESS_KEY, AWS_SECRET_ACCESS_KEY=emulators.SECRET_KEY, AWS_REGION="us-east-1"
    )
    import pyspark

    slf4j = [str(p) for p in (Path(pyspark.__file__).parent / "jars").glob("slf4j-api-*.jar")]
    classes = compile_deaggregator(args.jar, Path(tempfile.mkdtemp(prefix="bench-deagg-")))
    class_path = [args.jar, *slf4j, str(classes)]
    rows_table = []
    slots = args.shards if args.real_time else 2
    add_conditions(
        args.results,
        {
            f"read: Spark {pyspark.__version__}": f"local[{slots}], {args.records:,} user records of {args.size} B on "
            f"{args.shards} shards, median of {args.rounds} rounds",
            "emulator": "MemoryKinesis.java"
            if args.emulator == "memory"
            else f"ministack {emulator_version('ministack')}",
        },
    )
    with endpoint(args.emulator) as proxy:
        kinesis = emulators.kinesis_client(proxy.url)
        streams = load_streams(kinesis, args.records, args.size, args.shards, args.aggregated_records)
        counts = {streams[0][0]: args.records, streams[1][0]: args.aggregated_records or args.records}
        records = user_records(8, args.size)

        extra_jars = []
        if args.real_time:
            from latency import compile_probe

            extra_jars.append(
                str(
                    compile_probe(
                        Path(pyspark.__file__).parent / "jars",
                        Path(tempfile.mkdtemp(prefix="bench-counter-")),
                        "RowCounter.java",
                    )
                )
            )
        spark = local_session(
            args.connector_jars,
            jars=extra_jars,
            conf={**CBOR_OFF, "spark.sql.streaming.numRecentProgressUpdates": "100000"},
            master=f"local[{slots}]",
        )
        connector(spark, proxy.url, streams[0][1], args.records, {})  # warm-up: JIT, first job, client pools
        # What every query pays before and after its records (start-up, planning, checkpoint files, a job, stop):
        # the same query on a stream of 8 records, in every round. Below a million records it is much of every row.
        tiny = f"bench-tiny-{time.time_ns()}"
        create_stream(kinesis, tiny, args.shards)
        put_plain(kinesis, tiny, records)
        variants = (
            ("polling", "defaults", {}),
            ("polling", "fetchIntervalMs=0", {"kinesis.getRecords.fetchIntervalMs": "0"}),
            ("polling", "5000 records/shard/batch", {"kinesis.maxFetchRecordsPerShard": "5000"}),
            ("EFO", "defaults", {"kinesis.consumerType": "SubscribeToShard"}),
            ("polling", "batch read, spark.read", {}),
            ("polling", "batch read, spark.read, fetchIntervalMs=0", {"kinesis.getRecords.fetchIntervalMs": "0"}),
        )
        if args.spark_line_row:  # the defaults, unless --only names other variants
            streams, variants = streams[:1], variants if args.only else variants[:1]
        if args.quick:
            variants = tuple(v for v in variants if v[1] in ("defaults", "batch read, spark.read"))
        if args.only:
            variants = tuple(v for v in variants if any(part in v[1] for part in args.only.split("|")))
        if args.real_time:
            variants = (("polling", "real-time mode", {}),)
        bare_names = {"polling": "bare SDK GetRecords loop", "EFO": "bare SDK SubscribeToShard loop"}
        for label, stream in streams:
            expected = counts[label]
            mb = expected * args.size / 1e6
            bare_runs: dict[str, list[dict[str, Any]]] = {reader: [] for reader, _, _ in variants}
            runs: dict[tuple[str, str], list[dict[str, Any]]] = {
                (reader, variant): [] for reader, variant, _ in variants
            }
            calls: dict[tuple[str, str], dict[str, int]] = {}
            startups = []
            for _ in range(args.rounds):
                startups.append(connector(spark, proxy.url, tiny, 8, {}))
                proxy.reset()
                bare_runs["polling"].append(bare_java("BareGetRecordsLoop.java", class_path, proxy.url, stream))
                kinesis_records = bare_runs["polling"][-1]["records"]
                if "EFO" in bare_runs:
                    bare_runs["EFO"].append(
                        bare_java("BareSubscribeLoop.java", class_path, proxy.url, stream, str(kinesis_records))
                    )
                for reader, variant, options in variants:
                    proxy.reset()
                    if reader == "EFO":
                        options = {**options, "kinesis.consumerName": active_consumer(kinesis, stream)}
                    read = (
                        batch_read
                        if variant.startswith("batch read")
                        else real_time_read
                        if variant == "real-time mode"
                        else connector
                    )
                    recording = None
                    if args.profile and len(runs[reader, variant]) == 0:
                        name = re.sub(r"[^a-zA-Z0-9]+", "-", f"{label} {reader} {variant}").strip("-").lower()
                        recording = Path(args.profile).resolve() / f"{name}.jfr"
                        flight_recorder(jvm_pid(spark), "start", name)
                    result = read(spark, proxy.url, stream, expected, options)
                    if recording is not None:
                        flight_recorder(jvm_pid(spark), "stop", recording.stem, recording)
                        print(
                            f"profiled {label}, {reader}, {variant}: .venv/bin/python benchmarks/profile_summary.py "
                            f"{recording} --records {expected}",
                            file=sys.stderr,
                        )
                    runs[reader, variant].append(result)
                    calls[reader, variant] = proxy.counts()
            startup = median_run(startups)
            line = f", Spark {pyspark.__version__}" if args.spark_line_row else ""
            add_row(
                args.results,
                f"read, polling (defaults{line}), {args.shards} shards, a query of 8 records in the {label} rounds: "
                "its start-up and stop",
                "seconds, CPU s",
                f"{startup['seconds']:.2f} s, {startup['cpuSeconds']:.2f} CPU s",
                notes=f"part of every streaming row: {startup['cpuSeconds'] * 1e6 / expected:.1f} CPU s per "
                f"million records at {expected:,} records",
            )
            print(
                f"a query of 8 records: {startup['seconds']:.2f} s, {startup['cpuSeconds']:.2f} CPU s", file=sys.stderr
            )
            baselines = {}
            for reader, results in bare_runs.items():
                base = median_run(results)
                if any(r["userRecords"] != expected for r in results):
                    raise RuntimeError(f"{bare_names[reader]} de-aggregated {base['userRecords']} of {expected}")
                baselines[reader] = base
                notes = f"{base['records']} Kinesis records"
                if reader == "polling":
                    notes += f", {base['getRecordsCalls']} GetRecords"
                else:
                    notes += f", {base['subscriptions']} subscriptions"
                rows_table.append(
                    (f"{label}: {bare_names[reader]}", expected, base["seconds"], base["cpuSeconds"], 1.0, notes)
                )
            for reader, variant, _ in variants:
                result = median_run(runs[reader, variant])
                base_result = baselines[reader]
                per_batch = ", ".join(
                    f"{op} {n / max(result['batches'], 1):.1f}" for op, n in sorted(calls[reader, variant].items())
                )
                ratio = base_result["seconds"] / result["seconds"]
                rows_table.append(
                    (
                        f"{label}: connector {reader}, {variant}",
                        result["records"],
                        result["seconds"],
                        result["cpuSeconds"],
                        ratio,
                        f"{result['batches']} batches; per batch: {per_batch}"
                        + (f"; after the first batch {result['steadyRate']:,.0f}/s" if result["steadyRate"] else ""),
                    )
                )
                shown = variant + line
                scenario = SCENARIO.format(reader=f"{reader} ({shown})", shards=args.shards, kind=label)
                base_name = bare_names[reader] + ", KPL de-aggregation"
                add_row(
                    args.results,
                    scenario,
                    "records/s (MB/s)",
                    f"{expected / result['seconds']:,.0f} ({mb / result['seconds']:.2f})",
                    baseline=base_name,
                    baseline_value=f"{expected / base_result['seconds']:,.0f} ({mb / base_result['seconds']:.2f})",
                    ratio=ratio,
                    notes=f"{result['batches']} batches",
                )
                if result["steadyRate"]:
                    add_row(
                        args.results,
                        scenario,
                        "records/s after the first batch",
                        f"{result['steadyRate']:,.0f}",
                        baseline=base_name,
                        baseline_value=f"{expected / base_result['seconds']:,.0f}",
                        ratio=result["steadyRate"] * base_result["seconds"] / expected,
                        notes="from the sink's first row to its last"
                        if variant == "real-time mode"
                        else "from the end of the first batch that read records to the end of the last",
                    )
                per_million = 1e6 / expected
                cpu_notes = "Spark JVM (driver + local executors) vs the bare loop's JVM; emulator not counted"
                if not variant.startswith("batch read"):
                    marginal = max(result["cpuSeconds"] - startup["cpuSeconds"], 0.0) * per_million
                    cpu_notes += f"; without the query's start-up and stop: {marginal:.1f}"
                add_row(
                    args.results,
                    scenario,
                    "CPU s per million records",
                    f"{result['cpuSeconds'] * per_million:.1f}",
                    baseline=base_name,
                    baseline_value=f"{base_result['cpuSeconds'] * per_million:.1f}",
                    ratio=result["cpuSeconds"] / max(base_result["cpuSeconds"], 1e-9),
                    notes=cpu_notes,
                )
        spark.stop()

    print(
        f"\nRead throughput, {args.shards} shards, {args.records} user records of {args.size} B, {args.emulator}, "
        f"median of {args.rounds} rounds; load average (1, 5, 15 min) {load_at_start[0]:.2f} {load_at_start[1]:.2f} "
        f"{load_at_start[2]:.2f} at the start, {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end"
    )
    print(
        f"{'scenario':48s} {'records':>8s} {'seconds':>8s} {'rec/s':>9s} {'MB/s':>7s} {'CPU s/M':>7s} "
        f"{'ratio':>6s}  notes"
    )
    for name, count, seconds, cpu, ratio, notes in rows_table:
        mbps, cpu_per_million = count * args.size / 1e6 / seconds, cpu * 1e6 / count
        print(
            f"{name:48s} {count:8d} {seconds:8.2f} {count / seconds:9.0f} {mbps:7.2f} {cpu_per_million:7.2f} "
            f"{ratio:6.2f}  {notes}"
        )
    print(
        "ratio = records/s of the row / records/s of its bare SDK loop (GetRecords for polling, SubscribeToShard for "
        "EFO, both de-aggregating) on the same stream in this run; CPU s/M: CPU seconds of the reading JVM per million "
        "user records"
    )


if __name__ == "__main__":
    main()
