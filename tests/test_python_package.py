"""Unit tests of the spark_kinesis Python package. No JVM is started here."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pyspark
import pytest
import spark_kinesis
from pyspark.sql import SparkSession
from spark_kinesis import JarNotFoundError, SparkVersionMismatchError, configure_spark

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import pominfo  # noqa: E402


@pytest.fixture
def fake_jar(tmp_path, monkeypatch) -> str:
    """Point the package at a stand-in jar file so these tests do not need a build."""
    jar = tmp_path / "spark-kinesis-test.jar"
    jar.write_bytes(b"PK\x05\x06" + b"\0" * 18)  # an empty zip
    monkeypatch.setenv(spark_kinesis.JAR_ENV_VAR, str(jar))
    return str(jar.resolve())


def _options(builder: SparkSession.Builder) -> dict[str, str]:
    return dict(builder._options)


# --- versions come from the pom -------------------------------------------------------------------


def test_versions_match_pom():
    assert pominfo.get("spark.version") == spark_kinesis.SPARK_VERSION
    assert spark_kinesis.__version__ == pominfo.get("version")
    assert pominfo.get("scala.binary.version") == spark_kinesis.SCALA_BINARY_VERSION


def test_installed_pyspark_is_the_poms_version():
    assert pyspark.__version__ == pominfo.get("spark.version")


def test_package_is_typed():
    assert (Path(spark_kinesis.__file__).parent / "py.typed").is_file()


# --- jar_path -------------------------------------------------------------------------------------


def test_missing_bundled_jar_raises_clear_error(monkeypatch):
    monkeypatch.delenv(spark_kinesis.JAR_ENV_VAR, raising=False)
    monkeypatch.setattr(spark_kinesis, "_JAR_NAME", "not-there.jar")
    with pytest.raises(JarNotFoundError) as caught:
        spark_kinesis.jar_path()
    assert isinstance(caught.value, FileNotFoundError)
    message = str(caught.value)
    assert "not-there.jar" in message
    assert "scripts/build.sh" in message
    assert spark_kinesis.JAR_ENV_VAR in message


def test_env_override_names_the_jar(fake_jar):
    assert spark_kinesis.jar_path() == fake_jar


def test_env_override_to_missing_file_raises(monkeypatch, tmp_path):
    monkeypatch.setenv(spark_kinesis.JAR_ENV_VAR, str(tmp_path / "nope.jar"))
    with pytest.raises(JarNotFoundError, match="SPARK_KINESIS_JAR"):
        spark_kinesis.jar_path()


def test_configure_spark_fails_when_jar_missing(monkeypatch):
    monkeypatch.delenv(spark_kinesis.JAR_ENV_VAR, raising=False)
    monkeypatch.setattr(spark_kinesis, "_JAR_NAME", "not-there.jar")
    with pytest.raises(JarNotFoundError):
        configure_spark(SparkSession.builder)


# --- configure_spark ------------------------------------------------------------------------------


def test_adds_jar_to_empty_builder(fake_jar):
    builder = SparkSession.builder.appName("t")
    assert configure_spark(builder) is builder
    assert _options(builder)["spark.jars"] == fake_jar


def test_keeps_jars_already_configured(fake_jar):
    builder = SparkSession.builder.config("spark.jars", "/opt/a.jar, /opt/b.jar")
    configure_spark(builder)
    assert _options(builder)["spark.jars"] == f"/opt/a.jar,/opt/b.jar,{fake_jar}"


def test_is_idempotent(fake_jar):
    builder = SparkSession.builder.config("spark.jars", "/opt/a.jar")
    configure_spark(configure_spark(builder))
    assert _options(builder)["spark.jars"] == f"/opt/a.jar,{fake_jar}"


def test_leaves_other_options_alone(fake_jar):
    builder = SparkSession.builder.master("local[1]").config("spark.jars.packages", "g:a:1")
    configure_spark(builder)
    options = _options(builder)
    assert options["spark.master"] == "local[1]"
    assert options["spark.jars.packages"] == "g:a:1"


@pytest.mark.parametrize(
    "value",
    [None, "local[2]", {"spark.jars": "x"}, SparkSession.Builder],
    ids=["none", "str", "dict", "class"],
)
def test_rejects_non_builder(value, fake_jar):
    with pytest.raises(TypeError, match=r"expects a pyspark\.sql\.SparkSession\.Builder") as caught:
        configure_spark(value)
    if value is SparkSession.Builder:
        assert "pass an instance" in str(caught.value)


def test_warns_when_speculation_is_on(fake_jar):
    builder = SparkSession.builder.config("spark.speculation", "true")
    with pytest.warns(UserWarning, match="spark.speculation"):
        configure_spark(builder)
    assert _options(builder)["spark.jars"] == fake_jar


def test_no_warning_without_speculation(fake_jar):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        configure_spark(SparkSession.builder.config("spark.speculation", "false"))
        configure_spark(SparkSession.builder)


@pytest.mark.parametrize("installed", ["3.5.3", "4.1.0", "5.2.0", "not-a-version"])
def test_rejects_other_spark_minor_versions(monkeypatch, fake_jar, installed):
    monkeypatch.setattr(pyspark, "__version__", installed)
    with pytest.raises(SparkVersionMismatchError) as caught:
        configure_spark(SparkSession.builder)
    message = str(caught.value)
    assert installed in message
    assert spark_kinesis.SPARK_VERSION in message
    assert "pip install" in message


def test_accepts_other_patch_versions(monkeypatch, fake_jar):
    major, minor, *_ = spark_kinesis.SPARK_VERSION.split(".")
    monkeypatch.setattr(pyspark, "__version__", f"{major}.{minor}.99.dev0")
    configure_spark(SparkSession.builder)


# --- packaging checks -----------------------------------------------------------------------------


def test_strict_typing_and_lint():
    """mypy --strict and ruff pass on the package (the same commands CI can run)."""
    bin_dir = Path(sys.executable).parent
    for command in (
        [str(bin_dir / "ruff"), "check", "."],
        [str(bin_dir / "ruff"), "format", "--check", "."],
        [str(bin_dir / "mypy"), "--strict"],
    ):
        result = subprocess.run(command, cwd=ROOT / "python", capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stdout}{result.stderr}"


@pytest.mark.parametrize("module", ["spark_kinesis", "spark_kinesis.builders", "spark_kinesis.types"])
def test_docstring_examples_run(module: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(
        importlib.import_module(module), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    assert result.attempted > 0 and result.failed == 0, result


def test_the_wheel_carries_the_jar_the_build_made() -> None:
    import zipfile

    version = pominfo.get("version")
    wheel = ROOT / "dist" / f"spark_kinesis-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        assert {"spark_kinesis/jars/spark-kinesis.jar", "spark_kinesis/py.typed"} <= names, sorted(names)
        inside = archive.read("spark_kinesis/jars/spark-kinesis.jar")
    assert inside == Path(pominfo.jar_path()).read_bytes(), "the wheel's jar is not target/'s jar"
