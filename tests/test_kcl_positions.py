"""``spark-kinesis positions --from-kcl-table``: a KCL lease table on ministack's DynamoDB becomes a
positions document for ``kinesis.startingPosition``, through the jar's KclLeasesTool.

Needs the jars: scripts/build.sh (or SPARK_KINESIS_JAR=<line jar>,<deps jar> while iterating).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conftest import TEST_ENV
from harness.kinesis import create_stream, list_shards, put_aggregated, put_plain, split_shard
from spark_kinesis.cli import main
from streaming import BatchCollector, reader, start, stop, wait_for

SEQ_1 = "49590338271490256608559692538361571095921575989136588898"
SEQ_2 = "49590338271490256608559692538361571095921575989136588900"


def _lease(key: str, checkpoint: str, sub: int | None = 0, **extra: Any) -> dict[str, Any]:
    """A lease item as KCL 1.x/2.x writes it (boto3 attribute-value form)."""
    item: dict[str, Any] = {
        "leaseKey": {"S": key},
        "checkpoint": {"S": checkpoint},
        "leaseOwner": {"S": "worker-1"},
        "leaseCounter": {"N": "17"},
        "ownerSwitchesSinceCheckpoint": {"N": "0"},
    }
    if sub is not None:
        item["checkpointSubSequenceNumber"] = {"N": str(sub)}
    item.update(extra)
    return item


@pytest.fixture
def lease_table(
    ministack: str, aws_client_factory: Callable[[str, str], Any]
) -> Iterator[Callable[[list[dict[str, Any]]], str]]:
    """``make(items)``: a new table with KCL's key schema holding ``items``; deleted afterwards."""
    dynamodb = aws_client_factory("dynamodb", ministack)
    created: list[str] = []

    def make(items: list[dict[str, Any]]) -> str:
        table = f"kcl-app-{uuid.uuid4().hex[:8]}"
        dynamodb.create_table(
            TableName=table,
            AttributeDefinitions=[{"AttributeName": "leaseKey", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "leaseKey", "KeyType": "HASH"}],
            BillingMode="PAY_PER_REQUEST",
        )
        created.append(table)
        dynamodb.get_waiter("table_exists").wait(TableName=table)
        for item in items:
            dynamodb.put_item(TableName=table, Item=item)
        return table

    yield make
    for table in created:
        dynamodb.delete_table(TableName=table)


def _positions(
    capsys: pytest.CaptureFixture[str], endpoint: str, table: str, stream: str, *extra: str
) -> tuple[str, str]:
    code = main(
        [
            "positions",
            "--from-kcl-table",
            table,
            "--stream",
            stream,
            "--region",
            "us-east-1",
            "--dynamodb-endpoint-url",
            endpoint,
            *extra,
        ]
    )
    assert code == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


@pytest.mark.emulator
def test_kcl_1x_leases(ministack, lease_table, capsys, monkeypatch):
    for key, value in TEST_ENV.items():
        monkeypatch.setenv(key, value)
    table = lease_table(
        [
            _lease("shardId-000000000003", "SHARD_END"),
            _lease("shardId-000000000000", SEQ_1, sub=3, pendingCheckpoint={"S": SEQ_2}),
            _lease("shardId-000000000001", SEQ_2, parentShardId={"SS": ["shardId-000000000003"]}),
            _lease("shardId-000000000002", "TRIM_HORIZON"),
            _lease("shardId-000000000004", "LATEST"),
            _lease("shardId-000000000005", "AT_TIMESTAMP"),
            _lease("shardId-000000000006", SEQ_2, sub=None),
        ]
    )
    out, err = _positions(capsys, ministack, table, "orders", "--initial-timestamp", "2026-11-24T11:00:00+01:00")
    expected = {
        "orders": {
            "shardId-000000000000": {
                "type": "AFTER_SEQUENCE_NUMBER",
                "sequenceNumber": SEQ_1,
                "subSequenceNumber": 3,
            },
            "shardId-000000000001": {
                "type": "AFTER_SEQUENCE_NUMBER",
                "sequenceNumber": SEQ_2,
                "subSequenceNumber": 0,
            },
            "shardId-000000000002": {"type": "TRIM_HORIZON"},
            "shardId-000000000003": {"type": "SHARD_END"},
            "shardId-000000000004": {"type": "LATEST"},
            "shardId-000000000005": {"type": "AT_TIMESTAMP", "timestamp": "2026-11-24T10:00:00Z"},
            "shardId-000000000006": {"type": "AFTER_SEQUENCE_NUMBER", "sequenceNumber": SEQ_2},
        }
    }
    assert out == json.dumps(expected) + "\n"
    warnings = err.strip().splitlines()
    assert len(warnings) == 1
    assert "shardId-000000000000" in warnings[0] and "pendingCheckpoint" in warnings[0]


@pytest.mark.emulator
def test_kcl_2x_multi_stream_leases(ministack, lease_table, capsys, monkeypatch):
    for key, value in TEST_ENV.items():
        monkeypatch.setenv(key, value)
    table = lease_table(
        [
            _lease("123456789012:orders:1700000000:shardId-000000000001", SEQ_1, sub=2),
            _lease("123456789012:orders:1700000000:shardId-000000000000", "SHARD_END"),
            _lease("123456789012:payments:1700000001:shardId-000000000000", SEQ_2),
        ]
    )
    out, err = _positions(capsys, ministack, table, "orders")
    assert json.loads(out) == {
        "orders": {
            "shardId-000000000000": {"type": "SHARD_END"},
            "shardId-000000000001": {
                "type": "AFTER_SEQUENCE_NUMBER",
                "sequenceNumber": SEQ_1,
                "subSequenceNumber": 2,
            },
        }
    }
    assert list(json.loads(out)["orders"]) == ["shardId-000000000000", "shardId-000000000001"]
    assert err == ""
    out, _ = _positions(capsys, ministack, table, "payments")
    payments = {"type": "AFTER_SEQUENCE_NUMBER", "sequenceNumber": SEQ_2, "subSequenceNumber": 0}
    assert out == json.dumps({"payments": {"shardId-000000000000": payments}}) + "\n"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **TEST_ENV}
    return subprocess.run(
        [sys.executable, "-m", "spark_kinesis.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


@pytest.mark.emulator
def test_missing_table_names_table_region_and_endpoint(ministack):
    done = _cli(
        "positions",
        "--from-kcl-table",
        "no-such-kcl-app",
        "--stream",
        "orders",
        "--region",
        "us-east-1",
        "--dynamodb-endpoint-url",
        ministack,
    )
    assert done.returncode != 0
    assert done.stdout == ""
    message = done.stderr.strip()
    assert len(message.splitlines()) == 1, message
    assert message.startswith("spark-kinesis positions failed: error: ")
    assert "'no-such-kcl-app'" in message and "us-east-1" in message and ministack in message
    assert "Traceback" not in done.stderr and "\tat " not in done.stderr


@pytest.mark.emulator
def test_at_timestamp_lease_needs_the_initial_timestamp(ministack, lease_table):
    table = lease_table([_lease("shardId-000000000000", "AT_TIMESTAMP")])
    done = _cli(
        "positions",
        "--from-kcl-table",
        table,
        "--stream",
        "orders",
        "--region",
        "us-east-1",
        "--dynamodb-endpoint-url",
        ministack,
    )
    assert done.returncode != 0
    assert "shardId-000000000000" in done.stderr and "--initial-timestamp" in done.stderr


@pytest.mark.emulator
def test_a_query_started_from_a_kcl_lease_table_reads_exactly_what_the_kcl_application_had_not_checkpointed(
    spark: Any,
    kinesis_local: str,
    kinesis_client_factory: Callable[[str], Any],
    ministack: str,
    lease_table: Callable[[list[dict[str, Any]]], str],
    stream_name: str,
    tmp_path: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for key, value in TEST_ENV.items():
        monkeypatch.setenv(key, value)
    kinesis = kinesis_client_factory(kinesis_local)
    create_stream(kinesis, stream_name, 2)
    plain_shard, split_parent = sorted(s["ShardId"] for s in list_shards(kinesis, stream_name))
    hash_of = {s["ShardId"]: s["HashKeyRange"]["StartingHashKey"] for s in list_shards(kinesis, stream_name)}
    # Shard A: plain records, the KCL application checkpointed record 11.
    plain = put_plain(kinesis, stream_name, [(f"a{i}", f"plain-{i}") for i in range(40)])
    on_a = [(p.sequence_number, f"plain-{i}") for i, p in enumerate(plain) if p.shard_id == plain_shard]
    on_b_plain = [f"plain-{i}" for i, p in enumerate(plain) if p.shard_id == split_parent]
    # Shard B: KPL aggregates of 10 user records, checkpointed inside the third one (sub-record 4); then B is split
    # and its children get records the application never saw.
    # (Their partition keys hash into B's range: the reader drops sub-records that belong to another shard.)
    keys = (f"b{n}" for n in range(10_000))
    in_b = [k for k in keys if int(hashlib.md5(k.encode()).hexdigest(), 16) >= int(hash_of[split_parent])]
    users = [(in_b[i], f"agg-{i:02d}") for i in range(50)]
    aggregates = put_aggregated(
        kinesis, stream_name, users, records_per_aggregate=10, explicit_hash_key=hash_of[split_parent]
    )
    assert {a.shard_id for a in aggregates} == {split_parent}
    children = split_shard(kinesis, stream_name, split_parent)
    after_split = [f"child-{i}" for i in range(20)]
    put_plain(kinesis, stream_name, [(f"c{i}", d) for i, d in enumerate(after_split)])
    checkpoint_a = on_a[11][0]
    table = lease_table(
        [
            _lease(plain_shard, checkpoint_a, sub=0),
            _lease(split_parent, aggregates[2].sequence_number, sub=4),
            # KCL creates the children's leases at TRIM_HORIZON when it reaches the parent's end.
        ]
        + [_lease(child, "TRIM_HORIZON") for child in children]
    )
    out, _ = _positions(capsys, ministack, table, stream_name)
    # Everything after the checkpoints: shard A after record 11, shard B from sub-record 5 of the third aggregate
    # (B's plain records came before the aggregates, so were all processed), and the children.
    expected = [d for _, d in on_a[12:]] + [d for _, d in users[25:]] + after_split
    collector = BatchCollector()
    query = start(
        reader(spark, kinesis_local, stream_name, startingPosition=out.strip()), collector, str(tmp_path / "chk")
    )
    try:
        wait_for(lambda: len(collector.data()) >= len(expected), query, what="the records not yet checkpointed")
        wait_for(lambda: query.lastProgress is not None, query, what="a progress report")
    finally:
        stop(query)
    assert on_b_plain, "shard B also held plain records before its aggregates"
    assert Counter(collector.data()) == Counter(expected)
