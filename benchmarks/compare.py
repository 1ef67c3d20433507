"""Two builds of the connector side by side: the quick read and latency scenarios, taking turns, in one run.

Each build runs in a Python process of its own (one Spark session each, local[4], with that build's jars); this
process starts ministack, loads one plain and one KPL-aggregated 4-shard stream once, and then asks the two builds in
turn, round after round, to read them from TRIM_HORIZON (polling and enhanced fan-out, defaults, noop sink) and to
run the latency scenario (1,000 records/s put for --seconds, micro-batches, polling and fan-out), in as many
rounds. It prints one table: each measure's median over the rounds for the base build and for the new one, and
new/base. Both builds meet the same emulator, streams and machine load, so only their ratio means something. Run
with benchmarks/compare.sh. With ``--emulator memory`` the streams live in benchmarks/MemoryKinesis.java (for reads of
millions, which ministack slows down).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from harness import emulators  # noqa: E402
from read_throughput import add_emulator  # noqa: E402

READS = (
    ("polling", {}),
    ("fan-out", {"kinesis.consumerType": "SubscribeToShard"}),
    ("batch read", {}),
)
# The bare SDK loop each read path is measured against (benchmarks/README.md, read throughput).
BARE = {
    "polling": "BareGetRecordsLoop.java",
    "fan-out": "BareSubscribeLoop.java",
    "batch read": "BareGetRecordsLoop.java",
}
LATENCY_READERS = (
    ("polling, micro-batches", {}),
    ("fan-out, micro-batches", {"kinesis.consumerType": "SubscribeToShard"}),
)


def worker(connector_jars: str) -> None:
    """Serve requests, one JSON object a line on standard input, with one Spark session on ``connector_jars``."""
    import latency
    import pyspark
    from read_throughput import batch_read, connector
    from sessions import CBOR_OFF, local_session

    probe_jar = latency.compile_probe(
        Path(pyspark.__file__).parent / "jars", Path(tempfile.mkdtemp(prefix="compare-probe-"))
    )
    spark = local_session(connector_jars, jars=[str(probe_jar)], conf=CBOR_OFF, master="local[4]")
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] in ("read", "batch read"):
            read = connector if request["op"] == "read" else batch_read
            answer = read(spark, request["endpoint"], request["stream"], request["expected"], request["options"])
        else:
            kinesis = emulators.kinesis_client(request["endpoint"])
            settings = argparse.Namespace(seconds=request["seconds"], trigger_ms=100, real_time_batch="10 seconds")
            answer = latency.measure(
                spark, kinesis, request["endpoint"], request["options"], False, request["rate"], settings
            )
        print(json.dumps(answer), flush=True)
    spark.stop()


class Build:
    """One build's worker process."""

    def __init__(self, name: str, jars: str) -> None:
        self.name = name
        # Spark's log (stack traces of the tasks each query.stop() cancels included) goes to a file.
        self.log = Path(tempfile.mkdtemp(prefix=f"compare-{name}-")) / "worker.log"
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                [sys.executable, __file__, "--worker", jars],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
        self.ask_line()  # the session is up

    def ask_line(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(
                f"the {self.name} build's worker stopped (exit {self.process.wait()}); its log: {self.log}"
            )
        return dict(json.loads(line))

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return self.ask_line()

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", metavar="JARS", help=argparse.SUPPRESS)
    parser.add_argument("--base-jars", help="the base build's line jar and deps jar, comma-separated")
    parser.add_argument("--jars", help="the new build's line jar and deps jar, comma-separated")
    parser.add_argument("--records", type=int, default=100000, help="plain user records")
    parser.add_argument("--aggregated-records", type=int, help="KPL-aggregated user records (default: --records)")
    parser.add_argument("--rounds", type=int, default=3)
    add_emulator(parser)
    parser.add_argument(
        "--seconds", type=int, default=10, help="steady input of each latency measurement (0: no latency scenario)"
    )
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return
    if not (args.base_jars and args.jars):
        parser.error("--base-jars and --jars are required")
    import pyspark
    from read_throughput import active_consumer, bare_java, compile_deaggregator, endpoint, load_streams

    os.environ.update(
        AWS_ACCESS_KEY_ID=emulators.ACCESS_KEY, AWS_SECRET_ACCESS_KEY=emulators.SECRET_KEY, AWS_REGION="us-east-1"
    )
    started = time.monotonic()
    measures: dict[tuple[str, str], dict[str, list[float]]] = {}

    def note(scenario: str, measure: str, build: str, value: float) -> None:
        measures.setdefault((scenario, measure), {"base": [], "new": [], "bare": []})[build].append(value)
        print(f"[compare] {scenario}, {measure}, {build}: {value:,.1f}", file=sys.stderr, flush=True)

    jars = args.jars.split(",")  # the bare loops run on the new build's shaded SDK and KPL protobuf classes
    slf4j = [str(p) for p in (Path(pyspark.__file__).parent / "jars").glob("slf4j-api-*.jar")]
    deaggregator = compile_deaggregator(os.pathsep.join(jars), Path(tempfile.mkdtemp(prefix="compare-deagg-")))
    bare_class_path = [*jars, *slf4j, str(deaggregator)]
    kinesis_records: dict[str, int] = {}  # per stream, as the bare polling loop (the first read path) found them
    counts = {"plain": args.records, "KPL-aggregated": args.aggregated_records or args.records}

    with endpoint(args.emulator, counted=False) as served:
        kinesis = emulators.kinesis_client(served.url)
        streams = load_streams(kinesis, args.records, 100, 4, counts["KPL-aggregated"])
        builds = [Build("base", args.base_jars), Build("new", args.jars)]
        try:
            for build in builds:  # warm-up: JIT, first job, client pools
                build.ask(
                    {
                        "op": "read",
                        "endpoint": served.url,
                        "stream": streams[0][1],
                        "expected": args.records,
                        "options": {},
                    }
                )
            for round_number in range(args.rounds):
                order = builds if round_number % 2 == 0 else builds[::-1]
                for (label, stream), (reader, options) in [(s, r) for s in streams for r in READS]:
                    expected = counts[label.split(" ")[0]]
                    scenario = f"read {expected:,}, {reader}, {label}"
                    bare_args = [served.url, stream]
                    if reader == "fan-out":  # told how many Kinesis records to expect: what the polling loop read
                        bare_args.append(str(kinesis_records[stream]))
                    bare = bare_java(BARE[reader], bare_class_path, *bare_args)
                    kinesis_records.setdefault(stream, bare["records"])
                    if bare["userRecords"] != expected:
                        raise RuntimeError(f"the bare loop of {scenario} read {bare['userRecords']} user records")
                    note(scenario, "records/s", "bare", expected / bare["seconds"])
                    note(scenario, "CPU s per M records", "bare", bare["cpuSeconds"] * 1e6 / expected)
                    for build in order:
                        chosen = dict(options)
                        if "kinesis.consumerType" in chosen:
                            chosen["kinesis.consumerName"] = active_consumer(kinesis, stream)
                        op = "batch read" if reader == "batch read" else "read"
                        request = {"op": op, "endpoint": served.url, "stream": stream, "options": chosen}
                        result = build.ask({**request, "expected": expected})
                        note(scenario, "records/s", build.name, result["records"] / result["seconds"])
                        if result.get("steadySeconds"):
                            steady = result["steadyRecords"] / result["steadySeconds"]
                            note(scenario, "records/s after the first batch", build.name, steady)
                        note(scenario, "CPU s per M records", build.name, result["cpuSeconds"] * 1e6 / expected)
            latency_rounds = range(args.rounds if args.seconds > 0 else 0)
            for (reader, options), round_number in [(r, n) for n in latency_rounds for r in LATENCY_READERS]:
                for build in builds if round_number % 2 == 0 else builds[::-1]:
                    result = build.ask(
                        {
                            "op": "latency",
                            "endpoint": served.url,
                            "options": options,
                            "rate": 1000,
                            "seconds": args.seconds,
                        }
                    )
                    scenario = f"latency at 1,000 records/s, {reader}"
                    note(scenario, "p50 ms", build.name, result["p50"])
                    note(scenario, "p99 ms", build.name, result["p99"])
        finally:
            for build in builds:
                build.close()

    print(
        f"\nTwo builds, taking turns: {counts['plain']:,} plain and {counts['KPL-aggregated']:,} KPL-aggregated user "
        f"records of 100 B on 4 shards, median of {args.rounds} rounds; latency: {args.seconds} s at 1,000 records/s "
        f"in each round; {args.emulator}, local[4] on {os.cpu_count()} cores; {time.monotonic() - started:.0f} s in all"
    )
    print("| scenario | measure | bare SDK loop | base | new | new/base | new/bare |\n|---|---|---|---|---|---|---|")
    for (scenario, measure), values in measures.items():
        if not (values["base"] and values["new"]):
            continue  # e.g. a read that took one batch in some round has no figure after its first batch
        base, new = statistics.median(values["base"]), statistics.median(values["new"])
        ceiling = statistics.median(values["bare"]) if values["bare"] else None
        if measure == "records/s after the first batch":
            ceiling = statistics.median(measures[scenario, "records/s"]["bare"])  # the bare loop has no first batch
        shown_bare, to_bare = ("", "") if ceiling is None else (f"{ceiling:,.1f}", f"{new / ceiling:.2f}")
        print(
            f"| {scenario} | {measure} | {shown_bare} | {base:,.1f} | {new:,.1f} | "
            f"{new / base if base else float('nan'):.2f} | {to_bare} |"
        )
    print(
        "Higher is better for records/s, lower for CPU and latency. A ratio beyond 0.95 (throughput) or 1.05 (CPU, "
        "latency) is a change to explain. new/bare: the new build against the bare SDK loop of the same stream (for "
        "the CPU, the bare loop's whole JVM against the Spark JVM, driver and executors)."
    )


if __name__ == "__main__":
    main()
