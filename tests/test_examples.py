"""Each script in examples/ runs with ``spark-submit --jars "$(spark-kinesis jar)"`` against the emulator.

The scripts are what users copy; running them here through the installed console script and
spark-submit (a separate JVM, as users run them) keeps them working.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import TEST_ENV
from harness.kinesis import create_stream, put_plain

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.emulator

PAGES = ["/home", "/search", "/cart"]


def _bundled_jar() -> str:
    done = subprocess.run([str(BIN / "spark-kinesis"), "jar"], capture_output=True, text=True, check=True)
    return done.stdout.strip()


# `timeout` only stops a job that hangs, on a machine however busy: never a bound on how fast a job runs.
def _spark_submit(
    script: str, *args: str, jars: tuple[str, ...] = (), conf: dict[str, str] | None = None, timeout: float = 900
) -> dict[str, object]:
    settings = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2", **(conf or {})}
    command = [
        str(BIN / "spark-submit"),
        "--master",
        "local[2]",
        "--jars",
        ",".join([_bundled_jar(), *jars]),
        *[option for key, value in settings.items() for option in ("--conf", f"{key}={value}")],
        str(ROOT / "examples" / script),
        *args,
    ]
    env = {**os.environ, **TEST_ENV, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout, check=False)
    if done.returncode != 0:
        # The cause is usually far above the tail; quote every exception line first.
        causes = [
            line for line in done.stderr.splitlines() if "Exception" in line and not line.lstrip().startswith("at ")
        ]
        detail = "\n".join(dict.fromkeys(causes))[:6000]
        raise AssertionError(
            f"{script} failed:\n{detail}\n--- stdout tail\n{done.stdout[-2000:]}"
            f"\n--- stderr tail\n{done.stderr[-3000:]}"
        )
    results = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert results, f"{script} printed no RESULT line:\n{done.stdout[-3000:]}"
    return json.loads(results[-1][len("RESULT ") :])


def _page_views(count: int) -> tuple[list[tuple[str, bytes]], Counter[str]]:
    records, pages = [], Counter()
    for i in range(count):
        page = PAGES[i % len(PAGES)]
        pages[page] += 1
        event = {"user": f"u{i % 7}", "page": page, "at": "2026-11-22T10:00:00Z"}
        records.append((f"u{i % 7}", json.dumps(event).encode()))
    return records, pages


def test_read_aggregate_counts_every_event(
    kinesis_local, kinesis_client_factory, stream_name, stream_cleanup, tmp_path
):
    client = kinesis_client_factory(kinesis_local)
    stream_cleanup(client, create_stream(client, stream_name, shards=2))
    records, pages = _page_views(120)
    put_plain(client, stream_name, records)
    result = _spark_submit(
        "read_aggregate.py",
        "--endpoint",
        kinesis_local,
        "--stream",
        stream_name,
        "--checkpoint",
        str(tmp_path / "chk"),
        "--expect",
        "120",
        "--timeout",
        "120",
    )
    assert result == dict(pages)


def test_foreach_batch_writes_each_record_once(
    kinesis_local, kinesis_client_factory, stream_name, stream_cleanup, tmp_path
):
    client = kinesis_client_factory(kinesis_local)
    stream_cleanup(client, create_stream(client, stream_name, shards=2))
    records, _ = _page_views(90)
    put_plain(client, stream_name, records)
    result = _spark_submit(
        "foreach_batch_idempotent.py",
        "--endpoint",
        kinesis_local,
        "--stream",
        stream_name,
        "--output",
        str(tmp_path / "out"),
        "--checkpoint",
        str(tmp_path / "chk"),
        "--expect",
        "90",
        "--timeout",
        "120",
    )
    assert result == {"rows": 90, "distinct": 90}


def test_real_time_alerts_flag_every_large_payment(
    kinesis_local, kinesis_client_factory, stream_name, stream_cleanup, tmp_path
):
    import pyspark

    if tuple(int(p) for p in pyspark.__version__.split(".")[:2]) < (4, 1):
        pytest.skip("real-time mode needs Spark 4.1 or newer")
    client = kinesis_client_factory(kinesis_local)
    stream_cleanup(client, create_stream(client, stream_name, shards=2))
    payments = [
        (f"acct-{i % 9}", json.dumps({"account": f"acct-{i % 9}", "amount": 100.0 * i}).encode()) for i in range(40)
    ]
    put_plain(client, stream_name, payments)
    large = [p for p in payments if json.loads(p[1])["amount"] > 1000.0]
    result = _spark_submit(
        "real_time_alerts.py",
        "--endpoint",
        kinesis_local,
        "--stream",
        stream_name,
        "--polling",
        "--batch",
        "5 seconds",
        "--output",
        str(tmp_path / "alerts"),
        "--checkpoint",
        str(tmp_path / "chk"),
        "--expect",
        str(len(large)),
        "--timeout",
        "120",
    )
    assert result == {"alerts": len(large), "accounts": sorted({account for account, _ in large})}


def _order_change(event: str, order: int, total: str | None, millis: int) -> bytes:
    """A change record of Kinesis Data Streams for DynamoDB (the layout of tests' dynamodb-changes fixtures)."""
    keys = {"customer": {"S": "c#1"}, "orderId": {"N": str(order)}}
    image = {**keys, "total": {"N": total}, "paid": {"BOOL": False}} if total is not None else None
    change: dict[str, object] = {"ApproximateCreationDateTime": millis, "Keys": keys, "SizeBytes": 60}
    if event != "REMOVE":
        change["NewImage"] = image
    record = {
        "awsRegion": "us-east-1",
        "eventID": f"{event}-{order}-{millis}",
        "eventName": event,
        "recordFormat": "application/json",
        "tableName": "Orders",
        "dynamodb": change,
        "eventSource": "aws:dynamodb",
    }
    return json.dumps(record).encode()


def _put_order_changes(client: object, stream_name: str) -> int:
    """Put changes of three orders, out of order and with repeats, plus two documented fixtures; return their count."""
    changes = [
        _order_change("MODIFY", 1, "20.5", 2000),  # arrives before the INSERT it follows
        _order_change("INSERT", 1, "10", 1000),
        _order_change("MODIFY", 1, "20.5", 2000),  # a repeat
        _order_change("INSERT", 2, "7.25", 1500),
        _order_change("INSERT", 3, "1", 1000),
        _order_change("REMOVE", 3, None, 3000),
        _order_change("INSERT", 3, "1", 1000),  # a late repeat of a change older than the delete
    ]
    fixtures = ROOT / "src" / "test" / "resources" / "dynamodb-changes"
    changes += [(fixtures / f"{name}.json").read_bytes() for name in ("modify", "remove")]
    put_plain(client, stream_name, [(f"pk-{i % 3}", data) for i, data in enumerate(changes)])
    return len(changes)


# The copy after every change: orders 1 and 2 live at their newest totals; order 3 and the fixtures' item deleted.
def _merged(changes: int) -> dict[str, object]:
    return {"changes": changes, "live": {"c#1/1": "20.50", "c#1/2": "7.25"}, "deleted": 2}


def _run_merge_example(
    kinesis_local: str, client: object, stream_name: str, tmp_path: Path, *target: str, **submit: Any
) -> None:
    """Put the changes, run examples/dynamodb_changes_merge.py into ``target`` until it read them, check the copy."""
    changes = _put_order_changes(client, stream_name)
    result = _spark_submit(
        "dynamodb_changes_merge.py",
        "--endpoint",
        kinesis_local,
        "--stream",
        stream_name,
        *target,
        "--checkpoint",
        str(tmp_path / "chk"),
        "--expect",
        str(changes),
        "--timeout",
        "120",
        **submit,
    )
    assert result == _merged(changes)


def test_dynamodb_changes_merge_applies_changes_in_order_once(
    kinesis_local, kinesis_client_factory, stream_name, stream_cleanup, tmp_path
):
    client = kinesis_client_factory(kinesis_local)
    stream_cleanup(client, create_stream(client, stream_name, shards=2))
    _run_merge_example(kinesis_local, client, stream_name, tmp_path, "--output", str(tmp_path / "orders"))


def _delta_lake_jars() -> tuple[str, ...]:
    jars = sorted(str(p) for p in (ROOT / ".tools" / "delta-lake").glob("*.jar"))
    assert jars, "no Delta Lake jars in .tools/delta-lake: run scripts/setup.sh"
    return tuple(jars)


def _pyspark_line() -> tuple[int, int]:
    import pyspark

    major, minor = pyspark.__version__.split(".")[:2]
    return int(major), int(minor)


@pytest.mark.skipif(
    _pyspark_line() != (4, 2), reason="the Delta Lake release of .tools/delta-lake is built for Spark 4.2"
)
def test_dynamodb_changes_merge_into_a_delta_table_applies_changes_in_order_once(
    kinesis_local, kinesis_client_factory, stream_name, stream_cleanup, tmp_path
):
    """The example's ``MERGE INTO`` path (``--table``) on a Delta Lake table, which it creates (``--create-using``)."""
    client = kinesis_client_factory(kinesis_local)
    stream_cleanup(client, create_stream(client, stream_name, shards=2))
    _run_merge_example(
        kinesis_local,
        client,
        stream_name,
        tmp_path,
        *("--table", "orders", "--create-using", "delta"),
        jars=_delta_lake_jars(),
        conf={
            "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
            "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
            "spark.sql.warehouse.dir": str(tmp_path / "warehouse"),
        },
    )
    assert (tmp_path / "warehouse" / "orders" / "_delta_log").is_dir()
