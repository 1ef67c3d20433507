"""Start, health-check and stop the local Kinesis emulators.

Three emulators are supported; scripts/setup.sh installs them under .tools/:

``kinesis-local``
    The npm package ``kinesis-local`` (kinesis-mock compiled to JavaScript). Run as ``node main.js``
    from inside its package directory, because it reads its TLS certificate (``server.json``) from
    the working directory. It always opens a TLS port and a plain HTTP port, and binds them on all
    interfaces (it has no bind-address setting); we only ever talk to the plain port on 127.0.0.1.

``ministack``
    The PyPI package ``ministack``: one port for many AWS services (Kinesis, DynamoDB, S3, ...).
    ``GATEWAY_PORT`` chooses the port and ``BIND_HOST=127.0.0.1`` keeps it on loopback.

``moto``
    moto's server (PyPI ``moto[server]``), for the Glue Schema Registry API that ministack lacks.

What each emulator gets right or wrong is measured by ``python -m harness.measure`` and written
down in docs/emulators.md; tests/test_emulators.py pins the behaviours that tests rely on.

Both are used three ways, all through this module:

* pytest: the session fixtures ``kinesis_local``, ``ministack`` and ``moto`` in tests/conftest.py;
* Python: ``with running("kinesis-local") as emu: ...``;
* shell: ``scripts/emulator.sh start kinesis-local`` prints the endpoint URL and records the pid
  under .run/ so that ``scripts/emulator.sh stop kinesis-local`` can stop it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RUN_DIR = ROOT / ".run"
TOOLS = ROOT / ".tools"
KINESIS_LOCAL_DIR = TOOLS / "node_modules" / "kinesis-local"
MINISTACK_BIN = TOOLS / "ministack-venv" / "bin" / "ministack"
MOTO_BIN = TOOLS / "moto-venv" / "bin" / "moto_server"

KINDS = ("kinesis-local", "ministack", "moto")
REGION = "us-east-1"
ACCESS_KEY = "test-access-key"
SECRET_KEY = "test-secret-key"

# How long kinesis-local takes to go from CREATING/UPDATING to ACTIVE. It defaults to 500 ms each;
# 100 ms keeps the state transitions (so waiting code is exercised) and makes tests faster.
_KINESIS_LOCAL_DURATIONS = (
    "CREATE_STREAM_DURATION",
    "DELETE_STREAM_DURATION",
    "MERGE_SHARDS_DURATION",
    "SPLIT_SHARD_DURATION",
    "UPDATE_SHARD_COUNT_DURATION",
    "UPDATE_STREAM_MODE_DURATION",
    "REGISTER_STREAM_CONSUMER_DURATION",
    "DEREGISTER_STREAM_CONSUMER_DURATION",
    "START_STREAM_ENCRYPTION_DURATION",
    "STOP_STREAM_ENCRYPTION_DURATION",
)


class EmulatorError(RuntimeError):
    """An emulator could not be started, did not answer, or could not be stopped."""


@dataclass
class Emulator:
    """A running emulator process."""

    kind: str
    endpoint: str
    port: int
    pid: int
    log_path: str
    extra_ports: list[int] = field(default_factory=list)
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)

    @property
    def tls_endpoint(self) -> str:
        """The HTTPS endpoint of kinesis-local (self-signed certificate), which the KPL needs."""
        if self.kind != "kinesis-local" or not self.extra_ports:
            raise EmulatorError(f"{self.kind} at {self.endpoint} has no TLS port")
        return f"https://127.0.0.1:{self.extra_ports[0]}"

    def stop(self, timeout: float = 10.0) -> None:
        """Terminate the emulator's process group; kill it if still alive after ``timeout``."""
        stop_process_group(self.pid, timeout=timeout, process=self._process)

    def log_tail(self, lines: int = 40) -> str:
        return log_tail(Path(self.log_path), lines)

    def state(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "endpoint": self.endpoint,
            "port": self.port,
            "pid": self.pid,
            "log_path": self.log_path,
            "extra_ports": list(self.extra_ports),
        }


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def log_tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        return f"(no log: {error})"
    tail = text.splitlines()[-lines:]
    return "\n".join(tail) if tail else "(log is empty)"


def kinesis_client(endpoint: str, *, timeout: float = 30.0, attempts: int = 3, service: str = "kinesis") -> Any:
    """A boto3 client (Kinesis by default) for ``endpoint`` with the dummy test credentials.

    An https:// endpoint here is an emulator's self-signed one: its certificate is not verified.
    """
    import boto3
    from botocore.config import Config

    return boto3.client(
        service,
        endpoint_url=endpoint,
        verify=not endpoint.startswith("https://"),
        region_name=REGION,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        config=Config(
            connect_timeout=min(timeout, 5.0),
            read_timeout=timeout,
            retries={"max_attempts": attempts, "mode": "standard"},
        ),
    )


def _command(kind: str, port: int, extra_ports: list[int], tls: bool = False) -> tuple[list[str], Path, dict[str, str]]:
    env = dict(os.environ)
    # Dummy credentials everywhere; never real ones.
    env.update(AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY, AWS_REGION=REGION)
    if kind == "kinesis-local":
        main_js = KINESIS_LOCAL_DIR / "main.js"
        if not main_js.is_file():
            raise EmulatorError(f"{main_js} is missing: run scripts/setup.sh")
        env.update(
            KINESIS_MOCK_PLAIN_PORT=str(port),
            KINESIS_MOCK_TLS_PORT=str(extra_ports[0]),
            KINESIS_MOCK_CERT_PATH=str(KINESIS_LOCAL_DIR / "server.json"),
            LOG_LEVEL="WARN",
            ROOT_LOG_LEVEL="ERROR",
            # The limit counts open shards over all streams of the account; tests make many streams.
            SHARD_LIMIT="1000",
            ON_DEMAND_STREAM_COUNT_LIMIT="100",
            SHOULD_PERSIST_DATA="false",
            LOAD_DATA_IF_EXISTS="false",
        )
        for name in _KINESIS_LOCAL_DURATIONS:
            env.setdefault(name, "100ms")
        return ["node", "main.js"], KINESIS_LOCAL_DIR, env
    if kind == "ministack":
        if not MINISTACK_BIN.is_file():
            raise EmulatorError(f"{MINISTACK_BIN} is missing: run scripts/setup.sh")
        tmp = RUN_DIR / f"ministack-{port}-tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        env.update(
            GATEWAY_PORT=str(port),
            BIND_HOST="127.0.0.1",
            LOG_LEVEL="WARNING",
            MINISTACK_REGION=REGION,
            # ministack writes its pid file and scratch files in the temp dir: keep them in .run/.
            TMPDIR=str(tmp),
        )
        if tls:
            # HTTPS only, with a self-signed certificate made under TMPDIR (needs the openssl command).
            env["USE_SSL"] = "1"
        return [str(MINISTACK_BIN)], RUN_DIR, env
    if kind == "moto":
        # moto's server: the Glue Schema Registry API (and a Kinesis API, which the health check calls).
        if not MOTO_BIN.is_file():
            raise EmulatorError(f"{MOTO_BIN} is missing: run scripts/setup.sh")
        return [str(MOTO_BIN), "-H", "127.0.0.1", "-p", str(port)], RUN_DIR, env
    raise EmulatorError(f"unknown emulator kind {kind!r}; expected one of {', '.join(KINDS)}")


def wait_until_healthy(
    endpoint: str,
    *,
    timeout: float = 60.0,
    process: subprocess.Popen[bytes] | None = None,
    log_path: Path | None = None,
    kind: str = "emulator",
    sts: bool = False,
) -> float:
    """Poll ListStreams (STS GetCallerIdentity with ``sts=True``) until the emulator answers; return the seconds.

    Raises :class:`EmulatorError` with the end of the log when the process exits or the time is up.
    """
    client = kinesis_client(endpoint, timeout=2.0, attempts=1, service="sts" if sts else "kinesis")
    start = time.monotonic()
    last_error: BaseException | None = None
    while True:
        if process is not None and process.poll() is not None:
            tail = log_tail(log_path) if log_path else ""
            raise EmulatorError(
                f"{kind} exited with code {process.returncode} before answering at {endpoint}.\n"
                f"Log tail ({log_path}):\n{tail}"
            )
        try:
            if sts:
                client.get_caller_identity()
            else:
                client.list_streams(Limit=1)
            return time.monotonic() - start
        except Exception as error:
            last_error = error
        if time.monotonic() - start > timeout:
            tail = log_tail(log_path) if log_path else ""
            raise EmulatorError(
                f"{kind} did not answer ListStreams at {endpoint} within {timeout:.0f}s "
                f"(last error: {type(last_error).__name__}: {last_error}).\n"
                f"Log tail ({log_path}):\n{tail}"
            )
        time.sleep(0.2)


def start(
    kind: str,
    *,
    port: int | None = None,
    timeout: float = 60.0,
    attempts: int = 3,
    tls: bool = False,
    env: dict[str, str] | None = None,
) -> Emulator:
    """Start an emulator on a free loopback port and wait until it answers ListStreams.

    ``tls=True`` (ministack only) serves HTTPS with a self-signed certificate instead of HTTP; the
    endpoint is then ``https://...`` and the health check is STS GetCallerIdentity. (The KPL needs
    an HTTPS STS endpoint, which kinesis-local does not have.) As root, ministack with TLS also binds
    127.0.0.1:443 when that port is free.

    The process runs in its own session (process group), so :meth:`Emulator.stop` can end it with
    everything it started. Its output goes to ``.run/<kind>-<port>.log``. ``env`` overrides the
    emulator's environment (e.g. kinesis-local's ``SHOULD_PERSIST_DATA``/``PERSIST_PATH``).
    """
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    last: EmulatorError | None = None
    for _ in range(attempts):
        chosen = port or free_port()
        extra = [free_port()] if kind == "kinesis-local" else []
        if tls and kind != "ministack":
            raise EmulatorError("only ministack serves TLS on its main port; kinesis-local has a TLS port of its own")
        argv, cwd, process_env = _command(kind, chosen, extra, tls)
        process_env.update(env or {})
        log_path = RUN_DIR / f"{kind}-{chosen}.log"
        with open(log_path, "ab") as log:  # appended: a restart on the same port keeps the earlier log
            process = subprocess.Popen(
                argv,
                cwd=cwd,
                env=process_env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        endpoint = f"{'https' if tls else 'http'}://127.0.0.1:{chosen}"
        emulator = Emulator(kind, endpoint, chosen, process.pid, str(log_path), extra, process)
        try:
            wait_until_healthy(endpoint, timeout=timeout, process=process, log_path=log_path, kind=kind, sts=tls)
            return emulator
        except EmulatorError as error:
            emulator.stop()
            last = error
            # A port taken between free_port() and the bind is worth a retry; anything else is not.
            text = str(error).lower()
            if port is not None or not ("in use" in text or "eaddrinuse" in text):
                raise
    assert last is not None
    raise last


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0); treat it as gone.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def stop_process_group(pid: int, *, timeout: float = 10.0, process: subprocess.Popen[bytes] | None = None) -> None:
    """SIGTERM the process group led by ``pid``, wait up to ``timeout``, then SIGKILL it."""

    def gone() -> bool:
        if process is not None:
            return process.poll() is not None
        return not _pid_alive(pid)

    def signal_group(sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, sig)

    if gone():
        signal_group(signal.SIGKILL)  # leftovers of the group, if any
        return
    signal_group(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if gone():
            signal_group(signal.SIGKILL)
            return
        time.sleep(0.1)
    signal_group(signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and not gone():
        time.sleep(0.1)
    if not gone():
        raise EmulatorError(f"process group {pid} did not exit after SIGKILL")


@contextlib.contextmanager
def running(kind: str, **kwargs: object) -> Iterator[Emulator]:
    """Context manager: start an emulator, yield it, stop it."""
    emulator = start(kind, **kwargs)  # type: ignore[arg-type]
    try:
        yield emulator
    finally:
        emulator.stop()


# --- command line (scripts/emulator.sh) -----------------------------------------------------------


def _state_file(kind: str) -> Path:
    return RUN_DIR / f"{kind}.json"


def _looks_like(kind: str, pid: int) -> bool:
    """Whether ``pid`` still is the emulator we started (pids get reused)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return False
    marker = {"kinesis-local": b"main.js", "moto": b"moto_server"}.get(kind, b"ministack")
    return marker in cmdline


def cli_start(kind: str, port: int | None, timeout: float) -> int:
    state_file = _state_file(kind)
    if state_file.exists():
        state = json.loads(state_file.read_text())
        if _pid_alive(state["pid"]) and _looks_like(kind, state["pid"]):
            try:
                wait_until_healthy(state["endpoint"], timeout=5, kind=kind)
                print(state["endpoint"])
                return 0
            except EmulatorError:
                pass
            print(f"{kind} (pid {state['pid']}) does not answer; restarting it", file=sys.stderr)
            stop_process_group(state["pid"])
        state_file.unlink()
    emulator = start(kind, port=port, timeout=timeout)
    state_file.write_text(json.dumps(emulator.state(), indent=2))
    (RUN_DIR / f"{kind}.endpoint").write_text(emulator.endpoint + "\n")
    print(f"{kind} pid {emulator.pid}, log {emulator.log_path}", file=sys.stderr)
    print(emulator.endpoint)
    return 0


def cli_stop(kind: str) -> int:
    state_file = _state_file(kind)
    if not state_file.exists():
        print(f"{kind} is not running (no {state_file})", file=sys.stderr)
        return 0
    state = json.loads(state_file.read_text())
    pid = int(state["pid"])
    if _pid_alive(pid) and _looks_like(kind, pid):
        stop_process_group(pid)
        print(f"{kind} (pid {pid}) stopped", file=sys.stderr)
    else:
        print(f"{kind} (pid {pid}) was not running", file=sys.stderr)
    state_file.unlink()
    with contextlib.suppress(FileNotFoundError):
        (RUN_DIR / f"{kind}.endpoint").unlink()
    return 0


def cli_status(kind: str) -> int:
    state_file = _state_file(kind)
    if not state_file.exists():
        print(f"{kind}: stopped")
        return 1
    state = json.loads(state_file.read_text())
    alive = _pid_alive(state["pid"]) and _looks_like(kind, state["pid"])
    print(f"{kind}: {'running' if alive else 'dead'} pid={state['pid']} {state['endpoint']}")
    return 0 if alive else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/emulator.sh", description="Start or stop a local Kinesis emulator.")
    parser.add_argument("action", choices=("start", "stop", "status"))
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("--port", type=int, default=None, help="port (default: a free one)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for health")
    args = parser.parse_args(argv)
    try:
        if args.action == "start":
            return cli_start(args.kind, args.port, args.timeout)
        if args.action == "stop":
            return cli_stop(args.kind)
        return cli_status(args.kind)
    except EmulatorError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
