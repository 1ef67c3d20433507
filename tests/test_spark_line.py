"""The installed pyspark gets the jar of its own Spark line, and a session really runs it.

``scripts/test-lines.sh`` runs this module (with the rest of the ``smoke`` set) once per Spark line,
each in a venv with that line's pyspark, and names the line it expects in
``SPARK_KINESIS_EXPECTED_LINE`` (``spark3.5_2.12``, ...; a pyspark newer than every build expects the
newest line). Without that variable the expected line is the default build's, which is what the
main test venv has.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
import spark_kinesis
from harness.artifacts import expected_line as _expected_line
from harness.artifacts import line_of as _line_of

pytestmark = pytest.mark.smoke


def test_spark_kinesis_jar_names_the_expected_line_and_the_shared_jar() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "spark_kinesis.cli", "jar"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout
    jars = lines[0].split(",")
    assert [_line_of(j) for j in jars if _line_of(j)] == [_expected_line()], jars
    assert [Path(j).name for j in jars if _line_of(j) is None] == [
        f"spark-kinesis-deps-{spark_kinesis.__version__}.jar"
    ], jars
    assert all(Path(j).is_file() for j in jars), jars


def test_jar_paths_match_the_command_line() -> None:
    with warnings.catch_warnings():
        # A pyspark newer than every build warns; that is checked by the package's unit tests.
        warnings.simplefilter("ignore")
        paths = spark_kinesis.jar_paths()
    assert _expected_line() in {_line_of(p) for p in paths}


def test_the_session_loads_the_connector_from_the_expected_line_jar(spark: Any) -> None:
    jvm = spark._jvm
    import pyspark

    # The JVM is the installed pyspark's Spark, and its Scala is the line's.
    assert spark.version.split(".")[:2] == pyspark.__version__.split(".")[:2]
    scala = jvm.scala.util.Properties.versionNumberString()
    assert _expected_line().endswith("_" + ".".join(scala.split(".")[:2])), scala

    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    provider = jvm.java.lang.Class.forName("io.sparkkinesis.KinesisSourceProvider", False, loader)
    origin = provider.getProtectionDomain().getCodeSource().getLocation().toString()
    assert _line_of(origin) == _expected_line(), origin

    shaded = jvm.java.lang.Class.forName(
        "io.sparkkinesis.shaded.software.amazon.awssdk.services.kinesis.KinesisClient", False, loader
    )
    origin = shaded.getProtectionDomain().getCodeSource().getLocation().toString()
    assert Path(origin).name == f"spark-kinesis-deps-{spark_kinesis.__version__}.jar", origin
