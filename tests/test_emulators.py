"""What the emulators do, pinned, so a new emulator version that changes it is noticed.

docs/emulators.md explains why each behaviour matters for the connector's tests. The helpers used
here (tests/harness/kinesis.py) are the ones every other test uses, so this also tests them.
"""

from __future__ import annotations

import datetime as dt
import time

import pytest
from harness import cbor, emulators
from harness.kinesis import (
    create_stream,
    deaggregate,
    list_shards,
    merge_shards,
    open_shards,
    put_aggregated,
    put_plain,
    read_shard,
    split_shard,
)


@pytest.fixture(params=["kinesis_local", "ministack"])
def endpoint(request) -> str:
    return request.getfixturevalue(request.param)


def test_create_put_read_round_trip(endpoint, kinesis_client_factory, stream_name, stream_cleanup):
    client = kinesis_client_factory(endpoint)
    create_stream(client, stream_cleanup(client, stream_name), shards=3)
    assert len(open_shards(client, stream_name)) == 3
    records = [(f"key-{i}", f"value-{i}".encode()) for i in range(30)]
    puts = put_plain(client, stream_name, records)
    assert len(puts) == 30
    seen = []
    for shard in list_shards(client, stream_name):
        shard_records, _ = read_shard(client, stream_name, shard["ShardId"])
        seen.extend((r["PartitionKey"], r["Data"]) for r in shard_records)
    assert sorted(seen) == sorted(records)


def test_kpl_aggregated_records_round_trip(endpoint, kinesis_client_factory, stream_name, stream_cleanup):
    client = kinesis_client_factory(endpoint)
    create_stream(client, stream_cleanup(client, stream_name), shards=1)
    payloads = [f"user-record-{i}".encode() for i in range(25)]
    puts = put_aggregated(client, stream_name, payloads, records_per_aggregate=10)
    assert [p.user_records for p in puts] == [10, 10, 5]
    shard = list_shards(client, stream_name)[0]["ShardId"]
    records, _ = read_shard(client, stream_name, shard)
    assert len(records) == 3  # three Kinesis records ...
    assert records[0]["Data"][:4] == b"\xf3\x89\x9a\xc2"  # ... in the KPL format (magic bytes)
    assert deaggregate(records) == payloads  # ... holding 25 user records, in order


def test_millis_behind_latest_and_at_timestamp(endpoint, kinesis_client_factory, stream_name, stream_cleanup):
    client = kinesis_client_factory(endpoint)
    create_stream(client, stream_cleanup(client, stream_name), shards=1)
    put_plain(client, stream_name, [b"early-0", b"early-1", b"early-2"])
    time.sleep(1.0)
    boundary = dt.datetime.now(dt.UTC)
    time.sleep(0.2)
    put_plain(client, stream_name, [b"late-0", b"late-1"])
    shard = list_shards(client, stream_name)[0]["ShardId"]

    iterator = client.get_shard_iterator(StreamName=stream_name, ShardId=shard, ShardIteratorType="TRIM_HORIZON")[
        "ShardIterator"
    ]
    first = client.get_records(ShardIterator=iterator, Limit=1)
    assert first["MillisBehindLatest"] >= 500  # behind by about the sleep
    rest = client.get_records(ShardIterator=first["NextShardIterator"])
    tip = client.get_records(ShardIterator=rest["NextShardIterator"])
    assert tip["Records"] == []
    assert tip["MillisBehindLatest"] == 0
    assert tip["NextShardIterator"]

    after, _ = read_shard(client, stream_name, shard, iterator_type="AT_TIMESTAMP", Timestamp=boundary)
    assert [r["Data"] for r in after] == [b"late-0", b"late-1"]


def test_kinesis_local_keeps_closed_parents(kinesis_local, kinesis_client_factory, stream_name):
    """Like AWS: after a split or merge the parents stay listed and readable to their end, and the
    last GetRecords of a closed shard has no NextShardIterator and names the ChildShards."""
    client = kinesis_client_factory(kinesis_local)
    create_stream(client, stream_name, shards=1)
    put_plain(client, stream_name, [f"r{i}".encode() for i in range(10)])
    parent = list_shards(client, stream_name)[0]["ShardId"]

    children = split_shard(client, stream_name, parent)
    shards = {s["ShardId"]: s for s in list_shards(client, stream_name)}
    assert parent in shards
    # kinesis-local closes a shard with EndingSequenceNumber = Long.MaxValue, not the last record's.
    assert shards[parent]["SequenceNumberRange"]["EndingSequenceNumber"] == str(2**63 - 1)
    records, last = read_shard(client, stream_name, parent)
    assert len(records) == 10
    assert last.get("NextShardIterator") is None
    assert sorted(c["ShardId"] for c in last["ChildShards"]) == sorted(children)
    assert {c["ShardId"] for c in open_shards(client, stream_name)} == set(children)

    merged = merge_shards(client, stream_name, children[0], children[1])
    _, last = read_shard(client, stream_name, children[0])
    assert last.get("NextShardIterator") is None
    assert [c["ShardId"] for c in last["ChildShards"]] == [merged]
    assert sorted(last["ChildShards"][0]["ParentShards"]) == sorted(children)
    assert [s["ShardId"] for s in open_shards(client, stream_name)] == [merged]


def test_ministack_deletes_parents_on_split(ministack, kinesis_client_factory, stream_name):
    """Unlike AWS: ministack drops the parent shard (and its records) when it splits it. Tests of
    resharding must use kinesis-local."""
    client = kinesis_client_factory(ministack)
    create_stream(client, stream_name, shards=1)
    put_plain(client, stream_name, [b"lost"])
    parent = list_shards(client, stream_name)[0]["ShardId"]
    children = split_shard(client, stream_name, parent)
    assert parent not in {s["ShardId"] for s in list_shards(client, stream_name)}
    assert len(children) == 2
    with pytest.raises(client.exceptions.ResourceNotFoundException):
        client.get_shard_iterator(StreamName=stream_name, ShardId=parent, ShardIteratorType="TRIM_HORIZON")


def test_cbor_requests(kinesis_local, ministack, kinesis_client_factory, stream_name):
    """The AWS Java SDK speaks CBOR unless -Daws.cborEnabled=false (or env CBOR_ENABLED=false).

    kinesis-local answers CBOR with integer epoch-millisecond timestamps, which the SDK reads.
    ministack 1.5.33 as installed from PyPI lacks its cbor2 dependency and rejects CBOR with a
    SerializationException; with cbor2 present it would encode timestamps in epoch *seconds*,
    which the SDK misreads as milliseconds (dates in January 1970). So against ministack the JVM
    must run with CBOR off.
    """
    for endpoint in (kinesis_local, ministack):
        create_stream(kinesis_client_factory(endpoint), stream_name, shards=1)

    status, content_type, body = cbor.call(kinesis_local, "DescribeStreamSummary", {"StreamName": stream_name})
    assert status == 200 and "cbor" in content_type
    stamp = body["StreamDescriptionSummary"]["StreamCreationTimestamp"]
    stamp = stamp.value if isinstance(stamp, cbor.Tagged) else stamp
    assert isinstance(stamp, int)
    assert abs(stamp / 1000 - time.time()) < 600  # milliseconds, and recent

    status, _, body = cbor.call(ministack, "DescribeStreamSummary", {"StreamName": stream_name})
    if status == 200:  # a ministack with cbor2: check the timestamp unit it uses
        stamp = body["StreamDescriptionSummary"]["StreamCreationTimestamp"]
        stamp = stamp.value if isinstance(stamp, cbor.Tagged) else stamp
        assert stamp < 10**11, "ministack now sends milliseconds; update docs/emulators.md"
    else:
        assert status == 400
        assert "SerializationException" in str(body)


def test_cbor_codec_round_trip():
    value = {
        "a": [1, -1, 23, 24, 255, 256, 65536, 2**32, -(2**40)],
        "b": b"\x00\xff" * 40,
        "c": "text é",
        "d": 1.5,
        "e": None,
        "f": True,
        "t": cbor.Tagged(1, 1_700_000_000_000),
    }
    assert cbor.loads(cbor.dumps(value)) == value


def test_emulator_failure_reports_log_tail(tmp_path, monkeypatch):
    """A process that dies before answering yields an error that quotes its log."""
    monkeypatch.setattr(emulators, "RUN_DIR", tmp_path)

    def fake_command(kind, port, extra_ports, tls=False):
        script = "import sys; print('boom: cannot start'); sys.exit(3)"
        return [__import__("sys").executable, "-c", script], tmp_path, {}

    monkeypatch.setattr(emulators, "_command", fake_command)
    with pytest.raises(emulators.EmulatorError, match=r"(?s)exited with code 3.*boom: cannot start"):
        emulators.start("ministack", timeout=10)
