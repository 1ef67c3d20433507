"""What a local process (the Spark JVM) holds, read from /proc: threads, file descriptors, TCP connections, and
the KPL's native ``kinesis_producer`` child processes.

    pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
    usage(pid)   # Usage(threads=..., fds=..., tcp=..., producers=...)
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

LEAN_JIT = "-XX:TieredStopAtLevel=1 -XX:+UseParallelGC"
"""Options of the JVMs the tests start (tests/conftest.py puts them in SPARK_SUBMIT_OPTS and SPARK_DAEMON_JAVA_OPTS).

A test's JVM lives for seconds to minutes and runs little data, so the optimising JIT tier costs it more than it
saves: its compiler threads took half the CPU of the suite's Spark JVMs on a 2-core machine, where the first tier
alone compiles in a fraction of that. The behaviour under test is the same; the benchmarks keep the JVM's defaults.
"""


def _dev_cache() -> Path:
    """The shared cache of scripts/setup.sh: ``SPARK_KINESIS_DEV_CACHE``, else spark-kinesis-dev in ~/.cache."""
    if os.environ.get("SPARK_KINESIS_DEV_CACHE"):
        return Path(os.environ["SPARK_KINESIS_DEV_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "spark-kinesis-dev"


ARCHIVE_DIR = _dev_cache() / "class-archives"
"""Beside the shared venvs of scripts/setup.sh, whose pyspark stays at one path from clone to clone: an archive that
one run makes serves the next ones."""

# Unified logging writes to stdout: a JVM that cannot make or use the archive must not say so into a job's output.
_QUIET_ARCHIVE = "-Xlog:cds=off -Xlog:cds+dynamic=off"

# What the tests' JVMs load: a session, SQL with a shuffle, rows from Python, and a streaming query that reads what
# a folder holds and stops by itself (Trigger.AvailableNow), so that the job ends however slow the machine is.
_WARM_UP_JOB = """
import sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "true").getOrCreate()
spark.range(1000).selectExpr("id % 7 AS k", "id").groupBy("k").sum("id").collect()
spark.createDataFrame([(1, "a")], "n INT, s STRING").write.mode("overwrite").json(sys.argv[1] + "/in")
query = (
    spark.readStream.schema("n INT, s STRING").json(sys.argv[1] + "/in")
    .writeStream.format("memory").queryName("warm_up").trigger(availableNow=True)
    .option("checkpointLocation", sys.argv[1] + "/checkpoint").start()
)
query.awaitTermination()
spark.stop()
"""


def class_data_archive(spark_home: Path) -> Path | None:
    """A class-data-sharing archive of the Spark classes that a JVM of ``spark_home`` loads, made on first use.

    Spark's JVMs load about 15,000 classes from ``jars/`` before they do any work; mapping them from an archive
    instead of parsing and verifying each took a small spark-submit job from 22 to 13 s of CPU on a 2-core machine.
    The archive is made once per pyspark installation, JDK and option set (the key of its name) by one warm-up job
    run with ``-XX:ArchiveClassesAtExit``, under a lock so that parallel pytest processes wait for the first.
    A JVM whose class path differs (another SPARK_CONF_DIR, say) ignores it; ``None`` when it cannot be made.
    """
    jars = spark_home / "jars"
    if not jars.is_dir():
        return None
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if "JAVA_HOME" in os.environ else shutil.which("java")
    if java is None:
        return None
    java = os.path.realpath(java)
    key = hashlib.sha256()
    for part in (java, str(os.stat(java).st_mtime_ns), LEAN_JIT, str(spark_home)):
        key.update(part.encode() + b"\0")
    for jar in sorted(jars.iterdir()):
        stat = jar.stat()
        key.update(f"{jar.name}:{stat.st_size}:{stat.st_mtime_ns}\0".encode())
    archive = ARCHIVE_DIR / f"spark-{key.hexdigest()[:16]}.jsa"
    if archive.is_file():
        return archive
    ARCHIVE_DIR.mkdir(parents=True, exist_ok=True)
    with open(ARCHIVE_DIR / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if archive.is_file():
            return archive
        partial = archive.with_suffix(f".{os.getpid()}.part")
        job = ARCHIVE_DIR / "warm_up.py"
        job.write_text(_WARM_UP_JOB)
        scratch = Path(tempfile.mkdtemp(prefix="class-archive-"))
        env = {**os.environ, "SPARK_HOME": str(spark_home), "SPARK_LOCAL_IP": "127.0.0.1"}
        env["SPARK_SUBMIT_OPTS"] = f"{LEAN_JIT} -XX:ArchiveClassesAtExit={partial} {_QUIET_ARCHIVE}"
        env.pop("SPARK_CONF_DIR", None)
        try:
            done = subprocess.run(
                [str(spark_home / "bin" / "spark-submit"), str(job), str(scratch)],
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if done.returncode != 0 or not partial.is_file():
            partial.unlink(missing_ok=True)
            print(f"[harness] no class-data archive for {spark_home} (exit {done.returncode}):\n{done.stderr[-3000:]}")
            return None
        os.replace(partial, archive)
    return archive


def spark_home() -> Path | None:
    """The Spark installation that pyspark launches: ``SPARK_HOME``, else the pyspark package's folder."""
    from spark_kinesis.lines import _spark_home

    return _spark_home()


@functools.cache
def spark_jvm_options() -> str:
    """LEAN_JIT, plus the class-data archive of this process's Spark (``spark_home()``).

    ``SPARK_KINESIS_TEST_CLASS_ARCHIVE=0`` leaves the archive out (to compare, or when its making, about 50 s of
    CPU once per pyspark, is not wanted).
    """
    home = spark_home() if os.environ.get("SPARK_KINESIS_TEST_CLASS_ARCHIVE", "1") != "0" else None
    archive = class_data_archive(home) if home else None
    if archive is None:
        return LEAN_JIT
    return f"{LEAN_JIT} -XX:SharedArchiveFile={archive} {_QUIET_ARCHIVE}"


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
