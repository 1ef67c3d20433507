"""What an idle stream costs a query, per idle minute: Spark batches, checkpoint files, metadata entries, calls.

One emulator (kinesis-local by default, as issue 28 measured), a 4-shard stream per case, Spark's default trigger
(a batch as soon as the previous one ends) and a JVM ``foreach`` sink (LatencyProbe.java, compiled as
benchmarks/latency.py does). Cases: polling and enhanced fan-out, each at the defaults and with
``kinesis.avoidEmptyBatches=true`` (``--option-key`` gives another key, e.g. the awslabs
``kinesis.internal.avoidEmptyBatches``, which a build before the option accepted and ignored). Each case: a warm-up
record read, a few seconds to settle, then ``--idle-seconds`` of idle stream, watched through the counting proxy:
batches run (the checkpoint's highest offset file), files the checkpoint gained (offsets, commits and their
checksums; metadata entries under ``<checkpoint>/sources/0/kinesis``; it is listed every 0.5 s, so files purged
after ``minBatchesToRetain`` still count) and Kinesis calls by type. Then the latency of the first record after the
idle spell (put -> row handed to the sink), again after ``--spells - 1`` shorter spells of ``--spell-seconds``, and
whether every record put was read exactly once. Prints a table and one JSON line; with --results, appends rows.

    .venv/bin/python benchmarks/idle_cost.py [--idle-seconds 60] [--connector-jars LINE.jar,DEPS.jar]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
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


class FilesSeen:
    """Every file under ``root`` seen by a listing every 0.5 s, from ``start()`` on."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.seen: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def listing(self) -> set[str]:
        return {str(p.relative_to(self.root)) for p in self.root.rglob("*") if p.is_file()}

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


def last_batch(checkpoint: Path) -> int:
    ids = [int(p.name) for p in (checkpoint / "offsets").glob("*") if p.name.isdigit()]
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


def measure(spark: Any, kinesis: Any, endpoint: str, options: dict[str, str], args: Any) -> dict[str, Any]:
    stream = f"bench-idle-cost-{time.time_ns()}"
    create_stream(kinesis, stream, SHARDS)
    checkpoint = Path(tempfile.mkdtemp(prefix="bench-idle-cost-chk-"))
    jvm = spark._jvm
    probe = jvm.LatencyProbe
    query = (
        kinesis_stream(spark, endpoint, stream, options, consumer_prefix="idle")
        .load()
        .select("data")
        ._jdf.writeStream()
        .foreach(probe())
        .option("checkpointLocation", str(checkpoint))
        .start()
    )
    try:
        probe.drain()
        warm_ms = first_row_ms(kinesis, stream, probe, query, "warm-up", timeout=180)
        time.sleep(args.settle_seconds)
        before_files = FilesSeen(checkpoint).listing()
        watcher = FilesSeen(checkpoint).start()
        args.proxy.reset()
        batch_before = last_batch(checkpoint)
        started = time.monotonic()
        time.sleep(args.idle_seconds)
        minutes = (time.monotonic() - started) / 60
        batches = last_batch(checkpoint) - batch_before
        calls = args.proxy.counts()
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
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle-seconds", type=float, default=60.0, help="the idle window measured per case")
    parser.add_argument("--settle-seconds", type=float, default=5.0, help="after the warm-up record, before the window")
    parser.add_argument("--spells", type=int, default=3, help="first-record latencies: after the window, then more")
    parser.add_argument("--spell-seconds", type=float, default=10.0, help="the idle spells after the first")
    parser.add_argument("--emulator", default="kinesis-local", choices=emulators.KINDS)
    parser.add_argument("--option-key", default="kinesis.avoidEmptyBatches")
    parser.add_argument("--cases", default="", help="comma-separated substrings of case labels to run")
    add_connector_jars(parser)
    parser.add_argument("--results", help="JSON-lines file to append the table rows to (see results.py)")
    args = parser.parse_args()
    os.environ.update(
        AWS_ACCESS_KEY_ID=emulators.ACCESS_KEY, AWS_SECRET_ACCESS_KEY=emulators.SECRET_KEY, AWS_REGION="us-east-1"
    )
    import pyspark

    cases = [
        (f"{reader}, {mode}", {**options, **({args.option_key: "true"} if mode != "defaults" else {})})
        for reader, options in READERS
        for mode in ("defaults", args.option_key.split(".")[-1])
    ]
    cases = [c for c in cases if not args.cases or any(w in c[0] for w in args.cases.split(","))]
    probe_jar = compile_probe(Path(pyspark.__file__).parent / "jars", Path(tempfile.mkdtemp(prefix="idle-probe-")))
    table: list[tuple[str, dict[str, Any]]] = []
    with emulators.running(args.emulator) as emulator, CountingProxy(emulator.endpoint) as proxy:
        args.proxy = proxy
        kinesis = emulators.kinesis_client(emulator.endpoint)
        spark = local_session(args.connector_jars, jars=[str(probe_jar)], conf=CBOR_OFF)
        for label, options in cases:
            table.append((label, measure(spark, kinesis, proxy.url, options, args)))
            print(label, json.dumps(table[-1][1]), flush=True)
        spark.stop()

    conditions = (
        f"{SHARDS} shards, {args.emulator}, Spark's default trigger, local[2] on {os.cpu_count()} cores, "
        f"{args.idle_seconds:.0f} s idle window"
    )
    print(f"\nIdle stream cost per minute, {conditions}")
    print(f"{'case':34s} {'batches':>8s} {'chk files':>9s} {'metadata':>8s} {'first row ms':>22s}  calls/min")
    for label, r in table:
        print(
            f"{label:34s} {r['batchesPerMinute']:8.1f} {r['checkpointFilesPerMinute']:9.1f} "
            f"{r['metadataEntriesPerMinute']:8.1f} {r['firstRowMs']!s:>22s}  {r['callsPerMinute']}"
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
