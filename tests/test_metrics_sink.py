"""The driver's Kinesis gauges in Spark's metrics system, as its sinks publish them, against kinesis-local.

A named query runs in its own Spark JVM (tests/jobs/metrics_sink_job.py) with the Prometheus servlet
configured, the way an operator turns them on. Its scrapes of ``/metrics/prometheus`` show the lag and the counts of
every shard while the query runs, follow a split (the children appear, the finished parent goes), and hold none of
the query's gauges once it stopped.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from harness.kinesis import create_stream, put_plain

pytestmark = pytest.mark.emulator

ROOT = Path(__file__).resolve().parents[1]
GAUGES = ("millisBehindLatest", "recordsRead", "bytesRead", "throttledCalls")


def _prometheus(name: str) -> str:
    """A name as Spark's Prometheus servlet writes it: every character but letters and digits becomes ``_``."""
    return re.sub(r"[^A-Za-z0-9]", "_", name)


def _gauges(text: str, prefix: str) -> dict[str, int]:
    """The gauges under ``prefix`` in a scrape, by the rest of their name (``shardId_000000000000_recordsRead``)."""
    found = re.findall(rf'^{re.escape(prefix)}(\w+)_Value\{{type="gauges"\}} (\S+)$', text, re.MULTILINE)
    return {name: int(value) for name, value in found}


def test_prometheus_servlet_shows_every_shards_lag_follows_a_split_and_drops_the_gauges_on_stop(
    kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Path
) -> None:
    create_stream(kinesis, stream_name, 2)
    put_plain(kinesis, stream_name, [(f"k{i}", f"before-{i:02d}") for i in range(40)])
    job = ROOT / "tests" / "jobs" / "metrics_sink_job.py"
    done = subprocess.run(
        [sys.executable, str(job), kinesis_local, stream_name, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    results = [json.loads(line[7:]) for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert len(results) == 1, done.stdout[-3000:] + done.stderr[-5000:]
    result = results[0]
    print(f"metrics sink job: {result}")
    assert result["rows"] == 80
    parent, other = result["shards"]
    children = result["children"]

    # Spark names a driver source's metrics <app id>.driver.<source>; ours is kinesis.<query>.<stream>.
    prefix = f"metrics_{_prometheus(result['app'])}_driver_kinesis_lag_check_v1_{_prometheus(stream_name)}_"
    running = _gauges((tmp_path / "running.txt").read_text(), prefix)
    expected = {f"{_prometheus(s)}_{g}" for s in (parent, other) for g in GAUGES} | set(GAUGES)
    assert set(running) == expected, running
    assert running["recordsRead"] == 40 == sum(running[f"{_prometheus(s)}_recordsRead"] for s in (parent, other))
    assert running["bytesRead"] == 40 * len("before-00")
    assert running["throttledCalls"] == 0
    for shard in (parent, other):
        assert running[f"{_prometheus(shard)}_recordsRead"] > 0, "the keys spread over both shards"
        assert running[f"{_prometheus(shard)}_millisBehindLatest"] >= 0
    assert running["millisBehindLatest"] == max(
        running[f"{_prometheus(s)}_millisBehindLatest"] for s in (parent, other)
    )

    # After the split: the parent, read to its end, has no gauges; its children have; the stream's counts go on.
    resharded = _gauges((tmp_path / "resharded.txt").read_text(), prefix)
    live = (*children, other)
    assert set(resharded) == {f"{_prometheus(s)}_{g}" for s in live for g in GAUGES} | set(GAUGES), resharded
    assert resharded["recordsRead"] == 80
    assert resharded["bytesRead"] == 40 * len("before-00") + 40 * len("after-00")

    # Stopped: none of the query's gauges is left; Spark's own driver metrics still are (the scrape is real).
    stopped = (tmp_path / "stopped.txt").read_text()
    assert "_kinesis_lag_check_v1_" not in stopped
    assert re.search(r"^metrics_\w+_driver_DAGScheduler_", stopped, re.MULTILINE), stopped[:2000]
