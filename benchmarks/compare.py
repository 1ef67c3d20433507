"""Two builds of the connector side by side: the quick read and latency scenarios, taking turns, in one run.

Each build runs in a Python process of its own (one Spark session each, local[4], with that build's jars); this
process starts ministack, loads one plain and one KPL-aggregated 4-shard stream once, and then asks the two builds in
turn, round after round, to read them from TRIM_HORIZON (polling and enhanced fan-out, defaults, noop sink) and to
run the latency scenario (1,000 records/s put for --seconds, micro-batches, polling and fan-out), in as many
rounds. It prints one table: each measure's median over the rounds for the base build and for the new one, and
new/base. Both builds meet the same emulator, streams and machine load, so only their ratio means something. Run
with benchmarks/compare.sh.
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

READS = (
    ("polling", {}),
    ("fan-out", {"kinesis.consumerType": "SubscribeToShard"}),
)
LATENCY_READERS = (
    ("polling, micro-batches", {}),
    ("fan-out, micro-batches", {"kinesis.consumerType": "SubscribeToShard"}),
)


def worker(connector_jars: str) -> None:
    """Serve requests, one JSON object a line on standard input, with one Spark session on ``connector_jars``."""
    import latency
    import pyspark
    from read_throughput import connector
    from sessions import CBOR_OFF, local_session

    probe_jar = latency.compile_probe(
        Path(pyspark.__file__).parent / "jars", Path(tempfile.mkdtemp(prefix="compare-probe-"))
    )
    spark = local_session(connector_jars, jars=[str(probe_jar)], conf=CBOR_OFF, master="local[4]")
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "read":
            answer = connector(spark, request["endpoint"], request["stream"], request["expected"], request["options"])
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
    parser.add_argument("--records", type=int, default=100000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=10, help="steady input of each latency measurement")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return
    if not (args.base_jars and args.jars):
        parser.error("--base-jars and --jars are required")
    from read_throughput import active_consumer, load_streams

    os.environ.update(
        AWS_ACCESS_KEY_ID=emulators.ACCESS_KEY, AWS_SECRET_ACCESS_KEY=emulators.SECRET_KEY, AWS_REGION="us-east-1"
    )
    started = time.monotonic()
    measures: dict[tuple[str, str], dict[str, list[float]]] = {}

    def note(scenario: str, measure: str, build: str, value: float) -> None:
        measures.setdefault((scenario, measure), {"base": [], "new": []})[build].append(value)

    with emulators.running("ministack") as emulator:
        kinesis = emulators.kinesis_client(emulator.endpoint)
        streams = load_streams(kinesis, args.records, 100, 4)
        builds = [Build("base", args.base_jars), Build("new", args.jars)]
        try:
            for build in builds:  # warm-up: JIT, first job, client pools
                build.ask(
                    {
                        "op": "read",
                        "endpoint": emulator.endpoint,
                        "stream": streams[0][1],
                        "expected": args.records,
                        "options": {},
                    }
                )
            for round_number in range(args.rounds):
                order = builds if round_number % 2 == 0 else builds[::-1]
                for (label, stream), (reader, options) in [(s, r) for s in streams for r in READS]:
                    for build in order:
                        chosen = dict(options)
                        if "kinesis.consumerType" in chosen:
                            chosen["kinesis.consumerName"] = active_consumer(kinesis, stream)
                        result = build.ask(
                            {
                                "op": "read",
                                "endpoint": emulator.endpoint,
                                "stream": stream,
                                "expected": args.records,
                                "options": chosen,
                            }
                        )
                        scenario = f"read {args.records:,}, {reader}, {label}"
                        note(scenario, "records/s", build.name, result["records"] / result["seconds"])
                        note(scenario, "CPU s per M records", build.name, result["cpuSeconds"] * 1e6 / args.records)
            for (reader, options), round_number in [(r, n) for n in range(args.rounds) for r in LATENCY_READERS]:
                for build in builds if round_number % 2 == 0 else builds[::-1]:
                    result = build.ask(
                        {
                            "op": "latency",
                            "endpoint": emulator.endpoint,
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
        f"\nTwo builds, taking turns: {args.records:,} user records of 100 B on 4 shards, median of {args.rounds} "
        f"rounds; latency: {args.seconds} s at 1,000 records/s in each round; ministack, local[4] on "
        f"{os.cpu_count()} cores; {time.monotonic() - started:.0f} s in all"
    )
    print("| scenario | measure | base | new | new/base |\n|---|---|---|---|---|")
    for (scenario, measure), values in measures.items():
        base, new = statistics.median(values["base"]), statistics.median(values["new"])
        print(f"| {scenario} | {measure} | {base:,.1f} | {new:,.1f} | {new / base if base else float('nan'):.2f} |")
    print(
        "Higher is better for records/s, lower for CPU and latency. A ratio beyond 0.95 (throughput) or 1.05 (CPU, "
        "latency) is a change to explain."
    )


if __name__ == "__main__":
    main()
