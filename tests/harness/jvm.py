"""What a local process (the Spark JVM) holds, read from /proc: threads, file descriptors, TCP connections, and
the KPL's native ``kinesis_producer`` child processes.

    pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
    usage(pid)   # Usage(threads=..., fds=..., tcp=..., producers=...)
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

LEAN_JIT = "-XX:TieredStopAtLevel=1 -XX:+UseParallelGC"
"""Options of the JVMs the tests start (tests/conftest.py puts them in SPARK_SUBMIT_OPTS and SPARK_DAEMON_JAVA_OPTS).

A test's JVM lives for seconds to minutes and runs little data, so the optimising JIT tier costs it more than it
saves: its compiler threads took half the CPU of the suite's Spark JVMs on a 2-core machine, where the first tier
alone compiles in a fraction of that. The behaviour under test is the same; the benchmarks keep the JVM's defaults.
"""


def producer_processes(jvm_pid: int) -> list[int]:
    """Pids of the JVM's child processes running the KPL's native ``kinesis_producer``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            name = stat[stat.index("(") + 1 : stat.rindex(")")]
            parent = int(stat[stat.rindex(")") + 2 :].split()[1])
        except (OSError, ValueError):
            continue
        if name.startswith("kinesis_produc") and parent == jvm_pid:
            found.append(int(entry.name))
    return found


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def tcp_connections(pid: int) -> int:
    """The process's TCP sockets that are not listening (state 0A), per /proc/<pid>/net/tcp and tcp6."""
    mine = _socket_inodes(pid)
    count = 0
    for table in ("tcp", "tcp6"):
        with open(f"/proc/{pid}/net/{table}") as lines:
            next(lines)
            for line in lines:
                fields = line.split()
                if fields[3] != "0A" and fields[9] in mine:
                    count += 1
    return count


@dataclass(frozen=True)
class Usage:
    threads: int
    fds: int
    tcp: int
    producers: int


def usage(pid: int) -> Usage:
    with open(f"/proc/{pid}/status") as status:
        threads = next(int(line.split()[1]) for line in status if line.startswith("Threads:"))
    return Usage(threads, len(os.listdir(f"/proc/{pid}/fd")), tcp_connections(pid), len(producer_processes(pid)))


def thread_names(pid: int) -> Counter[str]:
    """The process's threads by name (as the kernel keeps it: the first 15 bytes), digits dropped to group pools."""
    names: Counter[str] = Counter()
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/comm") as comm:
                names["".join(c for c in comm.read().strip() if not c.isdigit())] += 1
        except OSError:  # ended meanwhile
            continue
    return names
