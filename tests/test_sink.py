"""The sink end to end: the shaded jar in a real Spark session writing through the real KPL (and its
native process) to kinesis-local over TLS, read back with an independent decoder and with our source.

kinesis-local serves TLS with a self-signed certificate on its TLS port (the KPL speaks only HTTPS),
so the sink runs with ``kinesis.sink.verifyCertificate=false``. KPL 0.x called STS GetCallerIdentity
before its first write; KPL 1.1.1 calls none, but the tests still point ``kinesis.sink.stsEndpointUrl``
(accepted, unused) at ministack started with TLS. These
tests start their own emulators (the session fixtures expose only plain ports), and the failure test
one more kinesis-local, which it freezes with SIGSTOP.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from harness import emulators, kpl
from harness.jvm import producer_processes
from harness.kinesis import MAX_HASH_KEY, create_stream, list_shards, merge_shards, open_shards, read_shard, split_shard
from streaming import reader, stop, wait_batches, wait_for

pytestmark = pytest.mark.emulator


@dataclass(frozen=True)
class TlsEmulator:
    plain: str  # http:// endpoint for boto3 and our source
    tls: str  # https:// endpoint for the sink (the KPL)
    emulator: emulators.Emulator


def _start_tls_emulator() -> TlsEmulator:
    emulator = emulators.start("kinesis-local")
    return TlsEmulator(emulator.endpoint, emulator.tls_endpoint, emulator)


@pytest.fixture(scope="module")
def sts_tls() -> Iterator[str]:
    """An HTTPS STS endpoint (ministack with a self-signed certificate); KPL 0.x called GetCallerIdentity there."""
    with emulators.running("ministack", tls=True) as emulator:
        _STS["url"] = emulator.endpoint
        yield emulator.endpoint


@pytest.fixture(scope="module")
def tls_kinesis(sts_tls: str) -> Iterator[TlsEmulator]:
    emu = _start_tls_emulator()
    try:
        yield emu
    finally:
        emu.emulator.stop()


_STS: dict[str, str] = {}


@pytest.fixture
def kinesis(tls_kinesis: TlsEmulator) -> Any:
    return emulators.kinesis_client(tls_kinesis.plain)


# Both producers: the KPL (a native process) and the in-JVM one (kinesis.sink.producer=JAVA).
PRODUCERS = ["KPL", "JAVA"]


def sink_options(endpoint: str, stream: str, producer: str = "KPL", **extra: str) -> dict[str, str]:
    options = {
        "kinesis.endpointUrl": endpoint,
        "kinesis.region": emulators.REGION,
        "kinesis.streamName": stream,
        "kinesis.sink.verifyCertificate": "false",
    }
    if producer == "KPL":
        options["kinesis.sink.stsEndpointUrl"] = _STS["url"]  # the KPL's own option, refused under JAVA
    else:
        options["kinesis.sink.producer"] = producer
    options.update({k if k.startswith("kinesis.") else f"kinesis.{k}": v for k, v in extra.items()})
    return options


def batch_write(df: Any, endpoint: str, stream: str, producer: str = "KPL", **extra: str) -> None:
    options = sink_options(endpoint, stream, producer, **extra)
    df.write.format("aws-kinesis").mode("append").options(**options).save()


# --- the rows written and what came back ------------------------------------------------------------


@dataclass(frozen=True)
class Written:
    partition_key: str
    explicit_hash_key: str | None
    data: bytes


def make_rows(n: int, shards: list[dict[str, Any]], *, seed: int = 7) -> list[Written]:
    """Rows with binary data of varied length (non-UTF-8 bytes included), 50 partition keys, and an
    explicit hash key on every 5th row that points into a shard chosen round-robin."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        data = f"row-{i}|".encode() + bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40)))
        ehk = None
        if i % 5 == 0:
            shard = shards[(i // 5) % len(shards)]["HashKeyRange"]
            ehk = str(int(shard["StartingHashKey"]) + rng.randrange(1000))
        rows.append(Written(f"key-{i % 50}", ehk, data))
    return rows


def dataframe(spark: Any, rows: list[Written], partitions: int = 2) -> Any:
    from pyspark.sql.types import BinaryType, StringType, StructField, StructType

    schema = StructType(
        [
            StructField("partitionKey", StringType()),
            StructField("data", BinaryType()),
            StructField("explicitHashKey", StringType()),
        ]
    )
    data = [(r.partition_key, bytearray(r.data), r.explicit_hash_key) for r in rows]
    return spark.createDataFrame(data, schema).repartition(partitions)


@dataclass(frozen=True)
class Landed:
    shard_id: str
    aggregated: bool
    record: kpl.UserRecord


def read_raw(client: Any, stream: str) -> tuple[list[Landed], int]:
    """Every user record in the stream, decoded here; and the number of Kinesis records."""
    landed: list[Landed] = []
    kinesis_records = 0
    for shard in list_shards(client, stream):
        records, _ = read_shard(client, stream, shard["ShardId"], max_calls=200)
        kinesis_records += len(records)
        for record in records:
            data = bytes(record["Data"])
            if kpl.is_aggregated(data):
                for user in kpl.decode(data):
                    landed.append(Landed(shard["ShardId"], True, user))
            else:
                landed.append(Landed(shard["ShardId"], False, kpl.UserRecord(record["PartitionKey"], None, data)))
    return landed, kinesis_records


def check_round_trip(client: Any, stream: str, rows: list[Written], *, aggregated: bool) -> list[Landed]:
    """Exactly the rows, byte for byte, each on the shard its hash key belongs to."""
    landed, kinesis_records = read_raw(client, stream)
    assert len(landed) == len(rows)
    by_data = {r.data: r for r in rows}
    assert len(by_data) == len(rows)
    assert Counter(item.record.data for item in landed) == Counter(r.data for r in rows)
    ranges = {
        s["ShardId"]: (int(s["HashKeyRange"]["StartingHashKey"]), int(s["HashKeyRange"]["EndingHashKey"]))
        for s in list_shards(client, stream)
    }
    for item in landed:
        sent = by_data[item.record.data]
        assert item.record.partition_key == sent.partition_key
        if item.aggregated:
            assert item.record.explicit_hash_key == sent.explicit_hash_key
        # GetRecords does not return a plain record's explicit hash key: its shard shows where it went.
        expected = kpl.UserRecord(sent.partition_key, sent.explicit_hash_key, sent.data).hash_key()
        low, high = ranges[item.shard_id]
        assert low <= expected <= high, f"{sent} landed on {item.shard_id} {ranges[item.shard_id]}"
    assert len({item.shard_id for item in landed}) == len(ranges)
    if aggregated:
        # Until the KPL has fetched the shard map of a stream it has not written to before (ListShards), it
        # cannot tell which rows share a shard and sends each row as a plain record; it aggregates afterwards.
        assert any(item.aggregated for item in landed)
        assert kinesis_records < len(rows)
    else:
        assert not any(item.aggregated for item in landed)
        assert kinesis_records == len(rows)
    return landed


def read_with_source(spark: Any, endpoint: str, stream: str, checkpoint: str, n: int) -> list[tuple[bytes, str]]:
    """(data, partitionKey) of every row our source reads from the stream."""
    seen: list[tuple[bytes, str]] = []
    lock = threading.Lock()

    def collect(df: Any, _batch_id: int) -> None:
        rows = [(bytes(r["data"]), r["partitionKey"]) for r in df.select("data", "partitionKey").collect()]
        with lock:
            seen.extend(rows)

    df = reader(spark, endpoint, stream, startingPosition="TRIM_HORIZON")
    query = df.writeStream.foreachBatch(collect).option("checkpointLocation", checkpoint).start()
    try:
        wait_for(lambda: len(seen) >= n, query, what=f"{n} rows")
        wait_batches(query, 2)
    finally:
        stop(query)
    return seen


# --- round trips ----------------------------------------------------------------------------------


@pytest.mark.smoke
@pytest.mark.parametrize("producer", PRODUCERS)
def test_batch_write_aggregated_round_trip(
    spark: Any, tls_kinesis: TlsEmulator, kinesis: Any, stream_name: str, tmp_path: Path, producer: str
) -> None:
    create_stream(kinesis, stream_name, 4)
    rows = make_rows(3000, list_shards(kinesis, stream_name))
    first, second = rows[:600], rows[600:]
    batch_write(dataframe(spark, first, partitions=2), tls_kinesis.tls, stream_name, producer)
    before = {item.record.data for item in read_raw(kinesis, stream_name)[0]}
    # The producer now knows the stream's shards: the second write is aggregated throughout.
    batch_write(dataframe(spark, second, partitions=3), tls_kinesis.tls, stream_name, producer)
    landed = check_round_trip(kinesis, stream_name, rows, aggregated=True)
    later = [item for item in landed if item.record.data not in before]
    assert len(later) == len(second)
    assert sum(item.aggregated for item in later) >= 0.95 * len(second)
    assert len({item.record.explicit_hash_key for item in later if item.aggregated}) > 100
    seen = read_with_source(spark, tls_kinesis.plain, stream_name, str(tmp_path / "chk"), len(rows))
    assert Counter(seen) == Counter((r.data, r.partition_key) for r in rows)


@pytest.mark.smoke
@pytest.mark.parametrize("producer", PRODUCERS)
def test_streaming_write_round_trip(
    spark: Any, tls_kinesis: TlsEmulator, kinesis: Any, stream_name: str, tmp_path: Path, producer: str
) -> None:
    """A file stream of JSON rows (string data) written by a streaming query, in several batches. The in-JVM
    producer writes over plain HTTP (the KPL speaks only HTTPS)."""
    import json

    create_stream(kinesis, stream_name, 3)
    shards = list_shards(kinesis, stream_name)
    rows = [
        Written(r.partition_key, r.explicit_hash_key, f"event-{i}-é€".encode())
        for i, r in enumerate(make_rows(1500, shards))
    ]
    source_dir = tmp_path / "in"
    source_dir.mkdir()
    for part in range(3):
        lines = [
            json.dumps(
                {"partitionKey": r.partition_key, "data": r.data.decode(), "explicitHashKey": r.explicit_hash_key}
            )
            for r in rows[part * 500 : (part + 1) * 500]
        ]
        (source_dir / f"part-{part}.json").write_text("\n".join(lines) + "\n")
    stream_df = (
        spark.readStream.schema("partitionKey STRING, data STRING, explicitHashKey STRING")
        .option("maxFilesPerTrigger", 1)
        .json(str(source_dir))
    )
    endpoint = tls_kinesis.tls if producer == "KPL" else tls_kinesis.plain
    query = (
        stream_df.writeStream.format("aws-kinesis")
        .options(**sink_options(endpoint, stream_name, producer))
        .option("checkpointLocation", str(tmp_path / "sink-chk"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120), "the streaming write did not finish"
    assert query.exception() is None
    assert len([p for p in query.recentProgress if p["numInputRows"] > 0]) == 3
    check_round_trip(kinesis, stream_name, rows, aggregated=True)
    seen = read_with_source(spark, tls_kinesis.plain, stream_name, str(tmp_path / "chk"), len(rows))
    assert Counter(seen) == Counter((r.data, r.partition_key) for r in rows)


@pytest.mark.parametrize("producer", PRODUCERS)
def test_aggregation_off_writes_one_kinesis_record_per_row(
    spark: Any, tls_kinesis: TlsEmulator, kinesis: Any, stream_name: str, producer: str
) -> None:
    create_stream(kinesis, stream_name, 2)
    rows = make_rows(400, list_shards(kinesis, stream_name), seed=11)
    batch_write(dataframe(spark, rows), tls_kinesis.tls, stream_name, producer, **{"sink.aggregationEnabled": "false"})
    check_round_trip(kinesis, stream_name, rows, aggregated=False)


def test_java_producer_refuses_the_kpl_options_naming_the_producer(spark: Any, tls_kinesis: TlsEmulator) -> None:
    df = spark.range(1).selectExpr("'k' AS partitionKey", "'d' AS data")
    for option, value in [("sink.threadingModel", "POOLED"), ("sink.stsEndpointUrl", "https://sts.local")]:
        with pytest.raises(Exception) as error:
            batch_write(df, tls_kinesis.plain, "never-created", "JAVA", **{option: value})
        message = str(error.value)
        assert f"kinesis.{option}" in message and "kinesis.sink.producer is JAVA" in message, message


def _start(shard: dict[str, Any]) -> int:
    return int(shard["HashKeyRange"]["StartingHashKey"])


def test_java_producer_streaming_write_through_a_split_and_a_merge(
    spark: Any, tls_kinesis: TlsEmulator, kinesis: Any, stream_name: str, tmp_path: Path
) -> None:
    """kinesis.sink.producer=JAVA: a streaming write goes on while its stream is split and then merged. No row is
    lost to a KCL reader (KCL 3.5.1's de-aggregation, which drops an aggregate with any sub-record outside its
    shard's hash-key range) nor to our source. An aggregate made for a shard that was split meanwhile lands on one
    child with rows of the other; the producer puts every row of it again."""
    import json

    create_stream(kinesis, stream_name, 2)
    files, per_file = 16, 250
    rows = [Written(f"user-{i % 997}", None, f"reshard-{i}".encode()) for i in range(files * per_file)]
    source_dir = tmp_path / "in"
    source_dir.mkdir()
    for part in range(files):
        lines = [json.dumps({"partitionKey": r.partition_key, "data": r.data.decode()}) for r in rows[part::files]]
        (source_dir / f"part-{part:02d}.json").write_text("\n".join(lines) + "\n")
    stream_df = (
        spark.readStream.schema("partitionKey STRING, data STRING")
        .option("maxFilesPerTrigger", 1)
        .json(str(source_dir))
    )
    options = sink_options(tls_kinesis.plain, stream_name, "JAVA", **{"sink.recordMaxBufferedTimeMs": "200"})
    query = (
        stream_df.writeStream.format("aws-kinesis")
        .options(**options)
        .option("checkpointLocation", str(tmp_path / "sink-chk"))
        .trigger(processingTime="500 milliseconds")
        .start()
    )

    def written() -> int:
        return sum(p["numInputRows"] for p in query.recentProgress)

    try:
        wait_for(lambda: written() >= 4 * per_file, query, what="4 batches written")
        first, second = sorted(
            open_shards(kinesis, stream_name), key=lambda s: int(s["HashKeyRange"]["StartingHashKey"])
        )
        children = split_shard(kinesis, stream_name, first["ShardId"])
        wait_for(lambda: written() >= 9 * per_file, query, what="9 batches written")
        upper = max(
            (s for s in list_shards(kinesis, stream_name) if s["ShardId"] in children),
            key=_start,
        )
        merge_shards(kinesis, stream_name, upper["ShardId"], second["ShardId"])
        wait_for(lambda: written() >= len(rows), query, what="every row written")
    finally:
        stop(query)
    assert query.exception() is None

    assert len(list_shards(kinesis, stream_name)) == 5  # 2 parents, 2 children of the split, 1 of the merge
    kcl = Counter(u["data"] for u in _kcl_read(tls_kinesis.plain, stream_name))
    lost = [r.data for r in rows if kcl[r.data] == 0]
    assert not lost, f"{len(lost)} rows lost to a KCL reader, such as {lost[:3]}"
    assert set(kcl) == {r.data for r in rows}
    print(f"{len(rows)} rows, {sum(kcl.values())} copies a KCL reader gets")
    seen = read_with_source(spark, tls_kinesis.plain, stream_name, str(tmp_path / "chk"), len(rows))
    assert {data for data, _ in seen} == {r.data for r in rows}


# --- the JAVA producer's aggregates, read by the KCL and by aws-kinesis-agg ---------------------------


def _java_aggregated_write(
    spark: Any, tls_kinesis: TlsEmulator, kinesis: Any, stream: str
) -> tuple[list[Written], dict[str, tuple[int, int]]]:
    """Rows as make_rows (an explicit hash key on every 5th) with a non-ASCII partition key on every 7th, written
    aggregated by the JAVA producer to 4 shards, at most 20 rows per aggregate. Returns the rows and each shard's
    hash-key range."""
    create_stream(kinesis, stream, 4)
    shards = list_shards(kinesis, stream)
    rows = [
        Written(f"clé-{i % 6}-€" if i % 7 == 3 else r.partition_key, r.explicit_hash_key, r.data)
        for i, r in enumerate(make_rows(400, shards, seed=23))
    ]
    batch_write(dataframe(spark, rows), tls_kinesis.plain, stream, "JAVA", **{"sink.aggregationMaxCount": "20"})
    ranges = {
        s["ShardId"]: (int(s["HashKeyRange"]["StartingHashKey"]), int(s["HashKeyRange"]["EndingHashKey"]))
        for s in shards
    }
    return rows, ranges


def test_java_producer_aggregates_deaggregate_with_aws_kinesis_agg(
    spark: Any, tls_kinesis: TlsEmulator, kinesis: Any, stream_name: str
) -> None:
    """AWS's Python de-aggregator (aws-kinesis-agg) reads back every row, partition key and explicit hash key
    included, from the raw records of each shard; each sub-record's hash key lies in its shard's range."""
    import base64

    from aws_kinesis_agg.deaggregator import iter_deaggregate_records

    rows, ranges = _java_aggregated_write(spark, tls_kinesis, kinesis, stream_name)
    by_data = {r.data: r for r in rows}
    seen: list[tuple[str, bytes]] = []
    kinesis_records = aggregated = 0
    for shard_id, (low, high) in ranges.items():
        records, _ = read_shard(kinesis, stream_name, shard_id, max_calls=200)
        kinesis_records += len(records)
        for user in iter_deaggregate_records(records, data_format="Boto3"):
            record = user["kinesis"]
            # The library hands back a sub-record's data base64-encoded, a plain record's as it came.
            is_sub = record.get("aggregated") is True
            data = base64.b64decode(record["data"]) if is_sub else bytes(record["data"])
            aggregated += is_sub
            seen.append((record["partitionKey"], data))
            sent = by_data.get(data)
            assert sent is not None, f"{data!r} was never written"
            # aws-kinesis-agg 1.2.3 gives a sub-record without a hash key index the table's first explicit hash
            # key (it reads the index without checking that it is set), so only the rows that had one are compared.
            explicit = None
            if sent.explicit_hash_key is not None and is_sub:
                explicit = record["explicitHashKey"]
                assert explicit == sent.explicit_hash_key
            key = kpl.UserRecord(record["partitionKey"], explicit, data).hash_key()
            assert low <= key <= high, f"{sent} read from {shard_id} [{low}, {high}]"
    print(f"{len(rows)} rows in {kinesis_records} Kinesis records, {aggregated} of them in aggregates")
    assert Counter(seen) == Counter((r.partition_key, r.data) for r in rows)
    assert aggregated > len(rows) // 2
    assert kinesis_records < len(rows)


def _kcl_read(endpoint: str, stream: str) -> list[dict[str, Any]]:
    """Every user record of the stream as a KCL worker gets it: each shard read with GetRecords and de-aggregated by
    the KCL's AggregatorUtil (KCL 3.5.1, tests/kcl-app's DeaggregateApp) given the shard's hash-key range, which
    drops an aggregate with any sub-record outside it. One dict per record (shardId, sequenceNumber, aggregated,
    partitionKey, explicitHashKey, data as bytes)."""
    import base64
    import json
    import subprocess

    from conftest import TEST_ENV
    from harness.jvm import LEAN_JIT
    from test_kcl3_handover import _classpath

    done = subprocess.run(
        [
            "java",
            *LEAN_JIT.split(),
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp",
            _classpath(),
            "io.sparkkinesis.kclapp.DeaggregateApp",
        ],
        env={**os.environ, **TEST_ENV, "KCL_APP_KINESIS_ENDPOINT": endpoint, "KCL_APP_STREAM": stream},
        capture_output=True,
        text=True,
        timeout=300,  # only stops a run that hangs
        check=False,
    )
    assert done.returncode == 0, f"DeaggregateApp failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
    users = [json.loads(line) for line in done.stdout.splitlines()]
    for user in users:
        user["data"] = base64.b64decode(user["data"])
    return users


def test_java_producer_aggregates_deaggregate_with_the_kcl(
    spark: Any, tls_kinesis: TlsEmulator, kinesis: Any, stream_name: str
) -> None:
    """The KCL's own de-aggregation (AggregatorUtil in KCL 3.5.1, through tests/kcl-app's DeaggregateApp) returns
    exactly the rows written, keys included. It is given each shard's hash-key range, as a KCL worker does, and
    drops an aggregate with any sub-record outside it: so every aggregate is whole on its shard."""
    rows, ranges = _java_aggregated_write(spark, tls_kinesis, kinesis, stream_name)
    users = _kcl_read(tls_kinesis.plain, stream_name)
    assert Counter((u["partitionKey"], u["data"]) for u in users) == Counter((r.partition_key, r.data) for r in rows)
    by_data = {r.data: r for r in rows}
    for user in users:
        sent = by_data[user["data"]]
        low, high = ranges[user["shardId"]]
        assert low <= kpl.UserRecord(sent.partition_key, sent.explicit_hash_key, sent.data).hash_key() <= high
        # GetRecords does not return a plain record's explicit hash key; a sub-record carries its own.
        if user["aggregated"]:
            assert user["explicitHashKey"] == sent.explicit_hash_key
    kinesis_records = len({(u["shardId"], u["sequenceNumber"]) for u in users})
    aggregated = sum(u["aggregated"] for u in users)
    print(f"{len(rows)} rows in {kinesis_records} Kinesis records, {aggregated} of them in aggregates")
    assert {u["shardId"] for u in users} == set(ranges)
    assert aggregated > len(rows) // 2
    assert kinesis_records < len(rows)


# --- the native process ---------------------------------------------------------------------------


def test_a_kpl_that_cannot_start_is_named_with_the_fix_and_java_writes(
    spark: Any, tls_kinesis: TlsEmulator, kinesis: Any, stream_name: str, tmp_path: Path
) -> None:
    """Where the KPL's native process cannot start (no binary for the platform, a temp directory it cannot use),
    the write fails naming the platform, the temp directory and kinesis.sink.producer=JAVA; with JAVA the same write
    works. Simulated in this JVM: its temp directory holds a file where the KPL extracts its binaries."""
    create_stream(kinesis, stream_name, 1)
    temp = tmp_path / "tmp"
    temp.mkdir()
    (temp / "amazon-kinesis-producer-native-binaries").write_text("not a directory")
    rows = [(f"k{i}", f"no-kpl-{i}") for i in range(20)]
    df = spark.createDataFrame(rows, "partitionKey STRING, data STRING").coalesce(1)
    system = spark._jvm.java.lang.System
    previous = system.getProperty("java.io.tmpdir")
    system.setProperty("java.io.tmpdir", str(temp))
    try:
        with pytest.raises(Exception) as error:
            # Settings of its own, so that the pool starts a KPL for it instead of lending one that runs.
            batch_write(df, tls_kinesis.tls, stream_name, "KPL", **{"sink.rateLimit": "149"})
        message = str(error.value)
        assert "could not start its native process on this executor" in message, message
        assert str(temp) in message and "kinesis.sink.producer=JAVA" in message, message
        batch_write(df, tls_kinesis.tls, stream_name, "JAVA")
    finally:
        system.setProperty("java.io.tmpdir", previous)
    shard = list_shards(kinesis, stream_name)[0]["ShardId"]
    records, _ = read_shard(kinesis, stream_name, shard)
    landed = []
    for record in records:
        data = bytes(record["Data"])
        landed += [u.data.decode() for u in kpl.decode(data)] if kpl.is_aggregated(data) else [data.decode()]
    assert sorted(landed) == sorted(d for _, d in rows)


def _hex_forms(text: str) -> list[bytes]:
    """How a value can show up on a command line: as is, or hex-encoded (either case)."""
    raw = text.encode()
    return [raw.lower(), raw.hex().encode()]


def _carries(cmdline: bytes, text: str) -> bool:
    lowered = cmdline.lower()
    return any(form in lowered for form in _hex_forms(text))


def test_native_process_command_line_carries_no_secret(
    spark: Any, tls_kinesis: TlsEmulator, kinesis: Any, stream_name: str
) -> None:
    """KPL 1.x hands credentials to its native process only over its private pipe. A write with static
    keys of its own gets a producer of its own (the pool is keyed by credentials too), whose command
    line, readable by any local user in /proc/<pid>/cmdline, must hold none of them in any encoding.
    (KPL 0.x put them there hex-encoded, after -k and -w.)"""
    create_stream(kinesis, stream_name, 1)
    unique = os.urandom(6).hex()
    secrets = {
        "awsAccessKeyId": f"AKIACMDLINE{unique.upper()}",
        "awsSecretKey": f"cmdline-secret-{unique}",
        "sessionToken": f"cmdline-token-{unique}",
    }
    jvm_pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
    before = set(producer_processes(jvm_pid))
    rows = make_rows(20, list_shards(kinesis, stream_name))
    batch_write(dataframe(spark, rows), tls_kinesis.tls, stream_name, **secrets)
    assert len(read_raw(kinesis, stream_name)[0]) == len(rows)
    started = set(producer_processes(jvm_pid)) - before
    assert len(started) == 1, f"expected one new kinesis_producer for the new credentials, got {started}"
    pid = started.pop()
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    arguments = cmdline.split(b"\0")
    # The check sees hex-encoded values: the configuration (-c) is one, and carries the endpoint's host.
    host = tls_kinesis.tls.split("://", 1)[1].rsplit(":", 1)[0]
    assert b"-c" in arguments and _carries(arguments[arguments.index(b"-c") + 1], host)
    assert b"-k" not in arguments and b"-w" not in arguments
    for name, value in secrets.items():
        assert not _carries(cmdline, value), f"the native process's command line carries {name}"
    environ = Path(f"/proc/{pid}/environ").read_bytes()
    for value in secrets.values():
        assert not _carries(environ, value)


def test_closing_the_producers_leaves_no_native_process_behind(
    spark: Any, tls_kinesis: TlsEmulator, kinesis: Any, stream_name: str
) -> None:
    """What the executor's shutdown hook does: flush and stop every producer and its native process."""
    create_stream(kinesis, stream_name, 1)
    batch_write(dataframe(spark, make_rows(10, list_shards(kinesis, stream_name))), tls_kinesis.tls, stream_name)
    jvm_pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
    assert producer_processes(jvm_pid)
    spark._jvm.io.sparkkinesis.sink.ProducerPool.closeAll()
    wait_for(lambda: not producer_processes(jvm_pid), what="no native producer process left")


# --- bad input --------------------------------------------------------------------------------------

SCHEMA_ERRORS = {
    "missing data": ("CAST(id AS STRING) AS partitionKey", ["needs a column 'data'", "binary or string"]),
    "data of a wrong type": (
        "CAST(id AS STRING) AS partitionKey, id AS data",
        ["Column 'data' has type bigint", "binary or string"],
    ),
    "missing partition key": ("CAST(id AS STRING) AS data", ["needs a column 'partitionKey'", "string"]),
    "partition key of a wrong type": (
        "id AS partitionKey, CAST(id AS STRING) AS data",
        ["Column 'partitionKey' has type bigint", "accepts string"],
    ),
    "explicit hash key of a wrong type": (
        "CAST(id AS STRING) AS partitionKey, CAST(id AS STRING) AS data, id AS explicitHashKey",
        ["Column 'explicitHashKey' has type bigint", "accepts string"],
    ),
    "an unknown column": (
        "CAST(id AS STRING) AS partitionKey, CAST(id AS STRING) AS data, id AS partitionKy",
        ["Column 'partitionKy' is not one the Kinesis sink writes", "partitionKey (string, required)"],
    ),
}


@pytest.mark.parametrize("case", sorted(SCHEMA_ERRORS))
def test_schema_error_names_the_column_the_type_and_what_is_allowed(
    spark: Any, tls_kinesis: TlsEmulator, case: str, tmp_path: Path
) -> None:
    select, expected = SCHEMA_ERRORS[case]
    df = spark.range(3).selectExpr(*[s.strip() for s in select.split(", ")])
    with pytest.raises(Exception) as error:
        batch_write(df, tls_kinesis.tls, "never-created")
    for text in expected:
        assert text in str(error.value)
    # The streaming write is checked the same way, when it starts.
    stream_df = (
        spark.readStream.format("rate")
        .load()
        .selectExpr("value AS id")
        .selectExpr(*[s.strip() for s in select.split(", ")])
    )
    # The streaming write is planned on the driver when the query starts, in the query's thread.
    query = (
        stream_df.writeStream.format("aws-kinesis")
        .options(**sink_options(tls_kinesis.tls, "never-created"))
        .option("checkpointLocation", str(tmp_path / "chk"))
        .start()
    )
    with pytest.raises(Exception) as error:
        query.awaitTermination(60)
    query.stop()
    for text in expected:
        assert text in str(error.value)


BAD_ROWS = {
    "null partition key": ("CAST(NULL AS STRING)", "'x'", "NULL", "partitionKey is null"),
    "null data": ("'k'", "CAST(NULL AS STRING)", "NULL", "data is null"),
    "partition key too long": (
        "repeat('k', 257)",
        "'x'",
        "NULL",
        "partitionKey has 257 characters; Kinesis allows 1 to 256",
    ),
    "data too large": (
        "'k'",
        "repeat('x', 1048576)",
        "NULL",
        "the record is 1048577 bytes (1048576 bytes of data and a 1-byte partition key), over the stream's limit of "
        "1048576 bytes (MaxRecordSizeInKiB 1024); partition key 'k'",
    ),
    "explicit hash key not a number": ("'k'", "'x'", "'12ab'", "explicitHashKey '12ab' is not a decimal integer"),
    "explicit hash key out of range": (
        "'k'",
        "'x'",
        f"'{MAX_HASH_KEY + 1}'",
        f"explicitHashKey '{MAX_HASH_KEY + 1}' is out of range",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_ROWS))
def test_bad_row_fails_the_task_with_its_problem(
    spark: Any, tls_kinesis: TlsEmulator, kinesis: Any, stream_name: str, case: str
) -> None:
    key, data, hash_key, expected = BAD_ROWS[case]
    create_stream(kinesis, stream_name, 1)
    # Row 3 of the single partition is the bad one; rows 0-2 are fine.
    df = (
        spark.range(5)
        .coalesce(1)
        .selectExpr(
            f"IF(id = 3, {key}, CAST(id AS STRING)) AS partitionKey",
            f"IF(id = 3, {data}, CAST(id AS STRING)) AS data",
            f"CAST(IF(id = 3, {hash_key}, NULL) AS STRING) AS explicitHashKey",
        )
    )
    with pytest.raises(Exception) as error:
        batch_write(df, tls_kinesis.tls, stream_name)
    message = str(error.value)
    assert "Row 3 of partition 0 cannot be written to Kinesis" in message
    assert expected in message


def test_sink_endpoint_must_be_https(spark: Any, tls_kinesis: TlsEmulator) -> None:
    df = spark.range(1).selectExpr("'k' AS partitionKey", "'d' AS data")
    with pytest.raises(Exception) as error:
        batch_write(df, tls_kinesis.plain, "never-created")
    assert "speaks only HTTPS" in str(error.value) and tls_kinesis.plain in str(error.value)


def _condition(error: BaseException) -> tuple[str | None, str | None]:
    """The connector's error condition and SQLSTATE, as PySpark reads them from the captured JVM error."""
    condition = getattr(error, "getCondition", None) or getattr(error, "getErrorClass", None)
    assert condition is not None, f"not a captured JVM error: {error!r}"
    return condition(), error.getSqlState()  # type: ignore[attr-defined]


def test_a_write_to_a_missing_stream_fails_at_once_naming_the_stream_region_and_endpoint(
    spark: Any, tls_kinesis: TlsEmulator, tmp_path: Path
) -> None:
    """The driver checks the stream when the write starts. With a record TTL of two minutes, a write that only
    found out per row would take that long; the check answers in seconds."""
    df = spark.range(3).selectExpr("'k' AS partitionKey", "CAST(id AS STRING) AS data")
    expected = f"Stream never-created does not exist in region {emulators.REGION} at endpoint {tls_kinesis.tls}"
    began = time.monotonic()
    with pytest.raises(Exception) as error:
        batch_write(df, tls_kinesis.tls, "never-created", **{"sink.recordTtl": "120000"})
    assert time.monotonic() - began < 60  # half the record TTL that a per-row failure would wait out
    assert expected in str(error.value), str(error.value)[:2000]
    assert _condition(error.value) == ("KINESIS_STREAM_NOT_FOUND", "42704")

    query = (
        spark.readStream.format("rate")
        .load()
        .selectExpr("'k' AS partitionKey", "CAST(value AS STRING) AS data")
        .writeStream.format("aws-kinesis")
        .options(**sink_options(tls_kinesis.tls, "never-created", **{"sink.recordTtl": "120000"}))
        .option("checkpointLocation", str(tmp_path / "chk"))
        .start()
    )
    try:
        with pytest.raises(Exception) as streaming_error:
            query.awaitTermination(60)
    finally:
        query.stop()
    assert expected in str(streaming_error.value), str(streaming_error.value)[:2000]


# --- failure --------------------------------------------------------------------------------------


def test_emulator_stopped_mid_write_fails_the_task_and_the_retry_completes(
    spark: Any, sts_tls: str, stream_name: str
) -> None:
    """SIGSTOP freezes the emulator (its data survives, unlike a restart of the in-memory kinesis-local):
    the write must fail within the record TTL plus request timeouts, not hang and not succeed. After
    SIGCONT the same write, retried, completes, and no row is missing; the duplicates are counted and must lie
    between the rows the failed attempt had landed and the rows it tried to write."""
    emu = _start_tls_emulator()
    try:
        client = emulators.kinesis_client(emu.plain)
        create_stream(client, stream_name, 2)
        rows = make_rows(20100, list_shards(client, stream_name), seed=3)
        warm_up, main = rows[:100], rows[100:]
        options = {"sink.recordTtl": "5000", "sink.maxOutstandingRecords": "2000"}
        # A first small write lets the producer learn the stream's shards, so the main write is aggregated.
        batch_write(dataframe(spark, warm_up), emu.tls, stream_name, **options)
        warm_records = len(read_raw(client, stream_name)[0])
        df = dataframe(spark, main, partitions=2).cache()
        df.count()
        outcome: dict[str, BaseException | None] = {}

        def write() -> None:
            try:
                batch_write(df, emu.tls, stream_name, **options)
                outcome["error"] = None
            except BaseException as error:
                outcome["error"] = error

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        wait_for(lambda: len(read_raw(client, stream_name)[0]) > warm_records, what="main write's rows")
        assert writer.is_alive(), "the write finished before the emulator could be stopped: write more rows"
        os.killpg(emu.emulator.pid, signal.SIGSTOP)
        stopped = time.monotonic()
        try:
            # Bound: recordTtl 5 s + 2 x request timeout 6 s + 10 s, plus Spark's own overhead.
            writer.join(timeout=60)
            assert not writer.is_alive(), "the write hung with the emulator stopped"
        finally:
            os.killpg(emu.emulator.pid, signal.SIGCONT)
        error = outcome["error"]
        assert error is not None, "the write succeeded although the emulator was stopped"
        assert "was not written to stream" in str(error) and "attempt" in str(error), str(error)[:2000]
        print(f"the write failed {time.monotonic() - stopped:.1f}s after the stop")
        written_before = {item.record.data for item in read_raw(client, stream_name)[0]}
        assert len(written_before) < len(rows), "every row was written although the task failed"

        batch_write(df, emu.tls, stream_name, **options)
        landed, _ = read_raw(client, stream_name)
        assert {item.record.data for item in landed} == {r.data for r in rows}
        # At-least-once, counted and bounded. The retry writes every row of the failed attempt again, so each of
        # those rows that had landed before the retry is now there at least twice (a lower bound that proves the
        # count sees duplicates at all); and no more than one extra copy per row of the failed attempt is allowed
        # (rows written by the earlier, successful warm-up write must not repeat at all).
        copies = Counter(item.record.data for item in landed)
        duplicates = len(landed) - len(copies)
        main_data = {r.data for r in main}
        rewritten = written_before & main_data
        print(f"{duplicates} duplicate records; {len(rewritten)} rows had landed before the retry")
        assert all(copies[data] >= 2 for data in rewritten), "a row written before the retry was not written again"
        assert len(rewritten) <= duplicates <= len(main), (duplicates, len(rewritten), len(main))
        assert all(copies[r.data] == 1 for r in warm_up), "a row of the successful warm-up write was duplicated"
        df.unpersist()
    finally:
        emu.emulator.stop()


# --- the Python builders, end to end ----------------------------------------------------------------


def test_python_builders_write_and_read_back(
    spark: Any, tls_kinesis: TlsEmulator, kinesis: Any, stream_name: str, tmp_path: Path
) -> None:
    """KinesisSink writes a batch and a streaming DataFrame; KinesisSource reads every row back."""
    from spark_kinesis import KinesisSink, KinesisSource, StartingPosition

    create_stream(kinesis, stream_name, 2)
    sink = KinesisSink(
        stream_name=stream_name,
        region=emulators.REGION,
        endpoint_url=tls_kinesis.tls,
        verify_certificate=False,
        producer_sts_endpoint_url=_STS["url"],
        record_max_buffered_time_ms=200,
    )
    batch_rows = [(f"k{i % 9}", f"batch-{i}") for i in range(200)]
    sink.write(spark.createDataFrame(batch_rows, "partitionKey STRING, data STRING"))

    source_dir = tmp_path / "in"
    source_dir.mkdir()
    (source_dir / "part-0.json").write_text("\n".join(f'{{"k": "k{i % 9}", "v": "stream-{i}"}}' for i in range(150)))
    streaming = spark.readStream.schema("k STRING, v STRING").json(str(source_dir))
    query = sink.write_stream(
        streaming.selectExpr("k AS partitionKey", "v AS data"),
        checkpoint_location=str(tmp_path / "sink-chk"),
        query_name="builder_sink",
    )
    try:
        query.processAllAvailable()
    finally:
        query.stop()

    source = KinesisSource(
        stream_name=stream_name,
        region=emulators.REGION,
        endpoint_url=tls_kinesis.plain,
        starting_position=StartingPosition.trim_horizon(),
    )
    seen: list[tuple[str, str]] = []
    lock = threading.Lock()

    def collect(df: Any, _batch_id: int) -> None:
        rows = [(r["partitionKey"], bytes(r["data"]).decode()) for r in df.select("partitionKey", "data").collect()]
        with lock:
            seen.extend(rows)

    read = source.read_stream(spark).writeStream.foreachBatch(collect)
    read_query = read.option("checkpointLocation", str(tmp_path / "source-chk")).start()
    expected = batch_rows + [(f"k{i % 9}", f"stream-{i}") for i in range(150)]
    try:
        wait_for(lambda: len(seen) >= len(expected), read_query, what=f"{len(expected)} rows")
        wait_batches(read_query, 2)
    finally:
        stop(read_query)
    assert Counter(seen) == Counter(expected)


def test_example_enrich_write_back_runs_with_spark_submit(
    tls_kinesis: TlsEmulator, kinesis: Any, stream_name: str, tmp_path: Path
) -> None:
    """examples/enrich_write_back.py through spark-submit: every order lands enriched in the target stream."""
    import json

    from harness.kinesis import put_plain
    from test_examples import _spark_submit

    source, target = f"{stream_name}-in", f"{stream_name}-out"
    create_stream(kinesis, source, 2)
    create_stream(kinesis, target, 2)
    orders = [{"order": f"o{i}", "customer": f"c{i % 5}", "amount": float(i * 7 % 150)} for i in range(80)]
    put_plain(kinesis, source, [(o["customer"], json.dumps(o).encode()) for o in orders])
    result = _spark_submit(
        "enrich_write_back.py",
        "--source", source, "--target", target,
        "--endpoint", tls_kinesis.plain, "--sink-endpoint", tls_kinesis.tls,
        "--sts-endpoint", _STS["url"], "--insecure",
        "--checkpoint", str(tmp_path / "chk"), "--expect", "80", "--timeout", "150",
    )  # fmt: skip
    assert result == {"written": 80}
    landed, _ = read_raw(kinesis, target)
    enriched = sorted((json.loads(item.record.data) for item in landed), key=lambda e: e["order"])
    assert [e["order"] for e in enriched] == sorted(o["order"] for o in orders)
    assert all(e["large"] == (e["amount"] >= 100) for e in enriched)
    assert all(item.record.partition_key == json.loads(item.record.data)["customer"] for item in landed)
