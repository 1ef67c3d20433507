"""End-to-end latency of the source at a steady input rate: record put -> its row handed to the sink.

One ministack emulator (it pushes SubscribeToShard events at once), one 4-shard stream per reader and rate, a
Spark session in local mode with a slot per shard (real-time mode keeps every shard's task running), and a JVM
``foreach`` writer (LatencyProbe.java, compiled here against pyspark's jars) that notes for each row how long ago
its record was put. A writer thread puts ``rate`` records per second for ``--seconds`` seconds (rate/10 records
every 100 ms, 500 per PutRecords), each payload its put time; both clocks are this machine's. Readers, each at the
defaults: polling and enhanced fan-out in micro-batches (100 ms processing-time trigger), and real-time mode
(``Trigger.RealTime``, batches of ``--real-time-batch``) with fan-out and with polling. The floor is the bare AWS
SDK subscribed to the same kind of stream without Spark (BareSubscribeLatency.java). CPU: the Spark JVM's user +
system time from /proc over the steady phase, per million records put. Prints p50, p99 and max per reader and
rate; with --results, appends them to the benchmark command's one table. Run with benchmarks/run.sh.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from harness import emulators  # noqa: E402
from harness.kinesis import create_stream  # noqa: E402
from results import add_row  # noqa: E402
from sessions import CBOR_OFF, kinesis_stream, local_session  # noqa: E402

SHARDS = 4
EFO = {"kinesis.consumerType": "SubscribeToShard"}
# (label, options, real-time mode)
READERS: tuple[tuple[str, dict[str, str], bool], ...] = (
    ("polling, micro-batches", {}, False),
    ("fan-out, micro-batches", EFO, False),
    ("fan-out, real-time mode", EFO, True),
    ("polling, real-time mode", {}, True),
)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] if ordered else float("nan")


def put_steadily(kinesis: Any, stream: str, rate: int, seconds: int) -> int:
    """Put ``rate`` records/s for ``seconds`` s, each payload ``t=<put time>``; returns how many were put."""
    per_tick = max(1, rate // 10)
    put = 0
    next_tick = time.monotonic()
    for tick in range(seconds * 10):
        stamp = f"t={time.time():.6f}".encode()
        entries = [{"PartitionKey": f"k{tick}-{i}", "Data": stamp} for i in range(per_tick)]
        for start in range(0, per_tick, 500):
            response = kinesis.put_records(StreamName=stream, Records=entries[start : start + 500])
            put += len(entries[start : start + 500]) - response.get("FailedRecordCount", 0)
        next_tick += 0.1
        time.sleep(max(0.0, next_tick - time.monotonic()))
    return put


def compile_probe(pyspark_jars: Path, into: Path, program: str = "LatencyProbe.java") -> Path:
    """``program`` (a ForeachWriter of this folder) compiled against the running pyspark's jars, as a jar for
    spark.jars."""
    classes = into / "classes"
    classes.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["javac", "-cp", str(pyspark_jars / "*"), "-d", str(classes), str(ROOT / "benchmarks" / program)], check=True
    )
    jar = into / f"{Path(program).stem}.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(classes), "."], check=True)
    return jar


def failed(query: Any) -> None:
    """Raises the query's failure (a JVM StreamingQuery: its exception is a Scala Option)."""
    error = query.exception()
    if error.isDefined():
        raise RuntimeError(str(error.get().toString()))


def jvm_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(
    spark: Any, kinesis: Any, endpoint: str, reader_options: dict[str, str], real_time: bool, rate: int, args: Any
) -> dict[str, Any]:
    stream = f"bench-latency-{time.time_ns()}"
    create_stream(kinesis, stream, SHARDS)
    jvm = spark._jvm
    probe = jvm.LatencyProbe
    writer = (
        kinesis_stream(spark, endpoint, stream, reader_options, starting="LATEST", consumer_prefix="lat")
        .load()
        .select("data")
        ._jdf.writeStream()
        .foreach(probe())
        .option("checkpointLocation", f"{tempfile.gettempdir()}/bench-latency-chk-{time.time_ns()}")
    )
    trigger = jvm.org.apache.spark.sql.streaming.Trigger
    if real_time:
        writer = writer.outputMode("update").trigger(trigger.RealTime(args.real_time_batch))
    else:
        writer = writer.trigger(trigger.ProcessingTime(args.trigger_ms))
    query = writer.start()
    pid = int(jvm.java.lang.ProcessHandle.current().pid())
    try:
        # Warm-up: the first batches (and, for fan-out, the consumer and the first subscriptions).
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not list(probe.drain()):
            failed(query)
            kinesis.put_record(StreamName=stream, PartitionKey="warm", Data=f"t={time.time():.6f}".encode())
            time.sleep(1.0)
        time.sleep(2)
        probe.drain()
        cpu_before = jvm_cpu_seconds(pid)
        started = time.monotonic()
        put = put_steadily(kinesis, stream, rate, args.seconds)
        elapsed = time.monotonic() - started
        samples: list[float] = []
        deadline = time.monotonic() + 60
        while len(samples) < put and time.monotonic() < deadline:
            failed(query)
            time.sleep(0.2)
            samples.extend(probe.drain())
        cpu = jvm_cpu_seconds(pid) - cpu_before
    finally:
        query.stop()
    return {
        "samples": len(samples),
        "expected": put,
        "rate": put / elapsed,
        "p50": percentile(samples, 0.5),
        "p99": percentile(samples, 0.99),
        "max": max(samples or [float("nan")]),
        "cpu_per_million": cpu / max(1, put) * 1e6,
    }


def bare_subscribe(endpoint: str, kinesis: Any, jar: str, slf4j: list[str], rate: int, args: Any) -> dict[str, Any]:
    """The floor: the AWS SDK's SubscribeToShard without Spark (benchmarks/BareSubscribeLatency.java)."""
    stream = f"bench-latency-bare-{time.time_ns()}"
    create_stream(kinesis, stream, SHARDS)
    out = subprocess.run(
        [
            "java",
            "-Daws.cborEnabled=false",
            "-cp",
            os.pathsep.join([jar, *slf4j]),
            str(ROOT / "benchmarks" / "BareSubscribeLatency.java"),
            endpoint,
            stream,
            str(args.seconds),
            str(rate),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="1000,10000", help="records put per second, comma-separated")
    parser.add_argument("--seconds", type=int, default=20, help="how long the steady input lasts")
    parser.add_argument("--trigger-ms", type=int, default=100, help="processing-time trigger of micro-batches")
    parser.add_argument("--real-time-batch", default="10 seconds", help="batch duration in real-time mode")
    parser.add_argument("--readers", default="", help="comma-separated substrings of reader labels to run")
    parser.add_argument("--jar", required=True)
    parser.add_argument("--results", help="JSON-lines file to append the table rows to (see results.py)")
    args, _ = parser.parse_known_args()
    rates = [int(r) for r in args.rates.split(",")]
    readers = [r for r in READERS if not args.readers or any(w in r[0] for w in args.readers.split(","))]
    os.environ.update(
        AWS_ACCESS_KEY_ID=emulators.ACCESS_KEY, AWS_SECRET_ACCESS_KEY=emulators.SECRET_KEY, AWS_REGION="us-east-1"
    )
    import pyspark

    pyspark_jars = Path(pyspark.__file__).parent / "jars"
    slf4j = [str(p) for p in pyspark_jars.glob("slf4j-api-*.jar")]
    probe_jar = compile_probe(pyspark_jars, Path(tempfile.mkdtemp(prefix="latency-probe-")))
    table: list[tuple[int, str, dict[str, Any]]] = []
    with emulators.running("ministack") as emulator:
        kinesis = emulators.kinesis_client(emulator.endpoint)
        for rate in rates:
            table.append(
                (
                    rate,
                    "bare SDK SubscribeToShard (no Spark)",
                    bare_subscribe(emulator.endpoint, kinesis, args.jar, slf4j, rate, args),
                )
            )
        spark = local_session(jars=[str(probe_jar)], conf=CBOR_OFF, master=f"local[{SHARDS}]")
        for rate in rates:
            for label, options, real_time in readers:
                table.append((rate, label, measure(spark, kinesis, emulator.endpoint, options, real_time, rate, args)))
        spark.stop()

    conditions = (
        f"{SHARDS} shards, {args.seconds} s of steady input, micro-batch trigger {args.trigger_ms} ms, real-time "
        f"batches of {args.real_time_batch}, ministack, local[{SHARDS}] on {os.cpu_count()} cores"
    )
    print(f"\nEnd-to-end latency (put -> row handed to a JVM foreach sink), {conditions}")
    print(
        f"{'rate':>6s} {'reader':38s} {'seen':>7s} {'put':>7s} {'p50 ms':>8s} {'p99 ms':>8s} {'max ms':>8s}"
        f" {'CPU s/M':>8s}"
    )
    floors = {rate: r for rate, label, r in table if label.startswith("bare")}
    for rate, label, r in table:
        cpu = r.get("cpu_per_million")
        print(
            f"{rate:6d} {label:38s} {r['samples']:7d} {r['expected']:7d} {r['p50']:8.0f} {r['p99']:8.0f} "
            f"{r['max']:8.0f} {cpu if cpu is not None else float('nan'):8.1f}"
        )
        if label.startswith("bare"):
            continue
        floor = floors[rate]
        add_row(
            args.results,
            f"latency at {rate:,} records/s, {label}",
            "p50 / p99 / max ms; CPU s per M records",
            f"{r['p50']:.0f} / {r['p99']:.0f} / {r['max']:.0f}; {cpu:.1f}",
            baseline="bare SDK SubscribeToShard, no Spark: p50 / p99",
            baseline_value=f"{floor['p50']:.0f} / {floor['p99']:.0f}",
            ratio=r["p50"] / floor["p50"] if floor["p50"] else None,
            notes=f"{r['samples']} of {r['expected']} records seen, {r['rate']:.0f} records/s put; p99 ratio "
            f"{r['p99'] / floor['p99']:.2f}; {conditions}",
        )


if __name__ == "__main__":
    main()
