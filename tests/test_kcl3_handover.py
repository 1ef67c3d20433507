"""A hand-over from a real KCL 3.x application: ``spark-kinesis positions --from-kcl-table`` on a lease table
that the Kinesis Client Library 3.5.1 itself wrote, then a Spark batch read from the positions document.

The KCL application is tests/kcl-app (a small Java consumer; scripts/setup.sh builds it with Maven). It reads a
2-shard stream of plain records and KPL aggregates from TRIM_HORIZON through kinesis-local, keeps its lease table on
ministack's DynamoDB, checkpoints on each shard at its 13th user record (inside an aggregate, so the checkpoint has a
sub-sequence number) and stops as if killed. Since KCL 3.5 its lease table also holds the client-version migration
state (``Migration3.0``), the leader lock and a worker-metrics item, which the positions tool must skip.

Needs the jars (scripts/build.sh) and the built application (scripts/setup.sh); it fails, not skips, without them.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import TEST_ENV
from harness.jvm import LEAN_JIT
from harness.kinesis import create_stream, list_shards, put_aggregated, put_plain
from spark_kinesis.cli import main

pytestmark = pytest.mark.emulator

KCL_APP = Path(__file__).resolve().parent / "kcl-app" / "target"
KCL_APP_CLASS = "io.sparkkinesis.kclapp.CheckpointApp"
CHECKPOINT_AT = 13  # per shard: 6 plain records, then the 7th user record of the first aggregate (sub-record 6)
PLAIN_PER_SHARD = 6
AGGREGATES_PER_SHARD = 3
RECORDS_PER_AGGREGATE = 10


def _classpath() -> str:
    jar = KCL_APP / "kcl-app.jar"
    dependencies = KCL_APP / "dependency"
    if not jar.is_file() or not any(dependencies.glob("amazon-kinesis-client-3.*.jar")):
        pytest.fail(
            f"the KCL 3.x test application is not built ({jar} and {dependencies}/amazon-kinesis-client-3.*.jar): "
            "run scripts/setup.sh, or mvn -f tests/kcl-app/pom.xml -B -ntp -q package"
        )
    return f"{jar}{os.pathsep}{dependencies}/*"


def _keys_in(start: int, end: int, prefix: str, count: int) -> list[str]:
    """``count`` partition keys whose MD5 hash falls in [start, end]: they land on (and belong to) that shard."""
    keys: list[str] = []
    n = 0
    while len(keys) < count:
        key = f"{prefix}{n}"
        n += 1
        if start <= int(hashlib.md5(key.encode()).hexdigest(), 16) <= end:
            keys.append(key)
    return keys


@pytest.fixture
def kcl_table(ministack: str, aws_client_factory: Callable[[str, str], Any]) -> Iterator[str]:
    """The KCL application's name, which is its lease table's; the table is deleted afterwards."""
    name = f"kcl3-app-{uuid.uuid4().hex[:8]}"
    yield name
    dynamodb = aws_client_factory("dynamodb", ministack)
    for table in dynamodb.list_tables()["TableNames"]:
        if table == name or table.startswith(f"{name}-"):
            dynamodb.delete_table(TableName=table)


def _run_kcl_app(kinesis_local: str, ministack: str, stream: str, application: str, output: Path) -> float:
    """Run the KCL application until it has checkpointed both shards; returns how long it ran (seconds)."""
    env = {
        **os.environ,
        **TEST_ENV,
        "KCL_APP_STREAM": stream,
        "KCL_APP_NAME": application,
        "KCL_APP_KINESIS_ENDPOINT": kinesis_local,
        "KCL_APP_DYNAMODB_ENDPOINT": ministack,
        "KCL_APP_SHARDS": "2",
        "KCL_APP_CHECKPOINT_AT": str(CHECKPOINT_AT),
        "KCL_APP_OUTPUT": str(output),
        "KCL_APP_TIMEOUT_SECONDS": "120",
    }
    began = time.monotonic()
    done = subprocess.run(
        [
            "java",
            *LEAN_JIT.split(),
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp",
            _classpath(),
            KCL_APP_CLASS,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,  # only stops a run that hangs, on a machine however busy
        check=False,
    )
    took = time.monotonic() - began
    assert done.returncode == 0, f"the KCL application failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
    return took


def test_a_batch_read_from_a_kcl_3x_lease_table_returns_exactly_what_the_application_had_not_checkpointed(
    spark: Any,
    kinesis_local: str,
    kinesis_client_factory: Callable[[str], Any],
    ministack: str,
    aws_client_factory: Callable[[str, str], Any],
    kcl_table: str,
    stream_name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for key, value in TEST_ENV.items():
        monkeypatch.setenv(key, value)
    kinesis = kinesis_client_factory(kinesis_local)
    create_stream(kinesis, stream_name, 2)
    shards = sorted(list_shards(kinesis, stream_name), key=lambda s: s["ShardId"])
    # On each shard: plain records, then KPL aggregates whose user records all belong to that shard.
    users: dict[str, list[str]] = {}
    for shard in shards:
        shard_id = shard["ShardId"]
        start, end = (int(shard["HashKeyRange"][k]) for k in ("StartingHashKey", "EndingHashKey"))
        keys = _keys_in(start, end, f"{shard_id[-1]}-", PLAIN_PER_SHARD + AGGREGATES_PER_SHARD * RECORDS_PER_AGGREGATE)
        plain = [(k, f"{shard_id}-plain-{i}") for i, k in enumerate(keys[:PLAIN_PER_SHARD])]
        aggregated = [(k, f"{shard_id}-agg-{i:02d}") for i, k in enumerate(keys[PLAIN_PER_SHARD:])]
        assert {p.shard_id for p in put_plain(kinesis, stream_name, plain)} == {shard_id}
        puts = put_aggregated(
            kinesis,
            stream_name,
            aggregated,
            records_per_aggregate=RECORDS_PER_AGGREGATE,
            explicit_hash_key=str(start),
        )
        assert {p.shard_id for p in puts} == {shard_id}
        users[shard_id] = [d for _, d in plain + aggregated]

    output = tmp_path / "kcl-app.tsv"
    app_seconds = _run_kcl_app(kinesis_local, ministack, stream_name, kcl_table, output)
    checkpoints: dict[str, tuple[str, int, list[str]]] = {}
    for line in output.read_text("utf-8").splitlines():
        shard_id, sequence, sub, *processed = line.split("\t")
        checkpoints[shard_id] = (sequence, int(sub), processed)
    assert sorted(checkpoints) == sorted(users)
    for shard_id, (_, sub, processed) in checkpoints.items():
        # The KCL delivered each shard in order, and the checkpoint is the 7th user record of an aggregate.
        assert processed == users[shard_id][:CHECKPOINT_AT]
        assert sub == CHECKPOINT_AT - PLAIN_PER_SHARD - 1

    # The table is the KCL's own: its leases, and the items KCL 3.5+ keeps next to them.
    dynamodb = aws_client_factory("dynamodb", ministack)
    items = dynamodb.scan(TableName=kcl_table, ConsistentRead=True)["Items"]
    kinds = Counter(item.get("entityType", {}).get("S", "(none)") for item in items)
    assert kinds == {"LEASE": 2, "CLIENT_VERSION_MIGRATION": 1, "LEADER": 1, "WORKER_METRIC_STATS": 1}, kinds
    leases = {i["leaseKey"]["S"]: i for i in items if i["entityType"]["S"] == "LEASE"}
    for shard_id, (sequence, sub, _) in checkpoints.items():
        assert leases[shard_id]["checkpoint"]["S"] == sequence
        assert leases[shard_id]["checkpointSubSequenceNumber"]["N"] == str(sub)
    # Records the application never saw, put after it stopped.
    late = [f"late-{i}" for i in range(10)]
    put_plain(kinesis, stream_name, late)

    tool_began = time.monotonic()
    code = main(
        [
            "positions",
            "--from-kcl-table",
            kcl_table,
            "--stream",
            stream_name,
            "--region",
            "us-east-1",
            "--dynamodb-endpoint-url",
            ministack,
        ]
    )
    tool_seconds = time.monotonic() - tool_began
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert json.loads(captured.out) == {
        stream_name: {
            shard_id: {"type": "AFTER_SEQUENCE_NUMBER", "sequenceNumber": sequence, "subSequenceNumber": sub}
            for shard_id, (sequence, sub, _) in checkpoints.items()
        }
    }
    notes = captured.err.strip().splitlines()
    assert notes == [
        "spark-kinesis positions: note: skipped 2 coordinator items (Leader, Migration3.0) and 1 worker-metrics "
        "item: KCL 3.x items that are not leases"
    ], captured.err

    read_began = time.monotonic()
    df = (
        spark.read.format("aws-kinesis")
        .option("kinesis.endpointUrl", kinesis_local)
        .option("kinesis.region", "us-east-1")
        .option("kinesis.streamName", stream_name)
        .option("kinesis.startingPosition", captured.out.strip())
        .load()
    )
    read = [bytes(r["data"]).decode("utf-8") for r in df.select("data").collect()]
    read_seconds = time.monotonic() - read_began
    expected = [d for shard_id in users for d in users[shard_id][CHECKPOINT_AT:]] + late
    lost = Counter(expected) - Counter(read)
    duplicated = Counter(read) - Counter(expected)
    print(
        f"KCL 3.x hand-over: the application ran {app_seconds:.1f} s, positions {tool_seconds:.1f} s, the batch "
        f"read {read_seconds:.1f} s; {len(read)} records read after the checkpoints, {len(expected)} expected, "
        f"{sum(lost.values())} lost, {sum(duplicated.values())} duplicated"
    )
    assert not lost and not duplicated, (lost, duplicated)
    assert len(read) == 2 * (PLAIN_PER_SHARD + AGGREGATES_PER_SHARD * RECORDS_PER_AGGREGATE - CHECKPOINT_AT) + 10
