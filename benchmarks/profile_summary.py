"""Where a read's CPU and allocation go, from a JFR recording of the Spark JVM (read_throughput.py --profile).

Prints, for the recording's execution samples (each one a thread found running Java code, every 10 ms with JFR's
``profile`` settings): the share of samples per thread group and per library of the top frame (self time), the top
frames by self time, and the bytes allocated per user record (JFR's per-thread allocation counters, summed over
every thread) with the top allocation sites (JFR's weighted allocation samples). Run as

    .venv/bin/python benchmarks/profile_summary.py RECORDING.jfr --records N [--top 15]
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
from typing import Any

# The library a frame's class belongs to, by package prefix: the first that matches.
LIBRARIES = (
    ("io.sparkkinesis.shaded.software.amazon", "AWS SDK (shaded)"),
    ("io.sparkkinesis.shaded.com.google.protobuf", "protobuf (shaded)"),
    ("io.sparkkinesis.shaded.io.netty", "netty (shaded)"),
    ("io.sparkkinesis.shaded.com.fasterxml", "jackson (shaded)"),
    ("io.sparkkinesis.shaded", "other shaded"),
    ("io.sparkkinesis", "connector"),
    ("org.apache.spark", "Spark"),
    ("scala.", "Scala library"),
    ("java.", "JDK"),
    ("javax.", "JDK"),
    ("jdk.", "JDK"),
    ("sun.", "JDK"),
)

# Thread groups, by the start of the thread's name.
THREADS = (
    ("Executor task", "Spark tasks"),  # "launch worker" or, as JFR may name it, "idle worker"
    ("spark-kinesis-fetch", "connector fetch threads"),
    ("sdk-async", "SDK async threads"),
    ("aws-java-sdk-NettyEventLoop", "SDK netty event loops"),
)


def events(recording: str, kind: str) -> list[dict[str, Any]]:
    """The recording's events of one type, as ``jfr print --json`` gives them (stacks cut to 3 frames)."""
    done = subprocess.run(
        ["jfr", "print", "--json", "--stack-depth", "3", "--events", kind, recording],
        capture_output=True,
        text=True,
        check=True,
    )
    return [e["values"] for e in json.loads(done.stdout)["recording"]["events"]]


def frame_name(frame: dict[str, Any]) -> str:
    method = frame["method"]
    return f"{method['type']['name'].replace('/', '.')}.{method['name']}"


def library(name: str) -> str:
    return next((label for prefix, label in LIBRARIES if name.startswith(prefix)), "other")


def thread_group(thread: dict[str, Any] | None) -> str:
    name = (thread or {}).get("javaName") or ""
    return next((label for prefix, label in THREADS if name.startswith(prefix)), "other threads")


def shares(counter: collections.Counter[str], total: float, top: int) -> list[str]:
    return [f"  {100 * n / total:5.1f} %  {key}" for key, n in counter.most_common(top)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recording")
    parser.add_argument("--records", type=int, required=True, help="user records read during the recording")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()

    samples = [s for s in events(args.recording, "jdk.ExecutionSample") if s.get("stackTrace")]
    by_thread: collections.Counter[str] = collections.Counter()
    by_library: collections.Counter[str] = collections.Counter()
    by_frame: collections.Counter[str] = collections.Counter()
    for sample in samples:
        top = frame_name(sample["stackTrace"]["frames"][0])
        by_thread[thread_group(sample.get("sampledThread"))] += 1
        by_library[library(top)] += 1
        by_frame[top] += 1
    print(f"{len(samples):,} execution samples ({len(samples) * 1e6 / args.records:,.0f} per million records)")
    print("by thread group:", *shares(by_thread, len(samples), args.top), sep="\n")
    print("self time by library of the top frame:", *shares(by_library, len(samples), args.top), sep="\n")
    print("top frames by self time:", *shares(by_frame, len(samples), args.top), sep="\n")

    # Per-thread allocation counters, sampled at the recording's start and end (and periodically): a thread's
    # allocation is its last value minus its first, or all of it for a thread that started during the recording.
    counters: dict[int, list[int]] = {}
    stats = events(args.recording, "jdk.ThreadAllocationStatistics")
    first_time = min((stat["startTime"] for stat in stats), default="")
    for stat in stats:
        values = counters.setdefault(stat["thread"]["javaThreadId"], [])
        if not values and stat["startTime"] > first_time:
            values.append(0)
        values.append(int(stat["allocated"]))
    allocated = sum(max(values) - min(values) for values in counters.values())
    print(f"allocated: {allocated / 1e9:.2f} GB, {allocated / args.records:,.0f} bytes per user record (all threads)")
    sites: collections.Counter[str] = collections.Counter()
    for sample in events(args.recording, "jdk.ObjectAllocationSample"):
        if (sample.get("stackTrace") or {}).get("frames"):  # JFR records some samples without a frame
            site = frame_name(sample["stackTrace"]["frames"][0])
            sites[f"{sample['objectClass']['name'].replace('/', '.')} in {site}"] += int(sample["weight"])
    print("top allocation sites (weighted samples):", *shares(sites, sum(sites.values()) or 1, args.top), sep="\n")


if __name__ == "__main__":
    main()
