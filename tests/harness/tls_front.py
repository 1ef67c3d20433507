"""A TLS front for a plain-HTTP emulator: terminates TLS on a loopback port and relays the bytes.

The KPL speaks only HTTPS, while boto3 and the connector's own clients use an emulator's plain port.
With this front both reach one emulator process, and so one state: the same accounts, streams and
assumed-role sessions (ministack keeps those in memory per process). The certificate is self-signed,
made with the openssl command for each front, so the KPL runs with ``kinesis.sink.verifyCertificate=false``.
No ALPN is offered, so clients speak HTTP/1.1 through it.

    with TlsFront("http://127.0.0.1:4566") as front:
        front.url   # https://127.0.0.1:<port>
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import subprocess
import tempfile
import threading
from pathlib import Path
from urllib.parse import urlparse


def _self_signed(directory: Path) -> tuple[Path, Path]:
    cert, key = directory / "front.crt", directory / "front.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until the reading side closes, then close the writing side."""
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except (OSError, asyncio.IncompleteReadError, ssl.SSLError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


class TlsFront:
    def __init__(self, upstream: str) -> None:
        parsed = urlparse(upstream)
        if parsed.scheme != "http" or parsed.hostname is None or parsed.port is None:
            raise ValueError(f"upstream must be http://host:port, got {upstream!r}")
        self._upstream = (parsed.hostname, parsed.port)
        self._dir = tempfile.TemporaryDirectory(prefix="tls-front-")
        cert, key = _self_signed(Path(self._dir.name))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        # One event loop thread serves every connection: asyncio never reads and writes one TLS
        # connection from two threads at once (OpenSSL does not allow that).
        self._loop = asyncio.new_event_loop()
        threading.Thread(target=self._loop.run_forever, name="tls-front", daemon=True).start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=context), self._loop
        ).result(timeout=30)
        self.url = f"https://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def _serve(self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter) -> None:
        try:
            upstream_in, upstream_out = await asyncio.open_connection(*self._upstream)
        except OSError:
            client_out.close()
            return
        await asyncio.gather(_pump(client_in, upstream_out), _pump(upstream_in, client_out))

    def close(self) -> None:
        async def shut() -> None:
            self._server.close()
            # Connections still open (keep-alive) end here, not as pending tasks of a stopped loop.
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(shut(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._dir.cleanup()

    def __enter__(self) -> TlsFront:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
