"""A Spark session whose classpath has another provider of ``aws-kinesis`` ahead of this connector.

Run by tests/test_provider_conflict.py in its own JVM (the shared test session must keep resolving
``aws-kinesis`` to this connector). Arguments: the test-only jar, the Kinesis endpoint, the stream,
a work directory. Prints one JSON document: the warnings that ``configure_spark`` and the builders
gave, what Spark resolves each name to, and which stream class ran each read.
"""

from __future__ import annotations

import json
import sys
import warnings
from typing import Any

import spark_kinesis
from pyspark.sql import SparkSession
from spark_kinesis import KinesisSource, StartingPosition
from spark_kinesis.provider import resolved_provider


def _warning_texts(caught: list[warnings.WarningMessage]) -> list[dict[str, str]]:
    return [{"category": w.category.__name__, "message": str(w.message)} for w in caught]


def _stream_class(spark: Any, source: KinesisSource, checkpoint: str, **kwargs: Any) -> str:
    """Run an AvailableNow read through the builder; return the description of its source."""
    df = source.read_stream(spark, **kwargs)
    query = df.writeStream.format("noop").option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
    query.awaitTermination(120)
    progress = query.lastProgress
    query.stop()
    return str(progress["sources"][0]["description"]) if progress else "no progress"


def main() -> None:
    fake_jar, endpoint, stream, workdir = sys.argv[1:5]
    result: dict[str, Any] = {}
    # The other provider first, as EMR's classpath has it, then this connector.
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("provider-conflict")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.jars", fake_jar)
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spark = spark_kinesis.configure_spark(builder).getOrCreate()
    result["configure_spark_warnings"] = _warning_texts(caught)
    spark.sparkContext.setLogLevel("ERROR")
    # With a session running, configure_spark asks Spark instead of reading jars.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spark_kinesis.configure_spark(SparkSession.builder)
    result["configure_spark_running_warnings"] = _warning_texts(caught)

    result["resolves"] = {name: resolved_provider(spark, name) for name in ("aws-kinesis", spark_kinesis.FORMAT)}
    source = KinesisSource(
        stream_name=stream,
        endpoint_url=endpoint,
        region="us-east-1",
        starting_position=StartingPosition.trim_horizon(),
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result["builder_stream"] = _stream_class(spark, source, f"{workdir}/chk-default")
    result["builder_warnings"] = _warning_texts(caught)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result["short_name_stream"] = _stream_class(spark, source, f"{workdir}/chk-short", format="aws-kinesis")
        except Exception as error:  # the other provider runs, and the test-only one refuses
            result["short_name_stream"] = f"failed: {str(error).splitlines()[0][:300]}"
    result["short_name_warnings"] = _warning_texts(caught)
    spark.stop()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
