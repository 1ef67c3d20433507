"""The built jars, loaded through the Python package, work in a real SparkSession.

Needs the jars: scripts/build.sh (or SPARK_KINESIS_JAR=<line jar>,<deps jar> while iterating).
"""

from __future__ import annotations

import warnings

import pytest
import spark_kinesis

pytestmark = pytest.mark.smoke


def test_jars_are_on_the_session_classpath(spark):
    configured = spark.conf.get("spark.jars").split(",")
    assert all(jar in configured for jar in spark_kinesis.jar_paths())


def test_format_name_resolves_to_our_provider(spark):
    jvm = spark._jvm
    provider = jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource(
        spark_kinesis.FORMAT, spark._jsparkSession.sessionState().conf()
    )
    assert provider.getName().startswith("io.sparkkinesis.")


def test_both_names_select_this_connector_and_the_builders_stay_quiet(spark):
    from spark_kinesis.provider import resolved_provider

    assert resolved_provider(spark, spark_kinesis.FORMAT) == "io.sparkkinesis.SparkKinesisProvider"
    assert resolved_provider(spark, "aws-kinesis") == "io.sparkkinesis.KinesisSourceProvider"
    source = spark_kinesis.KinesisSource(stream_name="s", region="us-east-1")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        source.apply(spark.readStream, format="aws-kinesis")


def test_shaded_sdk_is_loadable(spark):
    jvm = spark._jvm
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    cls = jvm.java.lang.Class.forName(
        "io.sparkkinesis.shaded.software.amazon.awssdk.services.kinesis.KinesisClient",
        False,
        loader,
    )
    assert cls.getName().endswith("KinesisClient")


def test_jvm_cbor_disabled_fixture_sets_and_restores(spark, jvm_cbor_disabled):
    assert spark._jvm.java.lang.System.getProperty("aws.cborEnabled") == "false"
