"""A batch read through the connector that Spark's resolver fetched (``spark-submit --packages``).

Run by tests/test_packages.py with ``spark-submit --packages io.sparkkinesis:<line artifact>:<version>
--repositories file://...``; it never calls ``configure_spark``, so the only connector jars in the JVM are the ones
Ivy resolved. Prints one ``RESULT {json}`` line: the records read, ``spark.jars``, and the jar each of the
connector's provider (for the builders' format name) and the shaded AWS SDK were loaded from.

    packages_job.py --endpoint URL --stream NAME
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from pyspark.sql import SparkSession
from spark_kinesis import FORMAT, KinesisSource, StartingPosition


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--stream", required=True)
    args = parser.parse_args()

    spark = SparkSession.builder.appName("spark-kinesis-packages").getOrCreate()
    try:
        source = KinesisSource(
            stream_name=args.stream,
            endpoint_url=args.endpoint,
            region="us-east-1",
            starting_position=StartingPosition.trim_horizon(),
        )
        records = sorted(bytes(row["data"]).decode() for row in source.read(spark).collect())
        jvm = spark.sparkContext._jvm
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()

        def origin(cls: Any) -> str:
            return str(cls.getProtectionDomain().getCodeSource().getLocation().toString())

        provider = jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource(
            FORMAT, spark._jsparkSession.sessionState().conf()
        )
        sdk = "io.sparkkinesis.shaded.software.amazon.awssdk.services.kinesis.KinesisClient"
        result = {
            "records": records,
            "spark.jars": spark.conf.get("spark.jars", ""),
            "provider": provider.getName(),
            "provider_jar": origin(provider),
            "shaded_sdk_jar": origin(jvm.java.lang.Class.forName(sdk, False, loader)),
        }
        print("RESULT " + json.dumps(result), flush=True)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
