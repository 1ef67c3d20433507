"""A soak run: a streaming pipeline with faults for an hour, its resources sampled, its output checked exactly.

Not part of CI nor of ``benchmarks/run.sh``'s default set; ``benchmarks/run.sh soak [options]`` runs it (see
benchmarks/README.md). On the kinesis-local emulator (the one that reshards like Kinesis: parents stay readable):

- a producer thread puts ``--rate`` records/s (ids 0, 1, 2, ... in ``--record-bytes`` payloads, random partition
  keys) with boto3 PutRecords, on a stream of ``--shards`` shards;
- a split or a merge every ``--reshard-every`` minutes, alternating, so the open shards go N, N+1, N, ...;
- a query on a Spark standalone cluster (tests/harness/cluster.py: a master and 2 workers of 1 core each on
  loopback; the driver is this process's JVM) reads the stream from TRIM_HORIZON with default options and writes
  each micro-batch with Spark's text writer to ``batch-<id>/`` (``mode("overwrite")``: a replayed batch replaces
  its output, the idempotent-sink pattern); it is stopped and started again on the same checkpoint every
  ``--restart-every`` minutes, and an executor JVM is killed (SIGKILL) at each fraction of the run in ``--kills``,
  while a stage runs;
- every ``--sample-seconds``, for the driver JVM and each executor JVM: heap used after a full GC
  (``jcmd <pid> GC.run`` then ``GC.heap_info``, one jcmd per JVM), live threads and resident memory
  (/proc/<pid>/status), open file descriptors (/proc/<pid>/fd), descendant processes (all, and the KPL's
  ``kinesis_producer`` among them: 0 here, the pipeline does not use the sink); the emulator's resident memory too.

After ``--minutes`` the producer stops, the query catches up, and every output line is compared with every record
put: put, read distinct, lost, duplicated (split into the same Kinesis record read twice, which would be the
connector's fault, and a record that is in the stream twice because a PutRecords call was retried). The samples go
to a CSV and a PNG under ``benchmarks/soak-results/``; the summary gives, per metric, the value after warm-up, at
the end, and the slope per hour after warm-up. The exit code is 1 when a record is lost or read twice, or the
query failed.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import itertools
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from harness import emulators  # noqa: E402
from harness.cluster import StandaloneCluster, standalone_cluster  # noqa: E402
from harness.kinesis import (  # noqa: E402
    create_stream,
    merge_shards,
    open_shards,
    put_aggregated,
    put_plain,
    split_shard,
)
from results import jvm_pid, process_cpu_seconds  # noqa: E402
from streaming import reader  # noqa: E402

RESULTS_DIR = ROOT / "benchmarks" / "soak-results"
MB = 1024 * 1024
# Put calls whose outcome is unknown (the call failed after its retries): their records may or may not be in the
# stream, so they count neither as put nor as unexpected when read.
NOT_PUT, PUT, UNCERTAIN = 0, 1, 2


@dataclass
class Clock:
    started: float = field(default_factory=time.monotonic)

    def minutes(self) -> float:
        return (time.monotonic() - self.started) / 60


@dataclass
class Events:
    """Faults and restarts, with the minute they happened at (drawn on the plot, listed in the summary)."""

    clock: Clock
    rows: list[tuple[float, str, str]] = field(default_factory=list)

    def add(self, kind: str, detail: str) -> None:
        minute = self.clock.minutes()
        self.rows.append((minute, kind, detail))
        print(f"[{minute:6.2f} min] {kind}: {detail}", flush=True)


class Producer(threading.Thread):
    """Puts ``rate`` records/s with ids 0, 1, 2, ..., every 100 ms the records due by then.

    With ``per_aggregate`` > 1 the records go out KPL-aggregated, that many per Kinesis record (aws-kinesis-agg,
    as a KPL producer would send them; one PutRecord per aggregate, with a random partition key), otherwise one
    Kinesis record each in PutRecords calls of up to 500. ``status[id]`` is PUT once the put is acknowledged,
    UNCERTAIN when its call failed. Nothing is queued: a slow emulator makes the producer fall behind its schedule
    (``behind_seconds``), not grow a buffer.
    """

    def __init__(self, endpoint: str, stream: str, rate: int, record_bytes: int, per_aggregate: int) -> None:
        super().__init__(daemon=True, name="producer")
        self.client = emulators.kinesis_client(endpoint)
        self.stream, self.rate, self.record_bytes, self.per_aggregate = stream, rate, record_bytes, per_aggregate
        self.status = bytearray()
        self.put = 0
        self.failed_calls = 0
        self.behind_seconds = 0.0
        self.max_behind_seconds = 0.0
        self.halt = threading.Event()
        self.elapsed = 0.0

    def payload(self, record_id: int) -> str:
        text = f"{record_id:010d} "
        return text + "x" * max(0, self.record_bytes - len(text))

    def send(self, ids: range) -> None:
        # One random partition key per aggregate, for all its user records: like the KPL, which aggregates only
        # records bound for the same shard (a reader drops the user records of an aggregate whose hash keys lie
        # outside the shard's range, as the KCL does).
        keys = [f"pk-{random.getrandbits(64)}" for _ in range(0, len(ids), self.per_aggregate)]
        records = [(keys[n // self.per_aggregate], self.payload(i)) for n, i in enumerate(ids)]
        if self.per_aggregate > 1:
            put_aggregated(self.client, self.stream, records, records_per_aggregate=self.per_aggregate)
        else:
            put_plain(self.client, self.stream, records)

    def run(self) -> None:
        started = time.monotonic()
        sent = 0
        while not self.halt.wait(0.1):
            self.behind_seconds = max(0.0, (time.monotonic() - started) - sent / self.rate)
            self.max_behind_seconds = max(self.max_behind_seconds, self.behind_seconds)
            due = int((time.monotonic() - started) * self.rate)
            while sent < due and not self.halt.is_set():
                count = min(due - sent, 500)
                self.status.extend(bytes(count))
                try:
                    self.send(range(sent, sent + count))
                    mark, self.put = PUT, self.put + count
                except Exception as error:
                    mark, self.failed_calls = UNCERTAIN, self.failed_calls + 1
                    print(f"producer: a put failed ({type(error).__name__}: {error})", file=sys.stderr)
                self.status[sent : sent + count] = bytes([mark]) * count
                sent += count
        self.elapsed = time.monotonic() - started


class BatchWriter:
    """The ``foreachBatch`` function: each batch's rows as text under ``out/batch-<id>/``, a replay overwriting.

    Counts, per batch id, the lines that landed on disk (a replay replaces its count too).
    """

    def __init__(self, out: Path) -> None:
        self.out = out
        self.lines: dict[int, int] = {}
        self.lock = threading.Lock()

    def __call__(self, batch: Any, batch_id: int) -> None:
        path = self.out / f"batch-{batch_id:07d}"
        batch.write.mode("overwrite").text(str(path))
        count = sum(_count_lines(part) for part in path.glob("part-*"))
        with self.lock:
            self.lines[batch_id] = count

    def written(self) -> int:
        with self.lock:
            return sum(self.lines.values())


def _count_lines(path: Path) -> int:
    with open(path, "rb") as handle:
        return sum(1 for _ in handle)


# --- resources ---------------------------------------------------------------------------------------------------


def _status_fields(pid: int) -> dict[str, str]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields


def _children_map() -> dict[int, list[tuple[int, str]]]:
    """Parent pid -> [(child pid, command name)] over every process of the machine."""
    children: dict[int, list[tuple[int, str]]] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append((int(proc.name), name))
    return children


def _descendants(pid: int, children: dict[int, list[tuple[int, str]]]) -> list[str]:
    names, todo = [], [pid]
    while todo:
        for child, name in children.get(todo.pop(), []):
            names.append(name)
            todo.append(child)
    return names


def heap_after_gc_mb(pid: int) -> float | None:
    """Heap in use right after a full collection: ``jcmd <pid> GC.run`` and ``GC.heap_info`` in one jcmd call.

    GC.heap_info lists the heap's parts (``garbage-first heap ... used NK``, or a line per generation for the
    other collectors) before Metaspace; their ``used`` figures are summed.
    """
    with tempfile.NamedTemporaryFile("w", suffix=".jcmd") as commands:
        commands.write("GC.run\nGC.heap_info\n")
        commands.flush()
        try:
            result = subprocess.run(
                ["jcmd", str(pid), "-f", commands.name], capture_output=True, text=True, timeout=60, check=False
            )
        except subprocess.TimeoutExpired:
            return None
    used_kb = 0
    for line in result.stdout.splitlines():
        if line.strip().startswith("Metaspace"):
            break
        match = re.search(r"used (\d+)K", line)
        if match:
            used_kb += int(match.group(1))
    return used_kb / 1024 if used_kb else None


class Sampler(threading.Thread):
    """Every ``period`` s: one row per JVM (driver, each executor) and one for the emulator, into ``rows``."""

    COLUMNS = (
        "minute",
        "role",
        "pid",
        "heap_after_gc_mb",
        "threads",
        "open_fds",
        "descendants",
        "descendant_names",
        "kpl_processes",
        "rss_mb",
        "cpu_percent",
        "records_put",
        "records_written",
    )

    def __init__(
        self,
        period: float,
        clock: Clock,
        driver_pid: int,
        cluster: StandaloneCluster,
        emulator_pid: int,
        producer: Producer,
        writer: BatchWriter,
    ) -> None:
        super().__init__(daemon=True, name="sampler")
        self.period, self.clock, self.driver_pid, self.cluster = period, clock, driver_pid, cluster
        self.emulator_pid, self.producer, self.writer = emulator_pid, producer, writer
        self.rows: list[dict[str, Any]] = []
        self.halt = threading.Event()
        self.last_cpu: dict[int, tuple[float, float]] = {}

    def roles(self) -> list[tuple[str, int, bool]]:
        """(role, pid, is a JVM): the driver, the executors by id (the name of their work directory), the emulator."""
        found = [("driver", self.driver_pid, True)]
        for pid in self.cluster.executor_pids():
            with contextlib.suppress(OSError):
                found.append((f"executor {Path(os.readlink(f'/proc/{pid}/cwd')).name}", pid, True))
        return [*found, ("emulator", self.emulator_pid, False)]

    def sample(self) -> None:
        children = _children_map()
        for role, pid, is_jvm in self.roles():
            try:
                heap = heap_after_gc_mb(pid) if is_jvm else None
                status = _status_fields(pid)
                fds = len(os.listdir(f"/proc/{pid}/fd"))
                now, cpu = time.monotonic(), process_cpu_seconds(pid)
            except OSError:
                continue  # it just ended (a killed executor)
            descendants = _descendants(pid, children)
            last = self.last_cpu.get(pid)
            self.last_cpu[pid] = (now, cpu)
            self.rows.append(
                {
                    "minute": round(self.clock.minutes(), 3),
                    "role": role,
                    "pid": pid,
                    "heap_after_gc_mb": "" if heap is None else round(heap, 1),
                    "threads": int(status["Threads"]),
                    "open_fds": fds,
                    "descendants": len(descendants),
                    "descendant_names": " ".join(sorted(descendants)),
                    # The command name is cut at 15 characters.
                    "kpl_processes": sum(1 for name in descendants if name.startswith("kinesis_produc")),
                    "rss_mb": round(int(status["VmRSS"].split()[0]) / 1024, 1),
                    # Over the last period (the first sample of a process: since it started).
                    "cpu_percent": "" if last is None else round(100 * (cpu - last[1]) / (now - last[0]), 1),
                    "records_put": self.producer.put,
                    "records_written": self.writer.written(),
                }
            )

    def run(self) -> None:
        while True:
            started = time.monotonic()
            self.sample()
            if self.halt.wait(max(0.0, self.period - (time.monotonic() - started))):
                return


# --- faults ------------------------------------------------------------------------------------------------------


def reshard(kinesis: Any, stream: str, split: bool) -> str:
    """Split the open shard with the widest hash range, or merge the adjacent open pair with the narrowest one."""

    def width(shard: dict[str, Any]) -> int:
        hashes = shard["HashKeyRange"]
        return int(hashes["EndingHashKey"]) - int(hashes["StartingHashKey"]) + 1

    shards = sorted(open_shards(kinesis, stream), key=lambda s: int(s["HashKeyRange"]["StartingHashKey"]))
    if split:
        parent = max(shards, key=width)
        children = split_shard(kinesis, stream, parent["ShardId"])
        return f"split {parent['ShardId']} into {', '.join(children)}; {len(shards) + 1} open shards"
    left, right = min(itertools.pairwise(shards), key=lambda pair: width(pair[0]) + width(pair[1]))
    child = merge_shards(kinesis, stream, left["ShardId"], right["ShardId"])
    return f"merged {left['ShardId']} and {right['ShardId']} into {child}; {len(shards) - 1} open shards"


def executor_ids(spark: Any) -> str:
    return str(spark.sparkContext._jsc.sc().getExecutorIds().mkString(","))


def kill_executor_in_a_stage(spark: Any, cluster: StandaloneCluster, wait: float = 60.0) -> str:
    """SIGKILL an executor JVM of the cluster while a stage runs (or after ``wait`` s if none starts)."""
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + wait
    while not tracker.getActiveStageIds() and time.monotonic() < deadline:
        time.sleep(0.05)
    in_stage = bool(tracker.getActiveStageIds())
    before = executor_ids(spark)
    pid = cluster.kill_one_executor()
    return f"pid {pid} {'during a stage' if in_stage else 'between stages'}; executors before: {before}"


# --- the check ---------------------------------------------------------------------------------------------------


@dataclass
class Exactness:
    put: int
    uncertain: int
    read_lines: int
    read_distinct: int
    lost: int
    read_twice_same_record: int
    in_stream_twice: int
    unexpected: int
    batches: int
    batches_without_success: int
    examples: list[str]


def _output_lines(out: Path) -> Iterator[tuple[int, str]]:
    """(record id, ``<shardId> <sequenceNumber> (batch-<id>)``) for every line under ``out/batch-*/``."""
    for batch in sorted(out.glob("batch-*")):
        for part in sorted(batch.glob("part-*")):
            with open(part, encoding="utf-8") as handle:
                for line in handle:
                    record_id, _, position = line.strip().partition(" ")
                    yield int(record_id), f"{position} ({batch.name})"


def check_output(out: Path, status: bytearray) -> Exactness:
    """Compare every line under ``out/batch-*/`` (``<id> <shardId> <sequenceNumber>``) with the records put.

    Two passes: count each id, then note where the ids read more than once were read.
    """
    counts = bytearray(len(status))
    unexpected, lines = 0, 0
    for index, _ in _output_lines(out):
        lines += 1
        if index >= len(status) or status[index] == NOT_PUT:
            unexpected += 1
        else:
            counts[index] = min(255, counts[index] + 1)
    places: dict[int, list[str]] = {}
    if any(c > 1 for c in counts):
        for index, place in _output_lines(out):
            if index < len(counts) and counts[index] > 1:
                places.setdefault(index, []).append(place)
    # The same shard and sequence number twice: one Kinesis record read twice. Different ones: put twice.
    same_record = sum(1 for seen in places.values() if len({p.split(" (")[0] for p in seen}) < len(seen))
    lost_ids = [i for i, s in enumerate(status) if s == PUT and not counts[i]]
    batches = sorted(out.glob("batch-*"))
    return Exactness(
        put=status.count(PUT),
        uncertain=status.count(UNCERTAIN),
        read_lines=lines,
        read_distinct=len(counts) - counts.count(0),
        lost=len(lost_ids),
        read_twice_same_record=same_record,
        in_stream_twice=len(places) - same_record,
        unexpected=unexpected,
        batches=len(batches),
        batches_without_success=sum(1 for b in batches if not (b / "_SUCCESS").exists()),
        examples=[f"lost {i}" for i in lost_ids[:5]] + [f"{i} read at {seen}" for i, seen in list(places.items())[:5]],
    )


# --- report ------------------------------------------------------------------------------------------------------

METRICS = ("heap_after_gc_mb", "threads", "open_fds", "descendants", "kpl_processes", "rss_mb", "cpu_percent")


def slope_per_hour(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of (minute, value) points, per hour."""
    if len(points) < 3:
        return None
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    if spread == 0:
        return None
    return 60 * sum((x - mean_x) * (y - mean_y) for x, y in points) / spread


def summary_rows(rows: list[dict[str, Any]], warmup: float) -> list[tuple[str, str, str, str, str, str]]:
    """Per role and metric: the value after warm-up, at the end, the slope per hour after warm-up, its span.

    A process that starts during the run (an executor replacing a killed one) gets its own warm-up from its start.
    """
    table = []
    for role in dict.fromkeys(row["role"] for row in rows):
        born = min(r["minute"] for r in rows if r["role"] == role)
        mine = [r for r in rows if r["role"] == role and r["minute"] >= max(warmup, born + warmup)]
        if not mine:
            continue
        for metric in METRICS:
            points = [(float(r["minute"]), float(r[metric])) for r in mine if r[metric] != ""]
            if not points:
                continue
            slope = slope_per_hour(points)
            table.append(
                (
                    role,
                    metric,
                    f"{points[0][1]:g}",
                    f"{points[-1][1]:g}",
                    "n/a" if slope is None else f"{slope:+.1f}",
                    f"{points[0][0]:.1f}-{points[-1][0]:.1f} min, {len(points)} samples",
                )
            )
    return table


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=Sampler.COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


def plot(path: Path, rows: list[dict[str, Any]], events: list[tuple[float, str, str]], title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("heap_after_gc_mb", "heap after full GC (MiB)"),
        ("rss_mb", "resident memory (MiB)"),
        ("threads", "live threads"),
        ("open_fds", "open file descriptors"),
        ("descendants", "descendant processes"),
        ("kpl_processes", "kinesis_producer processes"),
        ("cpu_percent", "CPU (% of one core)"),
        ("records", "records (thousands)"),
    ]
    figure, axes = plt.subplots(4, 2, figsize=(14, 14), sharex=True)
    roles = list(dict.fromkeys(row["role"] for row in rows))
    styles = {"kill": ("tab:red", "-"), "restart": ("tab:green", "--"), "reshard": ("0.6", ":")}
    for axis, (metric, label) in zip(axes.flat, panels, strict=True):
        if metric == "records":
            driver = [r for r in rows if r["role"] == "driver"]
            for column, name in (("records_put", "put"), ("records_written", "written")):
                axis.plot([r["minute"] for r in driver], [r[column] / 1000 for r in driver], label=name)
        else:
            for role in roles:
                if metric == "heap_after_gc_mb" and role == "emulator":
                    continue
                mine = [r for r in rows if r["role"] == role and r[metric] != ""]
                axis.plot([r["minute"] for r in mine], [r[metric] for r in mine], marker=".", label=role)
        for minute, kind, _ in events:
            colour, line = styles.get(kind, ("tab:orange", "-."))
            axis.axvline(minute, color=colour, linestyle=line, linewidth=0.8)
        axis.set_title(label)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7)
    for axis in axes[-1]:
        axis.set_xlabel("minutes")
    figure.suptitle(f"{title}\nred: executor killed, green dashed: query restarted, grey dotted: split/merge")
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)


# --- the run -----------------------------------------------------------------------------------------------------


def start_query(spark: Any, endpoint: str, stream: str, writer: BatchWriter, checkpoint: Path, trigger: float) -> Any:
    rows = reader(spark, endpoint, stream, startingPosition="TRIM_HORIZON").selectExpr(
        "concat_ws(' ', split(CAST(data AS STRING), ' ')[0], shardId, sequenceNumber) AS value"
    )
    return (
        rows.writeStream.foreachBatch(writer)
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime=f"{trigger:g} seconds")
        .start()
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0, help="how long records are put (default 60)")
    parser.add_argument("--rate", type=int, default=1000, help="records per second (default 1000)")
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument(
        "--records-per-aggregate",
        type=int,
        default=100,
        help="user records per KPL-aggregated Kinesis record; 1 puts plain records (default 100: kinesis-local's "
        "cost per record grows with the records already in the shard, see benchmarks/README.md)",
    )
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--reshard-every", type=float, default=3.0, help="minutes between splits and merges")
    parser.add_argument("--restart-every", type=float, default=10.0, help="minutes between query restarts")
    parser.add_argument("--kills", default="0.35,0.75", help="fractions of the run at which an executor is killed")
    parser.add_argument("--warmup", type=float, default=10.0, help="minutes before the summary's first value")
    parser.add_argument("--sample-seconds", type=float, default=20.0)
    parser.add_argument("--trigger-seconds", type=float, default=5.0)
    parser.add_argument("--drain-minutes", type=float, default=10.0, help="how long the query may take to catch up")
    parser.add_argument("--workdir", help="checkpoint and output (default: a new temporary directory, removed)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    credentials = {
        "AWS_ACCESS_KEY_ID": emulators.ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": emulators.SECRET_KEY,
        "AWS_REGION": emulators.REGION,
        "AWS_DEFAULT_REGION": emulators.REGION,
    }
    os.environ.update(credentials)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import spark_kinesis
    from pyspark.sql import SparkSession

    stamp = time.strftime("%Y%m%d-%H%M%S")
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="spark-kinesis-soak-"))
    out, checkpoint = work / "out", work / "checkpoint"
    out.mkdir(parents=True, exist_ok=True)
    kill_minutes = sorted(float(f) * args.minutes for f in args.kills.split(",") if f.strip())
    print(
        f"soak: {args.minutes:g} min at {args.rate} records/s ({args.records_per_aggregate} per Kinesis record) on "
        f"{args.shards} shards (kinesis-local); "
        f"split/merge every {args.reshard_every:g} min, restart every {args.restart_every:g} min, executor kills at "
        f"{', '.join(f'{m:.1f}' for m in kill_minutes)} min; work dir {work}",
        flush=True,
    )
    clock = Clock()
    events = Events(clock)
    failures: list[str] = []
    with (
        emulators.running("kinesis-local") as emulator,
        standalone_cluster(work / "cluster", workers=2, cores=1, memory="1g", env=credentials) as cluster,
    ):
        kinesis = emulators.kinesis_client(emulator.endpoint)
        stream = create_stream(kinesis, f"soak-{stamp}", args.shards)
        spark = spark_kinesis.configure_spark(
            SparkSession.builder.master(cluster.master_url)
            .appName("spark-kinesis-soak")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.executor.memory", "512m")
            .config("spark.executor.cores", "1")
            .config("spark.task.maxFailures", "8")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
        ).getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        writer = BatchWriter(out)
        producer = Producer(emulator.endpoint, stream, args.rate, args.record_bytes, args.records_per_aggregate)
        clock.started = time.monotonic()
        producer.start()
        query = start_query(spark, emulator.endpoint, stream, writer, checkpoint, args.trigger_seconds)
        sampler = Sampler(args.sample_seconds, clock, jvm_pid(spark), cluster, emulator.pid, producer, writer)
        sampler.start()
        next_reshard, next_restart, split = args.reshard_every / 2, args.restart_every, True
        next_report = 0.0
        try:
            while clock.minutes() < args.minutes:
                now = clock.minutes()
                if query.exception() is not None:
                    failures.append(f"query failed at {now:.1f} min: {str(query.exception()).splitlines()[0]}")
                    events.add("query failed", failures[-1])
                    query = start_query(spark, emulator.endpoint, stream, writer, checkpoint, args.trigger_seconds)
                if now >= next_reshard:
                    try:
                        events.add("reshard", reshard(kinesis, stream, split))
                    except Exception as error:  # the run goes on; the failure is reported
                        failures.append(f"reshard at {now:.1f} min: {type(error).__name__}: {error}")
                        events.add("reshard failed", failures[-1])
                    split, next_reshard = not split, next_reshard + args.reshard_every
                if now >= next_restart:
                    query.stop()
                    query = start_query(spark, emulator.endpoint, stream, writer, checkpoint, args.trigger_seconds)
                    events.add("restart", f"stopped and started on the same checkpoint ({writer.written()} written)")
                    next_restart += args.restart_every
                if kill_minutes and now >= kill_minutes[0]:
                    kill_minutes.pop(0)
                    try:
                        events.add("kill", kill_executor_in_a_stage(spark, cluster))
                    except (RuntimeError, OSError) as error:  # no executor JVM at that moment, or it just ended
                        failures.append(f"executor kill at {now:.1f} min: {error}")
                        events.add("kill failed", failures[-1])
                if now >= next_report:
                    print(
                        f"[{now:6.2f} min] put {producer.put}, written {writer.written()}, producer behind "
                        f"{producer.behind_seconds:.1f} s, executors {executor_ids(spark)}",
                        flush=True,
                    )
                    next_report += 1.0
                time.sleep(0.5)
            producer.halt.set()
            producer.join()
            put_minutes = clock.minutes()
            print(f"producer stopped: {producer.put} records acknowledged; the query catches up", flush=True)
            deadline = time.monotonic() + args.drain_minutes * 60
            last_written, quiet_since = -1, time.monotonic()
            while time.monotonic() < deadline and query.exception() is None:
                written = writer.written()
                if written != last_written:
                    last_written, quiet_since = written, time.monotonic()
                # Caught up: nothing new for three triggers with at least as many lines as records put, or for
                # ten triggers (a minute at least) with fewer, when what is missing is not coming.
                quiet = time.monotonic() - quiet_since
                if quiet > 3 * args.trigger_seconds and written >= producer.put:
                    break
                if quiet > max(60.0, 10 * args.trigger_seconds):
                    break
                time.sleep(1)
            if query.exception() is not None:
                failures.append(f"query failed while catching up: {str(query.exception()).splitlines()[0]}")
            drained_minutes = clock.minutes()
        finally:
            sampler.halt.set()
            sampler.join()
            with contextlib.suppress(Exception):
                query.stop()
            final_executors = executor_ids(spark)
            spark.stop()
            producer.halt.set()

    result = check_output(out, producer.status)
    rate = producer.put / producer.elapsed if producer.elapsed else 0.0
    csv_path = RESULTS_DIR / f"soak-{stamp}.csv"
    png_path = RESULTS_DIR / f"soak-{stamp}.png"
    write_csv(csv_path, sampler.rows)
    title = (
        f"spark-kinesis soak {stamp}: {put_minutes:.0f} min, {rate:.0f} records/s "
        f"({args.records_per_aggregate} per Kinesis record), kinesis-local, "
        f"standalone cluster of 2 workers"
    )
    plot(png_path, sampler.rows, events.rows, title)

    print("\n== soak: events ==")
    for minute, kind, detail in events.rows:
        print(f"{minute:7.2f} min  {kind:13s} {detail}")
    print(f"\n== soak: exactness ({put_minutes:.1f} min of puts, caught up at {drained_minutes:.1f} min) ==")
    print(
        f"records put (acknowledged)  {result.put}   ({rate:.0f}/s achieved of {args.rate}/s asked; "
        f"{producer.failed_calls} failed put calls, {result.uncertain} records of unknown outcome; "
        f"{args.records_per_aggregate} per Kinesis record; producer at most {producer.max_behind_seconds:.1f} s "
        "behind its schedule)"
    )
    print(f"lines written               {result.read_lines} in {result.batches} batches")
    print(f"read distinct               {result.read_distinct}")
    print(f"lost                        {result.lost}")
    print(
        f"duplicated                  {result.read_twice_same_record + result.in_stream_twice}   "
        f"(same Kinesis record read twice: {result.read_twice_same_record}; "
        f"put twice by a retried put call: {result.in_stream_twice})"
    )
    print(f"read but never put          {result.unexpected}")
    print(f"batch outputs without _SUCCESS  {result.batches_without_success}")
    print(f"executors at the end        {final_executors}")
    for example in result.examples:
        print(f"  e.g. {example}")
    print(f"\n== soak: resources (after warm-up at {args.warmup:g} min; slope per hour after warm-up) ==")
    header = ("role", "metric", "after warm-up", "end", "slope/h", "span")
    table = [header, *summary_rows(sampler.rows, args.warmup)]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    print(f"\nsamples: {csv_path}\nplot:    {png_path}")
    for failure in failures:
        print(f"FAILED: {failure}")
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    exact = result.lost == 0 and result.read_twice_same_record == 0 and result.unexpected == 0
    return 0 if exact and not failures and not result.batches_without_success else 1


if __name__ == "__main__":
    sys.exit(main())
