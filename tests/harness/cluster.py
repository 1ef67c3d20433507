"""A Spark standalone cluster on loopback: one master and N workers, from the installed pyspark.

Each daemon is a child process started with pyspark's ``bin/spark-class`` (its own process group,
so stopping it also stops the executors it launched). Used by the cluster fault tests::

    with standalone_cluster(workers=2, cores=1, memory="1g") as cluster:
        subprocess.run([spark_submit, "--master", cluster.master_url, ...])
        cluster.executor_pids()  # the CoarseGrainedExecutorBackend JVMs of this cluster
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

from harness.emulators import free_port, stop_process_group

SPARK_HOME = Path(pyspark.__file__).resolve().parent


def spark_env() -> dict[str, str]:
    """Environment for Spark daemons and spark-submit: loopback only, this pyspark as SPARK_HOME."""
    env = dict(os.environ)
    env.update(
        {
            "SPARK_HOME": str(SPARK_HOME),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_MASTER_HOST": "127.0.0.1",
            "SPARK_NO_DAEMONIZE": "1",
        }
    )
    return env


@dataclass
class StandaloneCluster:
    workdir: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    master_url: str = ""
    master_ui: str = ""
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def _spawn(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        log = open(self.workdir / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        process = subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-class"), *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**spark_env(), **self.extra_env},
            start_new_session=True,
        )
        self.processes.append(process)
        return process

    def start(self, workers: int, cores: int, memory: str, timeout: float = 60.0) -> None:
        port, ui = free_port(), free_port()
        self.master_url = f"spark://127.0.0.1:{port}"
        self.master_ui = f"http://127.0.0.1:{ui}"
        self._spawn(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui),
        )  # fmt: skip
        for index in range(workers):
            work = self.workdir / f"worker-{index}"
            work.mkdir(parents=True, exist_ok=True)
            self._spawn(
                f"worker-{index}",
                "org.apache.spark.deploy.worker.Worker",
                self.master_url,
                "--host", "127.0.0.1", "--port", str(free_port()), "--webui-port", str(free_port()),
                "--cores", str(cores), "--memory", memory, "--work-dir", str(work),
            )  # fmt: skip
        self.wait_for_workers(workers, timeout)

    def alive_workers(self) -> int:
        try:
            with urllib.request.urlopen(f"{self.master_ui}/json/", timeout=2) as response:
                import json

                state = json.loads(response.read())
        except OSError:
            return 0
        return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")

    def wait_for_workers(self, count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for process in self.processes:
                if process.poll() is not None:
                    raise RuntimeError(f"a Spark daemon exited early; see the logs in {self.workdir}")
            if self.alive_workers() >= count:
                return
            time.sleep(0.5)
        raise RuntimeError(f"{count} workers did not register within {timeout}s; logs in {self.workdir}")

    def executor_pids(self) -> list[int]:
        """PIDs of executor JVMs launched by this cluster's workers (found by their work directories)."""
        pids = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
                cwd = os.readlink(proc / "cwd")
            except OSError:
                continue
            # A worker starts each executor in <work-dir>/<app-id>/<executor-id>.
            if "CoarseGrainedExecutorBackend" in cmdline and cwd.startswith(str(self.workdir)):
                pids.append(int(proc.name))
        return pids

    def executor_pid(self, app_id: str, executor_id: str) -> int | None:
        """PID of the executor JVM ``executor_id`` of application ``app_id``, if it runs on this cluster."""
        for pid in self.executor_pids():
            try:
                cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
            except OSError:
                continue
            if cwd.name == executor_id and cwd.parent.name == app_id:
                return pid
        return None

    def kill_one_executor(self) -> int:
        pids = self.executor_pids()
        if not pids:
            raise RuntimeError("no executor JVM of this cluster is running")
        os.kill(pids[0], signal.SIGKILL)
        return pids[0]

    def stop(self) -> None:
        for process in reversed(self.processes):
            stop_process_group(process.pid, process=process)
        self.processes.clear()


@contextlib.contextmanager
def standalone_cluster(
    workdir: Path, workers: int = 2, cores: int = 1, memory: str = "1g", env: dict[str, str] | None = None
) -> Iterator[StandaloneCluster]:
    """Start a cluster; ``env`` is added to the daemons' environment, which executors inherit
    (as they would inherit an instance role's credentials on real machines)."""
    workdir.mkdir(parents=True, exist_ok=True)
    cluster = StandaloneCluster(workdir, dict(env or {}))
    try:
        cluster.start(workers, cores, memory)
        yield cluster
    finally:
        cluster.stop()
