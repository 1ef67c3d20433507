"""Faults on a real Spark standalone cluster (a master and two workers on loopback).

The query runs with spark-submit against the cluster and the kinesis-local emulator
(tests/jobs/cluster_job.py). We kill an executor JVM in the middle of a batch, and separately the
driver with SIGKILL followed by a restart from the checkpoint. Either way the output must hold
every record exactly once, and a batch that ran twice must have seen the same records both times.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import spark_kinesis
from conftest import TEST_ENV
from harness.cluster import SPARK_HOME, spark_env, standalone_cluster
from harness.kinesis import create_stream, put_plain

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "tests" / "jobs" / "cluster_job.py"
RECORDS = 2400

pytestmark = pytest.mark.emulator


def _submit(master: str, endpoint: str, stream: str, work: Path) -> subprocess.Popen[str]:
    command = [
        str(SPARK_HOME / "bin" / "spark-submit"),
        "--master", master,
        "--jars", spark_kinesis.jar_path(),
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.sql.shuffle.partitions=2",
        "--conf", "spark.executor.memory=512m",
        "--conf", "spark.task.maxFailures=8",
        "--conf", "spark.driver.host=127.0.0.1",
        str(JOB),
        "--endpoint", endpoint, "--stream", stream,
        "--checkpoint", str(work / "checkpoint"), "--out", str(work / "out"),
        "--expect", str(RECORDS),
    ]  # fmt: skip
    env = {**spark_env(), **TEST_ENV, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    log = open(work / f"driver-{time.time_ns()}.log", "w")  # noqa: SIM115 - the test reads it back
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)


def _wait_for_started_batch(out: Path, min_batch: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        started = [int(p.name.split("-")[0]) for p in (out / "started").glob("*")] if (out / "started").exists() else []
        if any(b >= min_batch for b in started):
            return
        time.sleep(0.2)
    raise AssertionError(f"no batch >= {min_batch} started within {timeout}s")


def _finish(process: subprocess.Popen[str], work: Path, timeout: float = 300) -> None:
    try:
        code = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise
    logs = "\n".join(p.read_text()[-4000:] for p in sorted(work.glob("driver-*.log")))
    assert code == 0, f"the job failed (exit {code}):\n{logs}"


def _check_output(out: Path, expected: list[str]) -> None:
    seen = Counter(row for p in (out / "batches").glob("*.json") for row in json.loads(p.read_text()))
    duplicates = {row: n for row, n in seen.items() if n > 1}
    assert not duplicates, f"records written more than once: {list(duplicates)[:5]}"
    missing = set(expected) - set(seen)
    assert not missing, f"{len(missing)} records missing, such as {sorted(missing)[:5]}"
    assert set(seen) == set(expected)
    attempts: dict[str, list[list[str]]] = {}
    for p in (out / "attempts").glob("*.json"):
        attempts.setdefault(p.name.split("-")[0], []).append(json.loads(p.read_text()))
    for batch, seen_by in attempts.items():
        assert all(a == seen_by[0] for a in seen_by), f"batch {batch} saw different records when replayed"


def _stream_with_records(kinesis_local, kinesis_client_factory, stream_name, stream_cleanup) -> list[str]:
    client = kinesis_client_factory(kinesis_local)
    stream_cleanup(client, create_stream(client, stream_name, shards=4))
    records = [f"r-{i:05d}" for i in range(RECORDS)]
    put_plain(client, stream_name, records)
    return records


def test_executor_killed_mid_batch(kinesis_local, kinesis_client_factory, stream_name, stream_cleanup, tmp_path):
    records = _stream_with_records(kinesis_local, kinesis_client_factory, stream_name, stream_cleanup)
    with standalone_cluster(tmp_path / "cluster", workers=2, cores=1, memory="1g", env=TEST_ENV) as cluster:
        job = _submit(cluster.master_url, kinesis_local, stream_name, tmp_path)
        _wait_for_started_batch(tmp_path / "out", 1)
        time.sleep(1.5)  # inside the batch: its tasks read 150 records per shard at 25 per 400 ms
        killed = cluster.kill_one_executor()
        print(f"killed executor pid {killed}")
        _finish(job, tmp_path)
    _check_output(tmp_path / "out", records)


def test_driver_killed_and_restarted_from_checkpoint(
    kinesis_local, kinesis_client_factory, stream_name, stream_cleanup, tmp_path
):
    records = _stream_with_records(kinesis_local, kinesis_client_factory, stream_name, stream_cleanup)
    out = tmp_path / "out"
    with standalone_cluster(tmp_path / "cluster", workers=2, cores=1, memory="1g", env=TEST_ENV) as cluster:
        first = _submit(cluster.master_url, kinesis_local, stream_name, tmp_path)
        _wait_for_started_batch(out, 1)
        time.sleep(1.5)
        os.killpg(first.pid, signal.SIGKILL)  # the driver (spark-submit JVM and its Python)
        first.wait(30)
        written = sum(len(json.loads(p.read_text())) for p in (out / "batches").glob("*.json"))
        assert written < RECORDS, "the first run wrote everything before it was killed; the test proves nothing"
        cluster.wait_for_workers(2, 60)
        second = _submit(cluster.master_url, kinesis_local, stream_name, tmp_path)
        _finish(second, tmp_path)
    _check_output(out, records)
