"""The one benchmark table: each scenario script appends rows to a JSON-lines file, report.py prints them.

A row names the scenario, what was measured, the value, and the baseline it is compared with in the same
run (its name and value, and the ratio value / baseline where a ratio means something). Conditions lines
(``{"conditions": {...}}``) record what the run ran on: the machine's (``python benchmarks/results.py conditions
FILE``, which benchmarks/run.sh calls first) and each scenario's own (record counts, sizes, emulator).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def add_row(
    path: str | None,
    scenario: str,
    measure: str,
    value: str,
    *,
    baseline: str = "",
    baseline_value: str = "",
    ratio: float | None = None,
    notes: str = "",
) -> None:
    """Append one row of the table to ``path`` (nothing when ``path`` is None: the script runs alone)."""
    if path is None:
        return
    row = {
        "scenario": scenario,
        "measure": measure,
        "value": value,
        "baseline": baseline,
        "baselineValue": baseline_value,
        "ratio": ratio,
        "notes": notes,
    }
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(row) + "\n")


def add_conditions(path: str | None, conditions: dict[str, str]) -> None:
    """Append conditions of the run (name: value) to ``path`` (nothing when ``path`` is None)."""
    if path is None:
        return
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps({"conditions": conditions}) + "\n")


def _output(*command: str) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return (done.stdout + done.stderr).strip()


def emulator_version(kind: str) -> str:
    """The installed version of an emulator of scripts/setup.sh (``ministack``), or ``unknown``."""
    python = ROOT / ".tools" / f"{kind}-venv" / "bin" / "python"
    return _output(str(python), "-c", f"import importlib.metadata as m; print(m.version({kind!r}))")


def machine_conditions() -> dict[str, str]:
    """Where and when the run ran: date, commit, CPU, cores, memory, load, Java and Python."""
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = next((line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")), "")
    meminfo = Path("/proc/meminfo").read_text() if Path("/proc/meminfo").exists() else ""
    mem_kb = next((int(line.split()[1]) for line in meminfo.splitlines() if line.startswith("MemTotal")), 0)
    commit = _output("git", "rev-parse", "--short", "HEAD")
    if _output("git", "status", "--porcelain", "--untracked-files=no"):
        commit += " (with uncommitted changes)"
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit,
        "machine": f"{model or platform.machine()}, {os.cpu_count()} cores, {mem_kb / 1024 / 1024:.0f} GiB, "
        f"{platform.system()} {platform.release()}",
        "load average at start": " ".join(f"{x:.1f}" for x in os.getloadavg()),
        "Java": _output("java", "-version").splitlines()[0],
        "Python": platform.python_version(),
    }


def process_cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # After the command name: state is field 3, so utime (14) and stime (15) are at 11 and 12 here.
    ticks = int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def ended_children_cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds of a process's children that ended and that it waited for (cutime and cstime,
    fields 16 and 17 of /proc/<pid>/stat): where the kernel puts a child's time once it is reaped."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def jvm_pid(spark: Any) -> int:
    """The pid of the SparkSession's JVM (driver and, in local mode, the executors)."""
    return int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "conditions":
        sys.exit("usage: python benchmarks/results.py conditions RESULTS.jsonl")
    add_conditions(sys.argv[2], machine_conditions())


@contextmanager
def java_endpoint(program: str, *args: str, jvm_options: tuple[str, ...] = ()) -> Iterator[str]:
    """One of this folder's loopback endpoints (``program``, run with the JDK's source launcher, which prints "port N"
    once it listens and serves until its standard input closes), for as long as the block runs: its URL."""
    process = subprocess.Popen(
        ["java", *jvm_options, str(Path(__file__).parent / program), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().split()
        if len(line) != 2 or line[0] != "port":
            raise RuntimeError(f"{program} did not start: {line}")
        yield f"http://127.0.0.1:{line[1]}"
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
