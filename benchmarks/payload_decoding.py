"""Glue Schema Registry decoding and encoding against Spark's from_avro and to_avro, in the same Spark session.

The same Avro records, cached in memory, are decoded two ways: ``from_glue_schema_registry`` on the framed records
(the 18-byte header, the writer schema from the registry's cache) and ``from_avro`` on the same payloads without the
header; then encoded with ``to_glue_schema_registry`` and with ``to_avro``. Every measure writes to Spark's ``noop``
sink, so the time is the decoding (or encoding) and Spark's row path around it. The rounds alternate the two; the
median is reported, with the Spark JVM's CPU per million records. The registry is moto's Glue API.

    .venv/bin/python benchmarks/payload_decoding.py --records 1000000 --rounds 3

spark-avro is fetched through ``spark.jars.packages`` (Maven Central, or the local Ivy cache) for the baseline only:
the connector does not need it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import results  # noqa: E402
from harness import emulators  # noqa: E402

SCHEMA = """{"type": "record", "name": "Order", "namespace": "shop", "fields": [
  {"name": "id", "type": "string"},
  {"name": "customer", "type": "string"},
  {"name": "amount", "type": "long"},
  {"name": "price", "type": "double"},
  {"name": "quantity", "type": "int"},
  {"name": "paid", "type": "boolean"},
  {"name": "note", "type": ["null", "string"], "default": null},
  {"name": "tags", "type": {"type": "array", "items": "string"}},
  {"name": "address", "type": {"type": "record", "name": "Address",
                               "fields": [{"name": "city", "type": "string"}, {"name": "zip", "type": "string"}]}},
  {"name": "createdAt", "type": {"type": "long", "logicalType": "timestamp-millis"}}
]}"""


def session() -> Any:
    import pyspark
    from pyspark.sql import SparkSession
    from spark_kinesis import SCALA_BINARY_VERSION, configure_spark

    builder = (
        SparkSession.builder.master("local[2]")
        .appName("payload-decoding")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.jars.packages", f"org.apache.spark:spark-avro_{SCALA_BINARY_VERSION}:{pyspark.__version__}")
    )
    return configure_spark(builder).getOrCreate()


def timed(spark: Any, pid: int, df: Any, records: int) -> tuple[float, float]:
    """Records/s and CPU seconds per million records of writing ``df`` to the noop sink."""
    cpu = results.process_cpu_seconds(pid)
    start = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    seconds = time.perf_counter() - start
    return records / seconds, (results.process_cpu_seconds(pid) - cpu) / records * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--results", help="JSON-lines file to append the table rows to (see results.py)")
    args = parser.parse_args()

    from pyspark.sql.avro.functions import from_avro, to_avro
    from pyspark.sql.functions import array, col, expr, lit, struct
    from spark_kinesis import from_glue_schema_registry, to_glue_schema_registry

    with emulators.running("moto") as moto:
        import boto3

        registry = f"bench-{uuid.uuid4().hex[:6]}"
        boto3.client(
            "glue",
            endpoint_url=moto.endpoint,
            region_name=emulators.REGION,
            aws_access_key_id=emulators.ACCESS_KEY,
            aws_secret_access_key=emulators.SECRET_KEY,
        ).create_registry(RegistryName=registry)
        os.environ.update(
            AWS_ACCESS_KEY_ID=emulators.ACCESS_KEY, AWS_SECRET_ACCESS_KEY=emulators.SECRET_KEY, AWS_REGION="us-east-1"
        )
        spark = session()
        pid = results.jvm_pid(spark)
        named = {
            "registry_name": registry,
            "options": {"kinesis.region": "us-east-1", "kinesis.schemaRegistry.endpointUrl": moto.endpoint},
        }
        values = spark.range(args.records).select(
            struct(
                expr("concat('order-', id)").alias("id"),
                expr("concat('customer-', id % 1000)").alias("customer"),
                col("id").alias("amount"),
                (col("id") * 0.25).alias("price"),
                (col("id") % 7).cast("int").alias("quantity"),
                (col("id") % 2 == 0).alias("paid"),
                expr("if(id % 3 = 0, null, 'gift wrap')").alias("note"),
                array(lit("a"), lit("b")).alias("tags"),
                struct(lit("Lyon").alias("city"), expr("cast(69000 + id % 10 as string)").alias("zip")).alias(
                    "address"
                ),
                expr("timestamp_millis(1700000000000 + id)").alias("createdAt"),
            ).alias("order")
        )
        framed = values.select(
            to_glue_schema_registry(
                "order",
                "orders",
                schema_definition=SCHEMA,
                auto_register=True,
                **named,  # type: ignore[arg-type]
            ).alias("data")
        )
        framed = framed.select("data", expr("substring(data, 19, length(data) - 18)").alias("payload")).cache()
        assert framed.count() == args.records
        cached_values = values.cache()
        assert cached_values.count() == args.records

        measures = {
            "decode: from_glue_schema_registry": framed.select(
                from_glue_schema_registry("data", "orders", **named).alias("o")  # type: ignore[arg-type]
            ),
            "decode: from_avro (baseline)": framed.select(from_avro("payload", SCHEMA).alias("o")),
            "encode: to_glue_schema_registry": cached_values.select(
                to_glue_schema_registry("order", "orders", **named).alias("d")  # type: ignore[arg-type]
            ),
            "encode: to_avro (baseline)": cached_values.select(to_avro("order", SCHEMA).alias("d")),
        }
        for df in measures.values():  # warm-up: compiled code, registry caches
            timed(spark, pid, df.limit(10_000), 10_000)
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in measures}
        for round_ in range(args.rounds):
            order = list(measures) if round_ % 2 == 0 else list(reversed(measures))
            for name in order:
                samples[name].append(timed(spark, pid, measures[name], args.records))
        spark.stop()

    def median(name: str, index: int) -> float:
        return statistics.median(s[index] for s in samples[name])

    print(f"\n{args.records:,} records, {args.rounds} rounds (median), local[2]\n")
    print("| measure | records/s | CPU s per M records | ratio to the baseline (rate) | CPU ratio |")
    print("|---|---|---|---|---|")
    for name in measures:
        base = name.split(":")[0] + (": from_avro (baseline)" if name.startswith("decode") else ": to_avro (baseline)")
        ratio = median(name, 0) / median(base, 0)
        cpu_ratio = median(name, 1) / median(base, 1)
        print(f"| {name} | {median(name, 0):,.0f} | {median(name, 1):.2f} | {ratio:.2f} | {cpu_ratio:.2f} |")
        results.add_row(
            args.results,
            f"payloads, {args.records:,} Avro records",
            name,
            f"{median(name, 0):,.0f} rec/s",
            baseline=base,
            baseline_value=f"{median(base, 0):,.0f} rec/s",
            ratio=ratio,
        )


if __name__ == "__main__":
    main()
