"""Where a test run's time goes: each test's wall time and the CPU its pytest process and all of that process's
descendants used meanwhile (the session's Spark JVM, emulators, spark-submit jobs, KPL daemons), by kind of process.

Opt-in, for profiling the suite (docs/testing.md):

    SPARK_KINESIS_TEST_CPU=target/test-cpu.tsv .venv/bin/pytest -p harness.cpu_profile -n 2 --dist loadfile
    python3 tests/harness/cpu_profile.py target/test-cpu.tsv      # the 25 tests that took the most CPU

Each worker appends one line per test phase (setup, call, teardown) to the file. CPU a test's background work
spends after the test ended (a query still stopping) is counted in the next test of that worker. Processes that
leave the tree (daemons that re-parent to init, such as the standalone cluster's) are not counted.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

_TICK = os.sysconf("SC_CLK_TCK")
KINDS = ("java", "node", "python", "kpl", "other", "reaped")
"""Kinds of process; ``reaped`` is the CPU of descendants that ended during the test (short spark-submit jobs)."""


def _kind(name: str) -> str:
    if name.startswith("kinesis_produc"):
        return "kpl"
    for kind in ("java", "node", "python"):
        if name.startswith(kind):
            return kind
    return "other"


def tree(root: int) -> dict[int, tuple[str, float, float]]:
    """``root`` and its live descendants: pid to (kind, own CPU seconds, CPU seconds of its reaped children)."""
    parents: dict[int, int] = {}
    stats: dict[int, tuple[str, float, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        pid = int(entry.name)
        parents[pid] = int(fields[1])
        # utime + stime, cutime + cstime (fields 14 to 17 of proc(5))
        own = (int(fields[11]) + int(fields[12])) / _TICK
        reaped = (int(fields[13]) + int(fields[14])) / _TICK
        stats[pid] = (_kind(name), own, reaped)
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    found: dict[int, tuple[str, float, float]] = {}
    pending = [root]
    while pending:
        pid = pending.pop()
        if pid in stats:
            found[pid] = stats[pid]
        pending.extend(children.get(pid, []))
    return found


def spent(before: dict[int, tuple[str, float, float]], now: dict[int, tuple[str, float, float]]) -> Counter[str]:
    """CPU seconds by kind between two ``tree`` snapshots.

    A live process counts its own CPU since ``before``; a parent's growth in reaped CPU counts as ``reaped``, less
    what the ended children had already been counted with in ``before``.
    """
    used: Counter[str] = Counter()
    for pid, (kind, own, reaped) in now.items():
        _, own_before, reaped_before = before.get(pid, (kind, 0.0, 0.0))
        used[kind] += own - own_before
        used["reaped"] += reaped - reaped_before
    for pid, (_, own, reaped) in before.items():
        if pid not in now:
            used["reaped"] -= own + reaped
    return used


def pytest_runtest_logreport(report: Any) -> None:
    path = os.environ.get("SPARK_KINESIS_TEST_CPU")
    # Under xdist the controller sees every worker's reports too (with ``node`` set): only workers record.
    if not path or getattr(report, "node", None) is not None:
        return
    global _last
    now = tree(os.getpid())
    used = spent(_last, now)
    _last = now
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    line = "\t".join(
        [worker, report.nodeid, report.when, f"{report.duration:.2f}", f"{sum(used.values()):.2f}"]
        + [f"{used[kind]:.2f}" for kind in KINDS]
    )
    with open(path, "a", encoding="utf-8") as out:
        out.write(line + "\n")


_last = tree(os.getpid())


def summary(path: str, top: int = 25) -> str:
    """The ``top`` tests by CPU (phases summed) and the totals by kind of process."""
    per_test: dict[str, list[float]] = {}
    totals = Counter[str]()
    wall = 0.0
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        _worker, nodeid, _when, duration, cpu, *kinds = line.split("\t")
        row = per_test.setdefault(nodeid, [0.0, 0.0] + [0.0] * len(KINDS))
        row[0] += float(duration)
        row[1] += float(cpu)
        for index, value in enumerate(kinds):
            row[2 + index] += float(value)
            totals[KINDS[index]] += float(value)
        wall += float(duration)
    lines = [
        f"{len(per_test)} tests, {wall / 60:.1f} min of test time, CPU by kind (min): "
        + ", ".join(f"{kind} {totals[kind] / 60:.1f}" for kind in KINDS)
    ]
    lines.append("wall s\tCPU s\t" + "\t".join(KINDS) + "\ttest")
    for nodeid, row in sorted(per_test.items(), key=lambda item: -item[1][1])[:top]:
        lines.append("\t".join(f"{value:.0f}" for value in row) + "\t" + nodeid)
    return "\n".join(lines)


if __name__ == "__main__":
    print(summary(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 25))
