"""Faults on a real Spark standalone cluster (a master and two workers on loopback).

The query runs with spark-submit against the cluster and the kinesis-local emulator
(tests/jobs/cluster_job.py). We kill the driver with SIGKILL while a batch is read but not committed, restart it
from the checkpoint, and kill an executor JVM in the middle of the replayed batch: one test and two applications,
where a test per fault started a third application (its driver and executors) for the executor's death alone. The
test checks that each fault hit what it meant to hit (a batch read but not committed; a running task) before it
checks the output: every record exactly once, and a batch that ran twice must have seen the same records both
times.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import spark_kinesis
from conftest import TEST_ENV
from harness.cluster import SPARK_HOME, StandaloneCluster, spark_env, standalone_cluster
from harness.emulators import free_port
from harness.jvm import spark_jvm_options
from harness.kinesis import create_stream, put_plain

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "tests" / "jobs" / "cluster_job.py"
RECORDS = 2400

pytestmark = pytest.mark.emulator


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """One cluster for the module: each test's application gets executors of its own, and a worker whose executor
    was killed goes on serving the next."""
    with standalone_cluster(
        tmp_path_factory.mktemp("cluster"), workers=2, cores=1, memory="1g", env=TEST_ENV
    ) as started:
        yield started


def _submit(
    master: str,
    endpoint: str,
    stream: str,
    work: Path,
    *,
    run: str,
    ui_port: int | None = None,
    pause_after_rows: float = 0.0,
    hold_tasks: Path | None = None,
) -> subprocess.Popen[str]:
    """spark-submit the job, with the driver's UI (and its REST API, which the job and the test read) on
    ``ui_port`` (a free port when not given)."""
    command = [
        str(SPARK_HOME / "bin" / "spark-submit"),
        "--master", master,
        "--jars", ",".join(spark_kinesis.jar_paths()),
        "--conf", "spark.ui.enabled=true",
        "--conf", f"spark.ui.port={ui_port or free_port()}",
        "--conf", "spark.sql.shuffle.partitions=2",
        "--conf", "spark.executor.memory=512m",
        "--conf", f"spark.executor.extraJavaOptions={spark_jvm_options()}",
        "--conf", "spark.task.maxFailures=8",
        "--conf", "spark.driver.host=127.0.0.1",
        str(JOB),
        "--endpoint", endpoint, "--stream", stream,
        "--checkpoint", str(work / "checkpoint"), "--out", str(work / "out"),
        "--expect", str(RECORDS), "--run", run, "--pause-after-rows", str(pause_after_rows), "--timeout", "480",
        "--hold-tasks", str(hold_tasks or ""),
    ]  # fmt: skip
    env = {**spark_env(), **TEST_ENV, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    log = open(work / f"driver-{run}.log", "w")  # noqa: SIM115 - the test reads it back
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)


def _held_task_worker(hold: Path, timeout: float = 300) -> int:
    """The pid of the Python worker of a task that the job holds (tests/jobs/cluster_job.py --hold-tasks)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        held = sorted(hold.glob("held-*")) if hold.exists() else []
        if held:
            return int(held[0].name.split("-")[1])
        time.sleep(0.1)
    raise AssertionError(f"no task was held within {timeout}s")


def _parent(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("PPid:"):
            return int(line.split()[1])
    raise AssertionError(f"process {pid} has no parent in /proc")


def _attempts(out: Path, batch: int, run: str) -> list[list[str]]:
    return [json.loads(p.read_text()) for p in sorted((out / "attempts").glob(f"{batch}-{run}-*.json"))]


def _wait_for_recorded_attempt(out: Path, run: str, min_batch: int, timeout: float = 300) -> int:
    """The first batch >= ``min_batch`` whose attempt in ``run`` has recorded its rows."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for path in (out / "attempts").glob(f"*-{run}-*.json") if (out / "attempts").exists() else []:
            batch = int(path.name.split("-")[0])
            if batch >= min_batch:
                return batch
        time.sleep(0.05)
    raise AssertionError(f"no batch >= {min_batch} recorded its rows within {timeout}s")


def _finish(process: subprocess.Popen[str], work: Path, timeout: float = 600) -> None:
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


def _kill_executor_of_held_task(cluster: StandaloneCluster, hold: Path) -> str:
    """SIGKILL the executor JVM that runs a task the job holds (--hold-tasks), then let every held task go on;
    returns the executor's id."""
    pid = _held_task_worker(hold)
    executors = set(cluster.executor_pids())
    while pid not in executors:
        pid = _parent(pid)  # the Python worker's daemon, then the executor JVM that started it
        assert pid > 1, "the held task's Python worker is not under an executor of this cluster"
    executor_id = Path(os.readlink(f"/proc/{pid}/cwd")).name  # a worker runs it in <work>/<app>/<executor id>
    os.kill(pid, signal.SIGKILL)
    (hold / "release").touch()
    print(f"killed executor {executor_id} (pid {pid}) while it ran a task")
    return executor_id


def test_driver_killed_then_an_executor_killed_in_the_replay(
    cluster, kinesis_local, kinesis_client_factory, stream_name, stream_cleanup, tmp_path
):
    """Two faults, one in each run of the job:

    1. The driver dies by SIGKILL after a batch has read its records and before it is committed (the job pauses
       there in the first run).
    2. The restarted driver must run that batch again. One of the replay's tasks, held by the job once it has read
       its records, loses its executor JVM to SIGKILL: the driver must see the executor lost and the task failed,
       and run the task again elsewhere.

    The replay must read exactly the records the first attempt read, and every record is written once."""
    records = _stream_with_records(kinesis_local, kinesis_client_factory, stream_name, stream_cleanup)
    out = tmp_path / "out"
    first = _submit(cluster.master_url, kinesis_local, stream_name, tmp_path, run="first", pause_after_rows=30)
    in_flight = _wait_for_recorded_attempt(out, "first", 1)
    os.killpg(first.pid, signal.SIGKILL)  # the driver (spark-submit JVM and its Python)
    first.wait(30)
    assert not (out / "batches" / f"{in_flight}.json").exists(), "the batch was committed before the kill"
    (first_rows,) = _attempts(out, in_flight, "first")
    assert first_rows, f"batch {in_flight} read nothing; the replay comparison would prove nothing"
    written = sum(len(json.loads(p.read_text())) for p in (out / "batches").glob("*.json"))
    assert written < RECORDS, "the first run wrote everything before it was killed; the test proves nothing"

    cluster.wait_for_workers(2, 60)
    hold = tmp_path / "hold"
    second = _submit(cluster.master_url, kinesis_local, stream_name, tmp_path, run="second", hold_tasks=hold)
    # The replayed batch (its id is at least 1, from which the job holds tasks) has a task that has read its records
    # and waits: its executor is killed while the task surely runs.
    executor_id = _kill_executor_of_held_task(cluster, hold)
    _finish(second, tmp_path)
    summary = json.loads((out / "summary-second.json").read_text())
    print("restarted driver's view:", summary)
    assert executor_id in summary["removedExecutors"], f"the driver did not see executor {executor_id} go: {summary}"
    assert summary["failedTasks"] >= 1, f"no task failed: the kill did not land inside a task ({summary})"

    replays = _attempts(out, in_flight, "second")
    assert replays, f"batch {in_flight}, in flight when the driver died, was not run again after the restart"
    for replay in replays:
        assert replay == first_rows, f"the replay of batch {in_flight} read different records than the first attempt"
    _check_output(out, records)
