"""Another connector that registers ``aws-kinesis`` under ``org.apache.spark``, as on Amazon EMR 7.1+.

EMR puts the awslabs connector on Spark's classpath; its provider class is under
``org.apache.spark``, so Spark resolves ``format("aws-kinesis")`` to it rather than to this
connector. A test-only jar stands in for it: a provider class under ``org.apache.spark`` that
registers ``aws-kinesis`` and refuses every read. The builders must still run this connector
(they use ``spark-kinesis``), and ``configure_spark`` and the builders (when told to use
``aws-kinesis``) must say what happens.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pyspark
import pytest
import spark_kinesis
from harness import emulators
from harness.kinesis import create_stream, put_plain
from pyspark.sql import SparkSession
from spark_kinesis import FORMAT, KinesisSink, KinesisSource, ProviderConflictWarning
from spark_kinesis.provider import classpath_conflicts

ROOT = Path(__file__).resolve().parent.parent
OTHER_CLASS = "org.apache.spark.sql.kinesistestonly.OtherKinesisProvider"
OURS = "io.sparkkinesis.KinesisSourceProvider"

OTHER_SOURCE = """
package org.apache.spark.sql.kinesistestonly;

import java.util.Map;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** Test only: registers aws-kinesis under org.apache.spark, as the awslabs connector does. */
public final class OtherKinesisProvider implements TableProvider, DataSourceRegister {
  @Override public String shortName() { return "aws-kinesis"; }

  @Override public StructType inferSchema(CaseInsensitiveStringMap options) {
    throw new UnsupportedOperationException("OtherKinesisProvider ran: the test-only provider");
  }

  @Override public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    throw new UnsupportedOperationException("OtherKinesisProvider ran: the test-only provider");
  }
}
"""


@pytest.fixture(scope="module")
def other_provider_jar(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test-only jar: its provider class and its service registration."""
    work = tmp_path_factory.mktemp("other-provider")
    src = work / "src" / "OtherKinesisProvider.java"
    src.parent.mkdir()
    src.write_text(OTHER_SOURCE)
    classes = work / "classes"
    spark_jars = Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent) / "jars"
    subprocess.run(["javac", "-d", str(classes), "-cp", f"{spark_jars}/*", str(src)], check=True, timeout=120)
    services = classes / "META-INF" / "services"
    services.mkdir(parents=True)
    (services / "org.apache.spark.sql.sources.DataSourceRegister").write_text(OTHER_CLASS + "\n")
    jar = work / "other-kinesis-connector.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(classes), "."], check=True, timeout=120)
    return jar


@pytest.fixture
def no_running_session(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hide a session another test left running: these tests are about the scan before one starts."""
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))


def _conflict_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, ProviderConflictWarning)]


def _configure(builder: SparkSession.Builder) -> tuple[SparkSession.Builder, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        configured = spark_kinesis.configure_spark(builder)
    return configured, _conflict_warnings(caught)


def _assert_names_both_and_the_fix(message: str) -> None:
    assert OTHER_CLASS in message, message
    assert OURS in message, message
    assert "format('spark-kinesis')" in message, message
    assert "org.apache.spark" in message, message


@pytest.mark.usefixtures("no_running_session")
def test_configure_spark_warns_about_a_jar_in_spark_jars(other_provider_jar: Path) -> None:
    builder, found = _configure(SparkSession.builder.config("spark.jars", str(other_provider_jar)))
    assert len(found) == 1, found
    _assert_names_both_and_the_fix(found[0])
    assert str(other_provider_jar) in found[0]
    # The jars are still added, after the user's.
    jars = spark_kinesis._builder_settings(builder)["spark.jars"].split(",")
    assert jars[0] == str(other_provider_jar) and len(jars) == 3


@pytest.mark.usefixtures("no_running_session")
def test_configure_spark_finds_it_in_a_class_path_folder_and_in_spark_defaults(
    other_provider_jar: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = str(other_provider_jar.parent) + "/*"
    _, found = _configure(SparkSession.builder.config("spark.driver.extraClassPath", folder))
    assert len(found) == 1 and OTHER_CLASS in found[0]

    # As EMR configures it: spark-defaults.conf names the folder on the driver's class path.
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(
        f"spark.master yarn\nspark.driver.extraClassPath   /usr/lib/none/*:{folder}\n"
    )
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf))
    assert [c.provider_class for c in classpath_conflicts({})] == [OTHER_CLASS]
    _, found = _configure(SparkSession.builder)
    assert len(found) == 1 and OTHER_CLASS in found[0]


@pytest.mark.usefixtures("no_running_session")
def test_configure_spark_is_quiet_without_another_provider() -> None:
    _, found = _configure(SparkSession.builder.config("spark.jars", "/nowhere/a.jar"))
    assert found == []


def test_the_connectors_own_jars_are_not_a_conflict() -> None:
    assert classpath_conflicts({"spark.jars": ",".join(spark_kinesis.jar_paths())}) == []


def test_configure_spark_adds_no_jars_to_a_remote_connect_builder() -> None:
    builder = SparkSession.builder.remote("sc://example.invalid:15002/;token=do-not-show-me")
    with pytest.warns(UserWarning, match="Spark Connect") as caught:
        configured = spark_kinesis.configure_spark(builder)
    message = " ".join(str(w.message) for w in caught)
    assert "sc://example.invalid:15002" in message
    assert "do-not-show-me" not in message
    assert "SparkConnectServer" in message and "--jars" in message
    assert "spark.jars" not in spark_kinesis._builder_settings(configured)


def test_configure_spark_adds_the_jars_to_a_local_connect_server() -> None:
    # pyspark starts a local Connect server with the builder's settings: the jars reach it.
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        configured = spark_kinesis.configure_spark(SparkSession.builder.remote("local[2]"))
    assert spark_kinesis._builder_settings(configured)["spark.jars"].split(",") == spark_kinesis.jar_paths()


@pytest.mark.parametrize("bad", ["kinesis", "Spark-Kinesis ", "org.apache.spark.sql.connector.kinesis.X"])
def test_builders_refuse_a_format_that_is_not_theirs(bad: str) -> None:
    source = KinesisSource(stream_name="s", region="us-east-1")
    with pytest.raises(ValueError, match="not a name of this connector") as caught:
        source.apply(object(), format=bad)  # type: ignore[arg-type]
    assert repr(bad) in str(caught.value) and repr(FORMAT) in str(caught.value)
    with pytest.raises(ValueError, match=r"KinesisSink\.apply"):
        KinesisSink(stream_name="s", region="us-east-1").apply(object(), format=bad)  # type: ignore[arg-type]


@pytest.mark.emulator
def test_the_builders_run_this_connector_when_another_registers_aws_kinesis(
    other_provider_jar: Path, kinesis_local: str, kinesis_client_factory: Any, stream_name: str
) -> None:
    client = kinesis_client_factory(kinesis_local)
    create_stream(client, stream_name, shards=1)
    put_plain(client, stream_name, [(f"k{i}", f"v{i}".encode()) for i in range(5)])
    work = ROOT / ".run" / f"provider-conflict-{stream_name}"
    work.mkdir(parents=True, exist_ok=True)
    job = ROOT / "tests" / "jobs" / "provider_conflict_job.py"
    done = subprocess.run(
        [sys.executable, str(job), str(other_provider_jar), kinesis_local, stream_name, str(work)],
        capture_output=True,
        text=True,
        timeout=300,
        env={
            **os.environ,
            "AWS_ACCESS_KEY_ID": emulators.ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": emulators.SECRET_KEY,
            "AWS_REGION": emulators.REGION,
            "SPARK_LOCAL_IP": "127.0.0.1",
        },
    )
    assert done.returncode == 0, done.stderr[-4000:]
    shutil.rmtree(work, ignore_errors=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])

    # Spark resolves the shared name to the other provider, and ours only to this connector.
    assert result["resolves"] == {"aws-kinesis": OTHER_CLASS, FORMAT: "io.sparkkinesis.SparkKinesisProvider"}

    # configure_spark said so before the session started (from the jars), and again once it ran (from Spark).
    for key in ("configure_spark_warnings", "configure_spark_running_warnings"):
        told = [w["message"] for w in result[key] if w["category"] == "ProviderConflictWarning"]
        assert len(told) == 1, (key, result[key])
        _assert_names_both_and_the_fix(told[0])
    assert "the running session" in told[0]

    # The builders, by default, run this connector, and say nothing.
    assert result["builder_stream"].startswith("KinesisMicroBatchStream["), result["builder_stream"]
    assert result["builder_warnings"] == []

    # Told to use the shared name, the builders warn, and the other provider is what runs.
    told = [w["message"] for w in result["short_name_warnings"] if w["category"] == "ProviderConflictWarning"]
    assert len(told) == 1, result["short_name_warnings"]
    _assert_names_both_and_the_fix(told[0])
    assert "OtherKinesisProvider ran" in result["short_name_stream"], result["short_name_stream"]
