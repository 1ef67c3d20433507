"""Glue Schema Registry records between the connector and AWS's own serde library, and through Kinesis.

The registry is moto's Glue API. The serde library (software.amazon.glue:schema-registry-serde, the
release the KPL names) runs as tests/gsr-app, a program built by scripts/setup.sh: records it frames
are read by ``from_glue_schema_registry``, and records ``to_glue_schema_registry`` frames are read
by it. Then records framed by the library go through a Kinesis stream (kinesis-local) and are
decoded by the source's batch read (GetRecords) and a streaming read over enhanced fan-out.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from harness.kinesis import create_stream, put_plain
from pyspark.sql.functions import struct
from spark_kinesis import from_glue_schema_registry, to_glue_schema_registry
from streaming import batch_read, reader, stop, wait_for

pytestmark = pytest.mark.emulator

APP = Path(__file__).resolve().parent / "gsr-app" / "target"

ORDER_V1 = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "amount", "type": "long"},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
}
# v2 drops `note` and adds `currency` with a default: records of both versions read as v2.
ORDER_V2 = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "amount", "type": "long"},
        {"name": "currency", "type": "string", "default": "EUR"},
    ],
}


def serde(command: str, *args: str, lines: list[str]) -> list[str]:
    """Run the serde library's program on ``lines``; its output lines."""
    if not (APP / "gsr-app.jar").is_file():
        raise AssertionError(f"{APP / 'gsr-app.jar'} is missing: run scripts/setup.sh")
    classpath = f"{APP / 'gsr-app.jar'}{os.pathsep}{APP / 'dependency' / '*'}"
    done = subprocess.run(
        ["java", "-cp", classpath, "io.sparkkinesis.gsrapp.Main", command, *args],
        input="".join(line + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"gsr-app {command} failed:\n{done.stderr[-3000:]}"
    return [line for line in done.stdout.splitlines() if line.strip()]


def avro_json(record: dict[str, Any], schema: dict[str, Any]) -> str:
    """A record in Avro's JSON encoding (a union value names its branch)."""
    encoded: dict[str, Any] = {}
    for field in schema["fields"]:
        value = record.get(field["name"], field.get("default"))
        if isinstance(field["type"], list) and value is not None:
            value = {field["type"][1]: value}
        encoded[field["name"]] = value
    return json.dumps(encoded)


@pytest.fixture
def registry(moto: str, aws_client_factory: Any) -> str:
    name = f"reg-{uuid.uuid4().hex[:8]}"
    aws_client_factory("glue", moto).create_registry(RegistryName=name)
    return name


def frame_with_serde(
    moto: str,
    registry: str,
    schema: dict[str, Any],
    records: list[dict[str, Any]],
    tmp: Path,
    compression: str = "NONE",
) -> list[bytes]:
    schema_file = tmp / f"schema-{uuid.uuid4().hex[:6]}.avsc"
    schema_file.write_text(json.dumps(schema))
    out = serde(
        "encode",
        moto,
        registry,
        "orders",
        str(schema_file),
        compression,
        lines=[avro_json(r, schema) for r in records],
    )
    return [base64.b64decode(line) for line in out]


def options(moto: str) -> dict[str, str]:
    return {"kinesis.region": "us-east-1", "kinesis.schemaRegistry.endpointUrl": moto}


def test_records_framed_by_the_serde_library_are_decoded_and_ours_are_read_by_it(
    spark: Any, moto: str, registry: str, tmp_path: Path
) -> None:
    v1 = [{"id": "a", "amount": 1, "note": "first"}, {"id": "b", "amount": 2}]
    v2 = [{"id": "c", "amount": 3, "currency": "USD"}]
    # The library registers v1, then v2 as a new version of the same schema.
    framed = frame_with_serde(moto, registry, ORDER_V1, v1, tmp_path, "ZLIB")
    framed += frame_with_serde(moto, registry, ORDER_V2, v2, tmp_path, "NONE")
    assert [f[:2] for f in framed] == [b"\x03\x05", b"\x03\x05", b"\x03\x00"]
    df = spark.createDataFrame([(i, f) for i, f in enumerate(framed)], "n INT, data BINARY")
    decoded = (
        df.select(
            "n", from_glue_schema_registry("data", "orders", registry_name=registry, options=options(moto)).alias("o")
        )
        .orderBy("n")
        .select("o.*")
        .collect()
    )
    assert [r.asDict() for r in decoded] == [
        {"id": "a", "amount": 1, "currency": "EUR"},
        {"id": "b", "amount": 2, "currency": "EUR"},
        {"id": "c", "amount": 3, "currency": "USD"},
    ], "each record read with its writer version as the latest"

    values = spark.createDataFrame([("x", 10, "GBP"), ("y", 11, "CHF")], "id STRING, amount BIGINT, currency STRING")
    ours = [
        bytes(r[0])
        for r in values.select(
            to_glue_schema_registry(
                struct("id", "amount", "currency"),
                "orders",
                registry_name=registry,
                compression="ZLIB",
                options=options(moto),
            )
        ).collect()
    ]
    read_back = serde("decode", moto, registry, lines=[base64.b64encode(b).decode() for b in ours])
    assert [json.loads(line) for line in read_back] == [
        {"id": "x", "amount": 10, "currency": "GBP"},
        {"id": "y", "amount": 11, "currency": "CHF"},
    ]


def test_serde_framed_records_through_kinesis_decode_in_a_batch_read_and_over_fan_out(
    spark: Any, moto: str, registry: str, kinesis_local: str, kinesis: Any, stream_name: str, tmp_path: Path
) -> None:
    records = [{"id": f"o-{i}", "amount": i, "currency": "EUR" if i % 2 else "USD"} for i in range(40)]
    framed = frame_with_serde(moto, registry, ORDER_V2, records, tmp_path, "ZLIB")
    create_stream(kinesis, stream_name, 2)
    put_plain(kinesis, stream_name, [(f"k-{i}", f) for i, f in enumerate(framed)])
    decode = from_glue_schema_registry("data", "orders", registry_name=registry, options=options(moto)).alias("o")
    expected = sorted((r["id"], r["amount"], r["currency"]) for r in records)

    batch = batch_read(spark, kinesis_local, stream_name).select(decode).select("o.*").collect()
    assert sorted((r.id, r.amount, r.currency) for r in batch) == expected

    batches: dict[int, list[Any]] = {}  # by batch id: a batch run again replaces its rows

    def collect(df: Any, batch_id: int) -> None:
        batches[batch_id] = df.select(decode).select("o.*").collect()

    def rows() -> list[Any]:
        return [r for b in list(batches.values()) for r in b]

    query = (
        reader(
            spark,
            kinesis_local,
            stream_name,
            startingPosition="TRIM_HORIZON",
            consumerType="SubscribeToShard",
            consumerName="gsr-reader",
        )
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(tmp_path / "chk"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        wait_for(lambda: len(rows()) >= len(records), query, what=f"{len(records)} decoded rows")
    finally:
        stop(query)
    assert sorted((r.id, r.amount, r.currency) for r in rows()) == expected


ORDER_JSON = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "amount": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["id", "amount"],
}


def test_json_schema_records_between_the_serde_library_and_the_connector(
    spark: Any, moto: str, registry: str, tmp_path: Path
) -> None:
    schema_file = tmp_path / "order.schema.json"
    schema_file.write_text(json.dumps(ORDER_JSON))
    records = [{"id": "a", "amount": 1, "tags": ["x", "y"]}, {"amount": 2, "id": "b", "extra": True}]
    lines = serde(
        "encode-json", moto, registry, "orders-json", str(schema_file), "ZLIB", lines=[json.dumps(r) for r in records]
    )
    framed = [base64.b64decode(line) for line in lines]
    assert [f[:2] for f in framed] == [b"\x03\x05", b"\x03\x05"]
    df = spark.createDataFrame([(i, f) for i, f in enumerate(framed)], "n INT, data BINARY")
    decode = from_glue_schema_registry("data", "orders-json", registry_name=registry, options=options(moto))
    decoded = df.select("n", decode.alias("o")).orderBy("n").select("o.*").collect()
    assert [r.asDict() for r in decoded] == [
        {"id": "a", "amount": 1, "tags": ["x", "y"]},
        {"id": "b", "amount": 2, "tags": None},
    ], "matched by name; the unknown field skipped"

    values = spark.createDataFrame([("x", 10, ["t"]), ("y", 11, None)], "id STRING, amount BIGINT, tags ARRAY<STRING>")
    ours = [
        bytes(r[0])
        for r in values.select(
            to_glue_schema_registry(
                struct("id", "amount", "tags"), "orders-json", registry_name=registry, options=options(moto)
            )
        ).collect()
    ]
    assert [b[:2] for b in ours] == [b"\x03\x00", b"\x03\x00"]
    read_back = serde("decode-json", moto, registry, lines=[base64.b64encode(b).decode() for b in ours])
    assert [json.loads(line) for line in read_back] == [
        {"id": "x", "amount": 10, "tags": ["t"]},
        {"id": "y", "amount": 11},
    ]


ORDER_PROTO = """syntax = "proto3";
package shop;

import "google/protobuf/timestamp.proto";

// The record is the file's first message.
message Order {
  string id = 1;
  int64 amount = 2;
  Status status = 3;
  repeated Line lines = 4;
  map<string, string> tags = 5;
  google.protobuf.Timestamp placed = 6;
  message Line {
    string sku = 1;
    int32 qty = 2;
  }
  enum Status {
    NEW = 0;
    PAID = 1;
  }
}
"""


def test_protobuf_records_framed_by_the_serde_library_are_decoded_and_ours_are_read_by_it(
    spark: Any, moto: str, registry: str, tmp_path: Path
) -> None:
    proto = tmp_path / "order.proto"
    proto.write_text(ORDER_PROTO)
    texts = [
        'id: "a" amount: 5 status: PAID lines { sku: "x" qty: 2 } tags { key: "k" value: "v" }'
        " placed { seconds: 1700000000 nanos: 123456000 }",
        'id: "b"',
    ]
    # The library registers the text it derives from the descriptor (Wire's rendering), which our parser reads.
    framed = [
        base64.b64decode(x)
        for x in serde("encode-protobuf", moto, registry, "orders-pb", str(proto), "ZLIB", lines=texts)
    ]
    df = spark.createDataFrame([(i, f) for i, f in enumerate(framed)], "n INT, data BINARY")
    decode = from_glue_schema_registry("data", "orders-pb", registry_name=registry, options=options(moto))
    rows = df.select("n", decode.alias("o")).orderBy("n").select("o.*").collect()
    first, second = (r.asDict(recursive=True) for r in rows)
    assert first["placed"] is not None and first["placed"].timestamp() == 1700000000.123456
    assert {k: v for k, v in first.items() if k != "placed"} == {
        "id": "a",
        "amount": 5,
        "status": "PAID",
        "lines": [{"sku": "x", "qty": 2}],
        "tags": {"k": "v"},
    }
    # proto3 fields without presence read as their defaults; an unset message is null.
    assert second == {"id": "b", "amount": 0, "status": "NEW", "lines": [], "tags": {}, "placed": None}

    values = spark.createDataFrame(
        [("c", 7, "PAID", [("y", 3)])],
        "id STRING, amount BIGINT, status STRING, lines ARRAY<STRUCT<sku: STRING, qty: INT>>",
    )
    from pyspark.sql.functions import struct

    ours = [
        bytes(r[0])
        for r in values.select(
            to_glue_schema_registry(
                struct("id", "amount", "status", "lines"), "orders-pb", registry_name=registry, options=options(moto)
            )
        ).collect()
    ]
    read_back = serde("decode-protobuf", moto, registry, lines=[base64.b64encode(b).decode() for b in ours])
    assert read_back == ['shop.Order id: "c" amount: 7 status: PAID lines { sku: "y" qty: 3 }']
