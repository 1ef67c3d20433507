"""The local Spark session and the Kinesis stream reader that the benchmark scripts share."""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.readwriter import DataStreamReader

CBOR_OFF = {"spark.driver.extraJavaOptions": "-Daws.cborEnabled=false"}
"""Spark conf under which the AWS SDK speaks JSON, not CBOR, to the emulators."""


def add_connector_jars(parser: argparse.ArgumentParser) -> None:
    """Add ``--connector-jars``: connector jars to load instead of the installed wheel's."""
    parser.add_argument(
        "--connector-jars",
        help="comma-separated connector jars to load instead of the installed wheel's (to compare two builds)",
    )


def local_session(
    connector_jars: str | None = None,
    *,
    jars: Sequence[str] = (),
    conf: Mapping[str, str] | None = None,
    master: str = "local[2]",
) -> SparkSession:
    """A local session, UI and progress bar off, log level ERROR, with ``conf``.

    ``spark.jars`` holds ``jars`` and then ``connector_jars`` (comma-separated); without ``connector_jars``,
    ``spark_kinesis.configure_spark`` adds the installed wheel's jars.
    """
    import spark_kinesis
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    all_jars = [*jars, *(connector_jars.split(",") if connector_jars else [])]
    if all_jars:
        builder = builder.config("spark.jars", ",".join(all_jars))
    spark = (builder if connector_jars else spark_kinesis.configure_spark(builder)).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def kinesis_stream(
    spark: SparkSession,
    endpoint: str,
    stream: str,
    options: Mapping[str, str] | None = None,
    *,
    starting: str | None = "TRIM_HORIZON",
    consumer_prefix: str = "bench",
) -> DataStreamReader:
    """A ``readStream`` of ``stream`` at ``endpoint`` (region us-east-1) from ``starting``, with ``options``.

    A fan-out read (``kinesis.consumerType`` set) without a ``kinesis.consumerName`` gets a unique one,
    ``<consumer_prefix>-<nanoseconds>``. ``starting=None`` leaves the connector's default position.
    """
    reader = (
        spark.readStream.format("aws-kinesis")
        .option("kinesis.endpointUrl", endpoint)
        .option("kinesis.region", "us-east-1")
        .option("kinesis.streamName", stream)
    )
    if starting is not None:
        reader = reader.option("kinesis.startingPosition", starting)
    options = options or {}
    for key, value in options.items():
        reader = reader.option(key, value)
    if "kinesis.consumerType" in options and "kinesis.consumerName" not in options:
        reader = reader.option("kinesis.consumerName", f"{consumer_prefix}-{time.time_ns()}")
    return reader
