"""The one benchmark table: each scenario script appends rows to a JSON-lines file, report.py prints them.

A row names the scenario, what was measured, the value, and the baseline it is compared with in the same
run (its name and value, and the ratio value / baseline where a ratio means something).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


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


def process_cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # After the command name: state is field 3, so utime (14) and stime (15) are at 11 and 12 here.
    ticks = int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def jvm_pid(spark: Any) -> int:
    """The pid of the SparkSession's JVM (driver and, in local mode, the executors)."""
    return int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
