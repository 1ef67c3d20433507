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

CPU over the same span, per million rows, the KPL's native process included. The bare KPL reads its JVM's and
its child's /proc/<pid>/stat itself (both still running). The sink: the Spark JVM's utime + stime, and its
``kinesis_producer`` children's: the running ones' own utime + stime, plus the JVM's cutime + cstime, where the
kernel puts the time of a child that ended once the JVM (its process reaper thread) waited for it. So a native
process started or closed inside the span counts whole. Producers are closed between variants (outside any span),
so no idle producer of another variant is counted.

Latency (``--latency-seconds``, 0 to skip): a streaming query reads a 2-shard stream of a plain ministack with
enhanced fan-out and writes it unchanged with ``format("aws-kinesis")`` to a 2-shard stream of the TLS ministack,
with each producer at the sink's defaults, in real-time mode (``Trigger.RealTime``, batches of
``--real-time-batch``; a 100 ms processing-time trigger instead, labelled so, where real-time mode fails). A
thread puts ``--latency-rate`` rows/s into the source (latency.py's ``put_steadily``: each payload is its put
time); one thread per target shard polls GetRecords (again at once after records, after 20 ms otherwise),
de-aggregates, and notes each row's arrival time less its put time. The floor: the same puts straight into the
target stream and the same reader, no Spark.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from harness import emulators  # noqa: E402
from harness.jvm import producer_processes  # noqa: E402
from harness.kinesis import create_stream, deaggregate, list_shards, read_shard  # noqa: E402
from latency import compile_probe, percentile, put_steadily  # noqa: E402
from results import add_row, ended_children_cpu_seconds, jvm_pid, process_cpu_seconds  # noqa: E402
from sessions import CBOR_OFF, kinesis_stream, local_session  # noqa: E402

LATENCY_SHARDS = 2


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
    result = dict(json.loads(out.strip().splitlines()[-1]))
    tick = os.sysconf("SC_CLK_TCK")
    return result | {"jvmCpu": result["jvmTicks"] / tick, "nativeCpu": result["nativeTicks"] / tick}


def cpu_seconds(pid: int) -> tuple[float, float]:
    """CPU seconds so far of the Spark JVM itself, and of its children: the running ``kinesis_producer``
    processes' plus the ended children's that the JVM waited for (its cutime and cstime). Read again when a child
    was reaped while the running ones were read, so that none counts twice or not at all."""
    while True:
        ended = ended_children_cpu_seconds(pid)
        running = 0.0
        for child in producer_processes(pid):
            with contextlib.suppress(OSError):  # ended meanwhile: in the JVM's cutime once waited for
                running += process_cpu_seconds(child)
        if ended_children_cpu_seconds(pid) == ended:
            return process_cpu_seconds(pid), ended + running


def close_producers(spark: Any) -> None:
    """Flush and stop every pooled producer of the Spark JVM, and wait (30 s at most) until the JVM has reaped their
    native processes, so that none ends inside the next variant's span."""
    spark._jvm.io.sparkkinesis.sink.ProducerPool.closeAll()
    pid, deadline = jvm_pid(spark), time.monotonic() + 30
    while producer_processes(pid) and time.monotonic() < deadline:
        time.sleep(0.1)


def sink_options(endpoint: str, stream: str, producer: str, aggregate: bool | None = None) -> dict[str, str]:
    """The sink's options for ``stream`` on the TLS emulator; ``aggregate`` None keeps the default."""
    options = {
        "kinesis.endpointUrl": endpoint,
        "kinesis.region": "us-east-1",
        "kinesis.streamName": stream,
        "kinesis.sink.verifyCertificate": "false",
        "kinesis.sink.producer": producer,
    }
    if aggregate is not None:
        options["kinesis.sink.aggregationEnabled"] = str(aggregate).lower()
    if producer == "KPL":
        options["kinesis.sink.stsEndpointUrl"] = endpoint
    return options


def sink(
    spark: Any, endpoint: str, stream: str, rows: int, size: int, aggregate: bool, producer: str
) -> dict[str, Any]:
    options = sink_options(endpoint, stream, producer, aggregate)

    def frame(n: int, prefix: str) -> Any:
        return spark.range(0, n, 1, 2).selectExpr(
            f"concat('{prefix}', CAST(id % 1000 AS STRING)) AS partitionKey",
            f"CAST(rpad(CAST(id AS STRING), {size}, 'x') AS BINARY) AS data",
        )

    frame(100, "warm-").write.format("aws-kinesis").mode("append").options(**options).save()
    time.sleep(2)
    df = frame(rows, "key-").cache()
    df.count()
    pid = jvm_pid(spark)
    jvm_before, native_before = cpu_seconds(pid)
    started = time.monotonic()
    df.write.format("aws-kinesis").mode("append").options(**options).save()
    seconds = time.monotonic() - started
    jvm_after, native_after = cpu_seconds(pid)
    df.unpersist()
    close_producers(spark)
    return {
        "rows": rows,
        "seconds": seconds,
        "jvmCpu": jvm_after - jvm_before,
        "nativeCpu": native_after - native_before,
    }


class TargetReader:
    """One thread per shard of ``stream``: GetRecords from TRIM_HORIZON, at once again after records and after
    20 ms otherwise; notes (put time, arrival time) of every user record whose payload is ``t=<put time>``."""

    def __init__(self, endpoint: str, stream: str) -> None:
        self.arrivals: list[tuple[float, float]] = []
        self.stopping = threading.Event()
        self.errors: list[BaseException] = []
        self.threads = [
            threading.Thread(target=self.read, args=(endpoint, stream, shard["ShardId"]), daemon=True)
            for shard in list_shards(emulators.kinesis_client(endpoint), stream)
        ]
        for thread in self.threads:
            thread.start()

    def read(self, endpoint: str, stream: str, shard: str) -> None:
        client = emulators.kinesis_client(endpoint)  # one per thread: boto3 clients are not shared across threads
        try:
            iterator = client.get_shard_iterator(StreamName=stream, ShardId=shard, ShardIteratorType="TRIM_HORIZON")[
                "ShardIterator"
            ]
            while not self.stopping.is_set():
                response = client.get_records(ShardIterator=iterator, Limit=10000)
                arrived = time.time()
                iterator = response["NextShardIterator"]
                for payload in deaggregate(response["Records"]):
                    if payload.startswith(b"t="):
                        self.arrivals.append((float(payload[2:]), arrived))
                if not response["Records"]:
                    time.sleep(0.02)
        except BaseException as error:  # reported by check()
            self.errors.append(error)

    def check(self) -> None:
        if self.errors:
            raise RuntimeError(f"target reader failed: {self.errors[0]!r}")

    def since(self, started: float) -> list[float]:
        """Milliseconds from put to arrival of the rows put at or after ``started`` (epoch seconds)."""
        return [(arrived - put) * 1000.0 for put, arrived in list(self.arrivals) if put >= started]

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=30)


def summary(samples: list[float], put: int) -> dict[str, Any]:
    """How many of the ``put`` rows were seen, and the latency percentiles of those seen (ms)."""
    return {
        "seen": len(samples),
        "put": put,
        "p50": percentile(samples, 0.5),
        "p99": percentile(samples, 0.99),
        "max": max(samples or [float("nan")]),
    }


def steady_latency(
    source: Any, source_stream: str, reader: TargetReader, rate: int, seconds: int, query: Any = None
) -> dict[str, Any]:
    """Put ``rate`` rows/s for ``seconds`` s into ``source_stream``, then wait (60 s at most) for all of them in
    the target; p50, p99 and max milliseconds from put to arrival."""
    started = time.time()
    put = put_steadily(source, source_stream, rate, seconds)
    deadline = time.monotonic() + 60
    samples = reader.since(started)
    while len(samples) < put and time.monotonic() < deadline:
        reader.check()
        if query is not None and query.exception() is not None:
            raise RuntimeError(str(query.exception()))
        time.sleep(0.2)
        samples = reader.since(started)
    return summary(samples, put)


def floor_latency(target_endpoint: str, rate: int, seconds: int) -> dict[str, Any]:
    """The measurement's floor: the rows put straight into the target stream, read by the same reader."""
    client = emulators.kinesis_client(target_endpoint)
    stream = create_stream(client, f"bench-floor-{time.time_ns()}", LATENCY_SHARDS)
    reader = TargetReader(target_endpoint, stream)
    try:
        return steady_latency(client, stream, reader, rate, seconds)
    finally:
        reader.stop()


def sink_latency(
    spark: Any, source_endpoint: str, target_endpoint: str, producer: str, real_time: bool, args: Any
) -> dict[str, Any]:
    """Source stream -> streaming query -> ``format("aws-kinesis")`` with ``producer`` -> target stream."""
    from spark_kinesis.realtime import ALLOWLIST_CHECK_CONF, real_time_trigger

    source = emulators.kinesis_client(source_endpoint)
    target = emulators.kinesis_client(target_endpoint)
    source_stream = create_stream(source, f"bench-lat-in-{time.time_ns()}", LATENCY_SHARDS)
    target_stream = create_stream(target, f"bench-lat-out-{producer}-{time.time_ns()}", LATENCY_SHARDS)
    rows = (
        kinesis_stream(
            spark,
            source_endpoint,
            source_stream,
            {"kinesis.consumerType": "SubscribeToShard"},
            starting="LATEST",
            consumer_prefix="wlat",
        )
        .load()
        .select("data", "partitionKey")
    )
    writer = (
        rows.writeStream.format("aws-kinesis")
        .options(**sink_options(target_endpoint, target_stream, producer))
        .option("checkpointLocation", f"{tempfile.gettempdir()}/bench-write-latency-{time.time_ns()}")
    )
    if real_time:
        spark.conf.set(ALLOWLIST_CHECK_CONF, "false")  # Spark's allow-list of real-time sinks names only its own
        writer = real_time_trigger(writer, args.real_time_batch)
    else:
        writer = writer.trigger(processingTime="100 milliseconds")
    reader = TargetReader(target_endpoint, target_stream)
    query = writer.start()
    pid = jvm_pid(spark)
    try:
        # Warm-up: the consumer, the first subscriptions and the producer, until a row comes through.
        deadline = time.monotonic() + 120
        while not reader.arrivals:
            reader.check()
            if query.exception() is not None:
                raise RuntimeError(str(query.exception()))
            if time.monotonic() > deadline:
                raise RuntimeError("no row reached the target stream in 120 s")
            source.put_record(StreamName=source_stream, PartitionKey="warm", Data=f"t={time.time():.6f}".encode())
            time.sleep(1.0)
        time.sleep(2)
        jvm_before, native_before = cpu_seconds(pid)
        result = steady_latency(source, source_stream, reader, args.latency_rate, args.latency_seconds, query)
        jvm_after, native_after = cpu_seconds(pid)
    finally:
        query.stop()
        reader.stop()
        spark.conf.unset(ALLOWLIST_CHECK_CONF)
        close_producers(spark)
    per_million = 1e6 / max(1, result["put"])
    return result | {
        "cpu": (jvm_after - jvm_before + native_after - native_before) * per_million,
        "native": (native_after - native_before) * per_million,
    }


def source_latency(spark: Any, source_endpoint: str, args: Any) -> dict[str, Any]:
    """The read half alone: the same source and real-time query into latency.py's JVM ``foreach`` probe, no sink."""
    source = emulators.kinesis_client(source_endpoint)
    stream = create_stream(source, f"bench-lat-read-{time.time_ns()}", LATENCY_SHARDS)
    jvm = spark._jvm
    probe = jvm.LatencyProbe
    query = (
        kinesis_stream(spark, source_endpoint, stream, {"kinesis.consumerType": "SubscribeToShard"}, starting="LATEST")
        .load()
        .select("data")
        ._jdf.writeStream()
        .foreach(probe())
        .option("checkpointLocation", f"{tempfile.gettempdir()}/bench-write-latency-read-{time.time_ns()}")
        .outputMode("update")
        .trigger(jvm.org.apache.spark.sql.streaming.Trigger.RealTime(args.real_time_batch))
        .start()
    )
    try:
        deadline = time.monotonic() + 120
        while not list(probe.drain()):
            if query.exception().isDefined() or time.monotonic() > deadline:
                raise RuntimeError(f"the read-only query failed or saw nothing: {query.exception()}")
            source.put_record(StreamName=stream, PartitionKey="warm", Data=f"t={time.time():.6f}".encode())
            time.sleep(1.0)
        time.sleep(2)
        probe.drain()
        put = put_steadily(source, stream, args.latency_rate, args.latency_seconds)
        samples: list[float] = []
        deadline = time.monotonic() + 60
        while len(samples) < put and time.monotonic() < deadline:
            time.sleep(0.2)
            samples.extend(probe.drain())
    finally:
        query.stop()
    return summary(samples, put)


def latency_rows(spark: Any, producers: list[str], args: Any) -> list[tuple[str, dict[str, Any]]]:
    """The floor, then each producer in real-time mode (or, where that fails, with a 100 ms trigger)."""
    table = []
    with emulators.running("ministack") as plain, emulators.running("ministack", tls=True) as tls:
        table.append(
            ("floor: put to the target, no Spark", floor_latency(tls.endpoint, args.latency_rate, args.latency_seconds))
        )
        try:
            table.append(
                ("read only: the source into a JVM foreach, no sink", source_latency(spark, plain.endpoint, args))
            )
        except Exception as error:  # a Spark without real-time mode: the sink rows say how they ran
            print(f"read-only real-time query failed: {error}", file=sys.stderr)
        for producer in producers:
            try:
                result = sink_latency(spark, plain.endpoint, tls.endpoint, producer, True, args)
                label = f"sink {producer}, real-time mode"
            except Exception as error:  # measured with a 100 ms trigger instead, and said so
                print(
                    f"real-time mode with the {producer} sink failed ({error}); a 100 ms trigger instead",
                    file=sys.stderr,
                )
                result = sink_latency(spark, plain.endpoint, tls.endpoint, producer, False, args)
                label = f"sink {producer}, 100 ms trigger (not real-time mode)"
            table.append((label, result))
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jar", required=True)
    parser.add_argument("--rows", type=int, default=100_000, help="rows per throughput run (0: no throughput runs)")
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--results", help="JSON-lines file to append the table rows to (see results.py)")
    parser.add_argument("--producers", default="KPL,JAVA", help="kinesis.sink.producer values to run, comma-separated")
    parser.add_argument("--latency-rate", type=int, default=1000, help="rows put per second in the latency runs")
    parser.add_argument("--latency-seconds", type=int, default=30, help="steady input of each latency run (0: none)")
    parser.add_argument("--real-time-batch", default="10 seconds", help="batch duration in real-time mode")
    args = parser.parse_args()
    producers = [p.strip().upper() for p in args.producers.split(",") if p.strip()]
    for key, value in {
        "AWS_ACCESS_KEY_ID": emulators.ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": emulators.SECRET_KEY,
        "AWS_REGION": emulators.REGION,
    }.items():
        os.environ[key] = value
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    import urllib3

    urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)  # the emulator's self-signed certificate

    # ministack takes no CBOR, the AWS SDK's default for Kinesis (the KPL speaks JSON; the driver's check, the
    # in-JVM producer and the source use the SDK). local[2]: the two partitions of a write, or the two shards a
    # real-time query reads (each holds a task slot for the whole batch).
    import pyspark

    probe = compile_probe(Path(pyspark.__file__).parent / "jars", Path(tempfile.mkdtemp(prefix="write-probe-")))
    spark = local_session(jars=[str(probe)], conf=CBOR_OFF, master="local[2]")
    # (name, rows/s, seconds, records per row, CPU s per M rows, of which the native process)
    results: list[tuple[str, float, float, float, float, float]] = []
    if args.rows > 0:
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
                per_million = 1e6 / args.rows
                base_cpu = (base["jvmCpu"] + base["nativeCpu"]) * per_million
                results.append(
                    (
                        f"bare KPL, aggregation {mode}",
                        base_rate,
                        base["seconds"],
                        base_per_row,
                        base_cpu,
                        base["nativeCpu"] * per_million,
                    )
                )
                for producer in producers:
                    sink_stream = create_stream(client, f"bench-sink-{producer}-{aggregate}-{time.time_ns()}", 4)
                    ours = sink(spark, emulator.endpoint, sink_stream, args.rows, args.size, aggregate, producer)
                    sink_rate = ours["rows"] / ours["seconds"]
                    sink_per_row = kinesis_records(client, sink_stream) / written
                    sink_cpu = (ours["jvmCpu"] + ours["nativeCpu"]) * per_million
                    notes = f"{args.rows} rows, 4 shards, ministack over TLS, df.write of 2 partitions"
                    scenario = f"sink ({producer}), {args.size} B rows, aggregation {mode}"
                    add_row(
                        args.results,
                        scenario,
                        "rows/s (Kinesis records per row)",
                        f"{sink_rate:.0f} ({sink_per_row:.4f})",
                        baseline="bare KPL, same rows and settings",
                        baseline_value=f"{base_rate:.0f} ({base_per_row:.4f})",
                        ratio=sink_rate / base_rate,
                        notes=notes,
                    )
                    add_row(
                        args.results,
                        scenario,
                        "CPU s per million rows (of which the KPL's native process)",
                        f"{sink_cpu:.1f} ({ours['nativeCpu'] * per_million:.1f})",
                        baseline="bare KPL: its JVM and native process",
                        baseline_value=f"{base_cpu:.1f} ({base['nativeCpu'] * per_million:.1f})",
                        ratio=sink_cpu / max(base_cpu, 1e-9),
                        notes=f"{notes}; the Spark JVM (driver and local executors) and its kinesis_producer "
                        "children, from /proc over the timed write",
                    )
                    results.append(
                        (
                            f"sink {producer}, aggregation {mode}",
                            sink_rate,
                            ours["seconds"],
                            sink_per_row,
                            sink_cpu,
                            ours["nativeCpu"] * per_million,
                        )
                    )
                    results.append((f"ratio sink {producer} / bare, aggr. {mode}", sink_rate / base_rate, 0, 0, 0, 0))
    latencies = latency_rows(spark, producers, args) if args.latency_seconds > 0 else []
    spark.stop()
    if results:
        print(f"\nwrite throughput: {args.rows} rows of {args.size} B, ministack over TLS, 4 shards\n")
        print(f"{'':40} {'rows/s':>10} {'seconds':>9} {'records/row':>12} {'CPU s/M':>8} {'native':>7}")
        for name, value, seconds, per_row, cpu, native in results:
            if name.startswith("ratio"):
                print(f"{name:40} {value:>10.2f}")
            else:
                print(f"{name:40} {value:>10.0f} {seconds:>9.2f} {per_row:>12.4f} {cpu:>8.1f} {native:>7.1f}")
    if latencies:
        conditions = (
            f"{args.latency_rate:,} rows/s for {args.latency_seconds} s, {LATENCY_SHARDS} shards in and out, "
            f"sink defaults, real-time batches of {args.real_time_batch}, local[2] on {os.cpu_count()} cores"
        )
        print(f"\nwrite latency (put to the source -> readable in the target), {conditions}\n")
        print(f"{'':52} {'seen':>7} {'put':>7} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'CPU s/M':>8} {'native':>7}")
        floor = latencies[0][1]
        read = next((r for label, r in latencies if label.startswith("read only")), None)
        read_note = f"; the read alone (a JVM foreach): p50 {read['p50']:.0f}, p99 {read['p99']:.0f} ms" if read else ""
        for label, r in latencies:
            cpu, native = r.get("cpu", float("nan")), r.get("native", float("nan"))
            print(
                f"{label:52} {r['seen']:7d} {r['put']:7d} {r['p50']:8.0f} {r['p99']:8.0f} {r['max']:8.0f} "
                f"{cpu:8.1f} {native:7.1f}"
            )
            if r is floor or label.startswith("read only"):
                continue
            add_row(
                args.results,
                f"write latency at {args.latency_rate:,} rows/s, {label}",
                "p50 / p99 / max ms; CPU s per M rows (of which native)",
                f"{r['p50']:.0f} / {r['p99']:.0f} / {r['max']:.0f}; {cpu:.1f} ({native:.1f})",
                baseline="put straight to the target, same reader, no Spark: p50 / p99",
                baseline_value=f"{floor['p50']:.0f} / {floor['p99']:.0f}",
                ratio=r["p50"] / floor["p50"] if floor["p50"] else None,
                notes=f"{r['seen']} of {r['put']} rows seen; source read with fan-out{read_note}; {conditions}",
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
