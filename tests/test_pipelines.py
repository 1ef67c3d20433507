"""Spark Declarative Pipelines (Spark 4.1 and newer) with this connector, as a user runs them.

The example project examples/pipeline (a streaming table fed by ``spark.readStream.format(FORMAT)`` of this
connector, and a sink made with ``dp.create_sink(format=FORMAT)`` fed by an append flow) runs with pyspark's own
``spark-pipelines`` command and ``--jars`` of the jars that ``spark_kinesis`` picks for the installed pyspark, against
kinesis-local. ``spark-pipelines`` starts a local Spark Connect server (``--remote local[2]``), registers the
project's datasets with it, and runs the graph once: its streaming flows run with ``Trigger.AvailableNow``, so a run
processes what the source stream holds and ends by itself.

The test copies the project and fills in its spec's ``configuration`` (streams, region, endpoints) and ``storage``,
leaving ``transformations/`` as it is. It then reads the sink stream with boto3 and its own KPL decoder: every order
must arrive exactly once, transformed as the example says, carrying the sequence number it had in the source stream;
the streaming table must hold each order once. A second run after more orders must send only those: the flows resume
from the checkpoints that the pipeline keeps under ``storage`` (the runs use Hive's catalog, in the working
directory, so that the second finds the table the first made).

kinesis-local serves TLS on a second port with a self-signed certificate; the sink (the KPL) speaks only HTTPS, so
it gets that port and ``verify_certificate: "false"``. The test starts its own kinesis-local for that port (the
session fixture exposes only the plain one). Credentials are the dummy test ones, from the environment of the
``spark-pipelines`` process (the AWS default chain): nothing secret is in the spec or on the command line.

pyspark older than 4.1 has no ``pyspark.pipelines``: there the module is skipped, with that reason.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import TEST_ENV
from harness import emulators, kpl
from harness.artifacts import expected_line, line_of
from harness.kinesis import create_stream, list_shards, put_plain, read_shard, unique_stream_name

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "pipeline"
BIN = Path(sys.executable).parent


def _pyspark_version() -> tuple[int, int]:
    import pyspark

    major, minor = pyspark.__version__.split(".")[:2]
    return int(major), int(minor)


def _no_pipelines_reason() -> str:
    import pyspark

    return (
        "Spark Declarative Pipelines (pyspark.pipelines, spark-pipelines) exist from Spark 4.1 on; "
        f"this pyspark is {pyspark.__version__}"
    )


pytestmark = [
    pytest.mark.emulator,
    pytest.mark.smoke,
    pytest.mark.skipif(_pyspark_version() < (4, 1), reason=_no_pipelines_reason()),
]


# --- the emulator with its TLS port ------------------------------------------------------------------------------


class TlsKinesis:
    """A kinesis-local of this module: plain endpoint for boto3 and the source, TLS endpoint for the sink."""

    def __init__(self, emulator: emulators.Emulator) -> None:
        self.emulator = emulator
        self.plain = emulator.endpoint
        self.tls = emulator.tls_endpoint
        self.client = emulators.kinesis_client(self.plain)


@pytest.fixture(scope="module")
def kinesis() -> Iterator[TlsKinesis]:
    emulator = emulators.start("kinesis-local")
    try:
        yield TlsKinesis(emulator)
    finally:
        # Nothing of it is kept: no need to wait the default 10 s for kinesis-local to end on SIGTERM.
        emulator.stop(timeout=1.0)


@pytest.fixture
def streams(kinesis: TlsKinesis, request: pytest.FixtureRequest) -> tuple[str, str]:
    """A 2-shard source stream and a 2-shard sink stream (the emulator is this module's, and goes with it)."""
    names = (unique_stream_name(f"{request.node.name}-in"), unique_stream_name(f"{request.node.name}-out"))
    for name in names:
        create_stream(kinesis.client, name, shards=2)
    return names


# --- the project, the run ----------------------------------------------------------------------------------------


def _jars() -> str:
    import spark_kinesis

    with warnings.catch_warnings():
        # A pyspark newer than every build (4.3) gets the newest line with a warning; test_spark_line checks it.
        warnings.simplefilter("ignore")
        paths = spark_kinesis.jar_paths()
    assert expected_line() in {line_of(p) for p in paths}, paths
    return ",".join(paths)


def _project(tmp_path: Path, settings: dict[str, str], example: Path = EXAMPLE) -> Path:
    """A copy of an example project whose spec points at the emulator and at a storage folder under ``tmp_path``.

    Only the spec's ``storage`` and the values of ``configuration`` keys the example has (``settings``) change, and
    one runtime Spark setting is added (a spec's ``configuration`` is applied to every flow, so it takes no static
    settings such as the warehouse folder).
    """
    import yaml  # pyspark's "pipelines" extra; only the venvs of lines that have pipelines get it

    project = tmp_path / example.name
    shutil.copytree(example, project, ignore=shutil.ignore_patterns("__pycache__"))
    spec_path = project / "spark-pipeline.yml"
    spec = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    unknown = set(settings) - set(spec["configuration"])
    assert not unknown, f"the example's spec has no {sorted(unknown)}"
    spec["configuration"].update(settings)
    spec["configuration"]["spark.sql.shuffle.partitions"] = "2"
    spec["storage"] = (tmp_path / "storage").as_uri()
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return spec_path


def _run_pipeline(
    spec: Path,
    workdir: Path,
    *,
    action: str = "run",
    conf: str = "spark.sql.catalogImplementation=hive",
    timeout: float = 900,
) -> tuple[str, float]:
    """``spark-pipelines <action>`` of the spec in ``workdir``, as a user runs it; returns its output and its seconds.

    ``timeout`` only stops a run that hangs: a run takes about 100 s on a quiet 2-core machine, and 4 minutes were
    not enough with two CPU hogs and other builds beside it.
    """
    command = [
        str(BIN / "spark-pipelines"),
        # A local Connect server in a JVM of its own, on a local[2] master (--master is refused with --remote).
        "--remote",
        "local[2]",
        "--jars",
        _jars(),
        # By default a catalog that outlives the run (Hive's, in metastore_db/ of the working directory): with Spark's
        # in-memory one the next run finds the streaming table's folder without its table (LOCATION_ALREADY_EXISTS).
        "--conf",
        conf,
        # Nothing else for spark-submit: in this mode pyspark (4.1.3 to 4.3.0) hands spark-submit's settings to the
        # local server in groups of ten and keeps only the last group, so a few more --conf can lose the --jars
        # (DATA_SOURCE_NOT_FOUND). The warehouse is spark-warehouse/ in the working directory.
        action,
        "--spec",
        str(spec),
    ]
    env = {
        **os.environ,
        **TEST_ENV,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    env.pop("SPARK_REMOTE", None)
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    # The local Connect server listens on Spark's fixed default port, so runs on one machine take turns (the other
    # lines' smoke sets run beside this suite in scripts/test.sh, and a clash fails the run with a BindException).
    with open(Path(tempfile.gettempdir()) / "spark-kinesis-connect-15002.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        start = time.monotonic()
        done = subprocess.run(
            command, cwd=workdir, capture_output=True, text=True, env=env, timeout=timeout, check=False
        )
        seconds = time.monotonic() - start
    output = done.stdout + done.stderr
    runs = len(list(workdir.glob("spark-pipelines-*.log")))
    (workdir / f"spark-pipelines-{runs + 1}.log").write_text(output, encoding="utf-8")
    if done.returncode != 0 or "Run is COMPLETED" not in output:
        causes = [line for line in output.splitlines() if "Exception" in line or "Error" in line or "FAILED" in line]
        raise AssertionError(
            f"spark-pipelines {action} failed (exit {done.returncode}):\n"
            + "\n".join(dict.fromkeys(causes))[:6000]
            + f"\n--- output tail\n{output[-4000:]}"
        )
    return output, seconds


# --- what the sink stream holds ----------------------------------------------------------------------------------


def _landed(client: Any, stream: str) -> list[kpl.UserRecord]:
    """Every user record in the stream (KPL aggregates decoded here, plain records as they are)."""
    landed: list[kpl.UserRecord] = []
    for shard in list_shards(client, stream):
        records, _ = read_shard(client, stream, shard["ShardId"], max_calls=200)
        for record in records:
            data = bytes(record["Data"])
            if kpl.is_aggregated(data):
                landed.extend(kpl.decode(data))
            else:
                landed.append(kpl.UserRecord(record["PartitionKey"], None, data))
    return landed


def _orders(first: int, count: int) -> list[dict[str, Any]]:
    return [
        {"order": f"o-{i:04d}", "customer": f"c-{i % 7}", "amount": round(12.5 * (i % 17), 2)}
        for i in range(first, first + count)
    ]


def _put(client: Any, stream: str, orders: list[dict[str, Any]]) -> list[tuple[str, bytes]]:
    """Put the orders (keyed by customer); return (partition key, data) each should arrive as at the sink."""
    puts = put_plain(client, stream, [(o["customer"], json.dumps(o).encode()) for o in orders])
    expected = []
    for order, put in zip(orders, puts, strict=True):
        enriched = {**order, "large": order["amount"] >= 100.0, "sourceSequenceNumber": put.sequence_number}
        expected.append((order["customer"], enriched))
    return [(key, json.dumps(value, sort_keys=True).encode()) for key, value in expected]


def _as_sent(records: list[kpl.UserRecord]) -> Counter[tuple[str, bytes]]:
    """The sink's records as (partition key, canonical JSON): the example's JSON has its own key order."""
    return Counter((r.partition_key, json.dumps(json.loads(r.data), sort_keys=True).encode()) for r in records)


def test_pipeline_streams_kinesis_orders_through_a_table_into_a_kinesis_sink(
    kinesis: TlsKinesis, streams: tuple[str, str], tmp_path: Path
) -> None:
    source, sink = streams
    spec = _project(
        tmp_path,
        {
            "kinesis_orders.region": emulators.REGION,
            "kinesis_orders.source_stream": source,
            "kinesis_orders.sink_stream": sink,
            "kinesis_orders.endpoint_url": kinesis.plain,
            "kinesis_orders.sink_endpoint_url": kinesis.tls,
            "kinesis_orders.verify_certificate": "false",
        },
    )
    first = _put(kinesis.client, source, _orders(0, 60))
    output, seconds = _run_pipeline(spec, tmp_path)
    print(f"first run: {seconds:.1f}s")
    for flow in ("orders_raw", "enrich_orders"):
        assert any(flow in line and "COMPLETED" in line for line in output.splitlines()), output[-3000:]
    landed = _landed(kinesis.client, sink)
    assert _as_sent(landed) == Counter(first)
    assert sum(1 for _, data in first if json.loads(data)["large"]) > 0

    # The streaming table holds each order once, with where it came from.
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "spark-warehouse" / "orders_raw").to_pylist()
    assert sorted(row["order"] for row in table) == sorted(json.loads(data)["order"] for _, data in first)
    assert {row["sequenceNumber"] for row in table} == {json.loads(data)["sourceSequenceNumber"] for _, data in first}

    # A second run resumes from the checkpoints: only the new orders go out.
    second = _put(kinesis.client, source, _orders(60, 25))
    _, seconds = _run_pipeline(spec, tmp_path)
    print(f"second run: {seconds:.1f}s")
    assert _as_sent(_landed(kinesis.client, sink)) == Counter(first) + Counter(second)
    table = pq.read_table(tmp_path / "spark-warehouse" / "orders_raw").to_pylist()
    assert sorted(row["order"] for row in table) == sorted(json.loads(data)["order"] for _, data in first + second)


# --- AUTO CDC of DynamoDB change records (Spark 4.2+) --------------------------------------------------------------

CDC_EXAMPLE = ROOT / "examples" / "dynamodb_cdc_pipeline"


@pytest.mark.skipif(
    _pyspark_version() < (4, 2),
    reason="AUTO CDC flows (pyspark.pipelines.create_auto_cdc_flow) exist from Spark 4.2 on",
)
def test_auto_cdc_pipeline_of_dynamodb_changes_resolves_on_a_connect_server(tmp_path: Path) -> None:
    """``spark-pipelines dry-run`` of examples/dynamodb_cdc_pipeline: every dataset and flow resolves on the server.

    The local Connect server gets the connector's jars and its SQL extension, as the example's README says. A dry run
    analyses the graph and runs nothing, so it fails if ``dynamodb_changes`` does not resolve on the server, if the
    decoded view lacks a key column or ``sequence_by`` does not type, or if the source needs a Kinesis call to plan
    (the endpoint is a closed port). A full run needs a target format that supports row-level operations, which no
    open-source table format offers for this Spark (see the example's README), so it is not run here.
    """
    spec = _project(tmp_path, {"orders_cdc.endpoint_url": f"http://127.0.0.1:{emulators.free_port()}"}, CDC_EXAMPLE)
    output, seconds = _run_pipeline(
        spec, tmp_path, action="dry-run", conf="spark.sql.extensions=io.sparkkinesis.KinesisSqlExtensions"
    )
    print(f"dry run: {seconds:.1f}s")
    assert "Importing" in output and "orders.py" in output, output[-3000:]
    assert not (tmp_path / "spark-warehouse" / "orders").exists(), "a dry run created the target table"
