"""A Spark Connect server on loopback, started with pyspark's own launcher and the connector's jars.

The server is what a user starts (see docs/guide/platforms.md, "Spark Connect")::

    spark-submit --class org.apache.spark.sql.connect.service.SparkConnectServer --jars "<our two jars>"

with, for the tests, every port chosen free on 127.0.0.1 (the gRPC port and the UI), the event log written
uncompressed into the work directory (so a test can read it), and the server's output in a log file there. Used by
tests/test_connect.py::

    with connect_server(workdir) as server:
        spark = SparkSession.builder.remote(server.url).getOrCreate()
        ...
        server.ui_html("/connect/")  # a page of the UI
    server.event_log_text()  # complete once the server has stopped

The server JVM inherits this process's environment (the tests' dummy AWS credentials among it).
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from harness.cluster import SPARK_HOME, spark_env
from harness.emulators import free_port, log_tail, stop_process_group

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


class ConnectServerError(RuntimeError):
    """The Connect server did not start, or stopped on its own."""


@dataclass
class ConnectServer:
    """A running Connect server: its ports, files and process."""

    workdir: Path
    port: int
    ui_port: int
    process: subprocess.Popen[bytes]
    start_seconds: float = 0.0
    """Seconds from launching spark-submit until the server answered on its gRPC port and its UI."""
    _stopped: bool = field(default=False, repr=False)

    @property
    def url(self) -> str:
        """The client's connection string, for ``SparkSession.builder.remote(...)``."""
        return f"sc://127.0.0.1:{self.port}"

    @property
    def ui_url(self) -> str:
        return f"http://127.0.0.1:{self.ui_port}"

    @property
    def log_path(self) -> Path:
        """The server's stdout and stderr (Spark logs to stderr at INFO by default)."""
        return self.workdir / "server.log"

    @property
    def event_log_dir(self) -> Path:
        return self.workdir / "events"

    def ui_html(self, path: str, *, timeout: float = 10.0) -> str:
        """Fetch a page of the server's UI (``path`` such as ``/connect/``), following redirects."""
        with urllib.request.urlopen(self.ui_url + path, timeout=timeout) as response:
            return str(response.read().decode("utf-8", errors="replace"))

    def event_log_text(self) -> str:
        """Every event log file of the server, concatenated (complete only after :meth:`stop`)."""
        files = sorted(p for p in self.event_log_dir.rglob("*") if p.is_file())
        return "".join(p.read_text(encoding="utf-8", errors="replace") for p in files)

    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the server (SIGTERM to its process group: Spark stops the context, closing the event log)."""
        if not self._stopped:
            self._stopped = True
            stop_process_group(self.process.pid, timeout=timeout, process=self.process)


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _ui_answers(ui_port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/connect/", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def start(
    workdir: Path,
    jars: list[str],
    *,
    conf: Mapping[str, str] | None = None,
    master: str = "local[2]",
    timeout: float = 120.0,
) -> ConnectServer:
    """Start a Connect server with ``jars`` (``--jars``) and wait until its gRPC port and UI answer.

    Parameters
    ----------
    workdir : Path
        Where the server's log (``server.log``), event log (``events/``) and scratch files go.
    jars : list of str
        Jars for ``--jars``; the connector's are ``spark_kinesis.jar_paths()``. May be empty.
    conf : Mapping[str, str], optional
        More ``--conf`` settings; they win over the defaults here.
    master : str
        The server's master (``local[2]``: two task slots).
    timeout : float
        Seconds to wait for the server to answer.

    Raises
    ------
    ConnectServerError
        If the server exits or does not answer in time, with the end of its log.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    events = workdir / "events"
    events.mkdir(exist_ok=True)
    port, ui_port = free_port(), free_port()
    while ui_port == port:
        ui_port = free_port()
    settings = {
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.ui.enabled": "true",
        "spark.ui.port": str(ui_port),
        "spark.port.maxRetries": "0",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": events.as_uri(),
        # Plain text, so that a test reads what is in it (Spark 4 compresses event logs by default).
        "spark.eventLog.compress": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.sql.warehouse.dir": (workdir / "warehouse").as_uri(),
        "spark.speculation": "false",
    }
    settings.update(conf or {})
    command = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", master, "--class", SERVER_CLASS]
    if jars:
        command += ["--jars", ",".join(jars)]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    command.append("spark-internal")
    log_path = workdir / "server.log"
    started = time.monotonic()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=spark_env(), cwd=workdir, start_new_session=True
        )
    server = ConnectServer(workdir, port, ui_port, process)
    deadline = started + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ConnectServerError(
                f"the Connect server exited with {process.returncode} before answering; its log ends:\n"
                + log_tail(log_path)
            )
        if _port_open(port) and _ui_answers(ui_port):
            server.start_seconds = time.monotonic() - started
            return server
        time.sleep(0.25)
    server.stop()
    raise ConnectServerError(
        f"the Connect server did not answer on port {port} within {timeout:.0f} s; its log ends:\n" + log_tail(log_path)
    )


@contextlib.contextmanager
def connect_server(workdir: Path, jars: list[str], **kwargs: object) -> Iterator[ConnectServer]:
    """Context manager: :func:`start` a server, yield it, stop it."""
    server = start(workdir, jars, **kwargs)  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.stop()
