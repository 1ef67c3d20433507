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
from spark_kinesis import JarNotFoundError, SparkVersionMismatchError, configure_spark, lines
from spark_kinesis._version import SPARK_LINES

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


@pytest.fixture
def bundled(tmp_path, monkeypatch) -> Path:
    """A stand-in jars/ folder with an empty file for each line of the build and for the deps jar."""
    monkeypatch.delenv(spark_kinesis.JAR_ENV_VAR, raising=False)
    folder = tmp_path / "jars"
    folder.mkdir()
    version = spark_kinesis.__version__
    for (spark, scala), _ in SPARK_LINES.items():
        (folder / f"spark-kinesis-spark{spark}_{scala}-{version}.jar").write_bytes(b"")
    (folder / f"spark-kinesis-deps-{version}.jar").write_bytes(b"")
    monkeypatch.setattr(lines, "_jar_dir", lambda: folder)
    return folder


def _names(paths: list[str]) -> list[str]:
    return [Path(p).name for p in paths]


def _options(builder: SparkSession.Builder) -> dict[str, object]:
    return dict(spark_kinesis._builder_settings(builder))


# --- versions come from the pom -------------------------------------------------------------------


def test_versions_match_pom():
    default = pominfo.default_line()
    assert default["spark.version"] == spark_kinesis.SPARK_VERSION
    assert spark_kinesis.__version__ == pominfo.get("version")
    assert default["scala.binary.version"] == spark_kinesis.SCALA_BINARY_VERSION
    assert {
        (".".join(x["spark.version"].split(".")[:2]), x["scala.binary.version"]): x["spark.version"]
        for x in pominfo.lines()
    } == SPARK_LINES


def test_installed_pyspark_is_the_default_lines_version():
    assert pyspark.__version__ == pominfo.default_line()["spark.version"]


def test_package_is_typed():
    assert (Path(spark_kinesis.__file__).parent / "py.typed").is_file()


# --- which jars: jar_paths ------------------------------------------------------------------------

V = spark_kinesis.__version__
DEPS = f"spark-kinesis-deps-{V}.jar"


@pytest.mark.parametrize(
    ("spark", "scala", "line"),
    [
        ("3.5.9", "2.12", "spark3.5_2.12"),
        ("3.5.1", "2.13", "spark3.5_2.13"),
        ("3.5", None, "spark3.5_2.12"),
        ("4.0.5", "2.13", "spark4.0_2.13"),
        ("4.1", None, "spark4.1_2.13"),
        ("4.2.1", "2.13", "spark4.2_2.13"),
    ],
)
def test_a_built_line_gets_its_own_jar_and_the_shared_one(bundled, spark, scala, line):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        paths = spark_kinesis.jar_paths(spark=spark, scala=scala)
    assert _names(paths) == [f"spark-kinesis-{line}-{V}.jar", DEPS]
    assert all(Path(p).is_absolute() for p in paths)


@pytest.mark.parametrize("spark", ["4.3.0", "4.9", "5.0.0"])
def test_a_newer_minor_warns_and_gets_the_newest_build(bundled, spark):
    with pytest.warns(UserWarning, match=r"no build for Spark \d\.\d yet.*4\.2"):
        paths = spark_kinesis.jar_paths(spark=spark)
    assert _names(paths) == [f"spark-kinesis-spark4.2_2.13-{V}.jar", DEPS]


@pytest.mark.parametrize(
    ("spark", "scala"), [("3.4.4", None), ("3.3", "2.12"), ("3.5", "2.11"), ("4.2", "2.12"), ("x", None)]
)
def test_an_unsupported_line_is_refused_naming_the_supported_ones(bundled, spark, scala):
    with pytest.raises(SparkVersionMismatchError) as caught:
        spark_kinesis.jar_paths(spark=spark, scala=scala)
    message = str(caught.value)
    assert spark in message
    assert "3.5 (Scala 2.12, 2.13)" in message and "4.2 (Scala 2.13)" in message


def test_only_lines_present_in_the_package_count(bundled):
    (bundled / f"spark-kinesis-spark3.5_2.13-{V}.jar").unlink()
    assert "spark3.5_2.13" not in [line.name for line in spark_kinesis.built_lines()]
    with pytest.raises(SparkVersionMismatchError, match=r"3\.5 \(Scala 2\.12\)"):
        spark_kinesis.jar_paths(spark="3.5", scala="2.13")


def test_the_installed_pyspark_and_the_scala_of_its_jars_choose_the_line(bundled, monkeypatch, tmp_path):
    home = tmp_path / "spark-home"
    (home / "jars").mkdir(parents=True)
    (home / "jars" / "scala-library-2.13.8.jar").write_bytes(b"")
    monkeypatch.setenv("SPARK_HOME", str(home))
    monkeypatch.setattr(pyspark, "__version__", "3.5.9")
    assert lines.detect_scala_version() == "2.13"
    assert _names(spark_kinesis.jar_paths())[0] == f"spark-kinesis-spark3.5_2.13-{V}.jar"
    (home / "jars" / "scala-library-2.13.8.jar").rename(home / "jars" / "scala-library-2.12.18.jar")
    assert _names(spark_kinesis.jar_paths())[0] == f"spark-kinesis-spark3.5_2.12-{V}.jar"


def test_the_installed_pyspark_ships_the_scala_of_the_default_line(monkeypatch):
    monkeypatch.delenv("SPARK_HOME", raising=False)
    assert lines.detect_scala_version() == spark_kinesis.SCALA_BINARY_VERSION


def test_a_missing_bundled_jar_raises_a_clear_error(bundled):
    (bundled / DEPS).unlink()
    with pytest.raises(JarNotFoundError) as caught:
        spark_kinesis.jar_paths(spark="4.2")
    assert isinstance(caught.value, FileNotFoundError)
    message = str(caught.value)
    assert DEPS in message and "scripts/build.sh" in message and spark_kinesis.JAR_ENV_VAR in message


def test_env_override_names_the_jars(fake_jar, tmp_path, monkeypatch):
    assert spark_kinesis.jar_paths() == [fake_jar]
    other = tmp_path / "other.jar"
    other.write_bytes(b"")
    monkeypatch.setenv(spark_kinesis.JAR_ENV_VAR, f"{fake_jar}, {other}")
    assert spark_kinesis.jar_paths() == [fake_jar, str(other.resolve())]


def test_env_override_warns_when_a_line_is_asked_for(fake_jar, monkeypatch):
    monkeypatch.setenv(spark_kinesis.JAR_ENV_VAR, fake_jar)
    with pytest.warns(UserWarning, match=r"SPARK_KINESIS_JAR is set: its jars are used.*Spark 3\.5 / Scala 2\.12"):
        assert spark_kinesis.jar_paths(spark="3.5", scala="2.12") == [fake_jar]


def test_env_override_to_missing_file_raises(monkeypatch, tmp_path, fake_jar):
    monkeypatch.setenv(spark_kinesis.JAR_ENV_VAR, f"{fake_jar},{tmp_path / 'nope.jar'}")
    with pytest.raises(JarNotFoundError, match=r"SPARK_KINESIS_JAR.*nope\.jar"):
        spark_kinesis.jar_paths()


def test_configure_spark_fails_when_a_jar_is_missing(bundled):
    (bundled / DEPS).unlink()
    with pytest.raises(JarNotFoundError):
        configure_spark(SparkSession.builder)


# --- spark-kinesis jar ----------------------------------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "spark_kinesis.cli", "jar", *args], capture_output=True, text=True, timeout=60
    )


def test_cli_jar_prints_one_line_for_the_installed_pyspark(monkeypatch):
    monkeypatch.delenv(spark_kinesis.JAR_ENV_VAR, raising=False)
    done = _cli()
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1
    assert done.stdout.strip().split(",") == spark_kinesis.jar_paths()


@pytest.mark.all_lines
def test_cli_jar_for_another_line(monkeypatch):
    monkeypatch.delenv(spark_kinesis.JAR_ENV_VAR, raising=False)
    done = _cli("--spark", "3.5", "--scala", "2.12")
    assert done.returncode == 0, done.stderr
    assert _names(done.stdout.strip().split(",")) == [f"spark-kinesis-spark3.5_2.12-{V}.jar", DEPS]


def test_cli_jar_refuses_an_unsupported_line_on_stderr(monkeypatch):
    monkeypatch.delenv(spark_kinesis.JAR_ENV_VAR, raising=False)
    done = _cli("--spark", "3.4")
    assert done.returncode == 2
    assert done.stdout == ""
    assert "3.4" in done.stderr and "Supported" in done.stderr


def test_cli_jar_warns_for_a_newer_minor_and_prints_the_newest(monkeypatch):
    monkeypatch.delenv(spark_kinesis.JAR_ENV_VAR, raising=False)
    done = _cli("--spark", "4.3")
    assert done.returncode == 0
    assert "no build for Spark 4.3" in done.stderr
    assert _names(done.stdout.strip().split(","))[0] == f"spark-kinesis-spark4.2_2.13-{V}.jar"


@pytest.mark.all_lines
def test_cli_jar_list_names_every_line(monkeypatch):
    done = _cli("--list")
    assert done.returncode == 0, done.stderr
    for x in pominfo.lines():
        assert f"spark-kinesis-{x['name']}-{V}.jar" in done.stdout


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


def test_adds_the_sql_extension_once_after_those_configured(fake_jar):
    builder = SparkSession.builder.config("spark.sql.extensions", "a.Ext, b.Ext")
    configure_spark(configure_spark(builder))
    assert _options(builder)["spark.sql.extensions"] == f"a.Ext,b.Ext,{spark_kinesis.SQL_EXTENSIONS}"
    fresh = configure_spark(SparkSession.builder.appName("t"))
    assert _options(fresh)["spark.sql.extensions"] == "io.sparkkinesis.KinesisSqlExtensions"


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


def test_builder_settings_are_read_only_and_a_builder_without_them_is_warned_about(fake_jar):
    builder = SparkSession.builder.config("spark.jars", "/opt/a.jar")
    settings = spark_kinesis._builder_settings(builder)
    with pytest.raises(TypeError):
        settings["spark.jars"] = "x"  # type: ignore[index]

    class Bare:
        pass

    with pytest.warns(UserWarning, match="keeps no _options"):
        assert dict(spark_kinesis._builder_settings(Bare())) == {}  # type: ignore[arg-type]


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


def test_configure_spark_adds_the_installed_pysparks_line_jars(bundled, monkeypatch):
    monkeypatch.setattr(pyspark, "__version__", "4.0.4")
    monkeypatch.setattr(lines, "detect_scala_version", lambda spark_home=None: "2.13")
    builder = configure_spark(SparkSession.builder.config("spark.jars", "/opt/a.jar"))
    jars = _options(builder)["spark.jars"].split(",")
    assert jars[0] == "/opt/a.jar"
    assert _names(jars[1:]) == [f"spark-kinesis-spark4.0_2.13-{V}.jar", DEPS]


@pytest.mark.parametrize("installed", ["3.4.3", "2.4.8", "not-a-version"])
def test_configure_spark_rejects_unsupported_pysparks(bundled, monkeypatch, installed):
    monkeypatch.setattr(pyspark, "__version__", installed)
    with pytest.raises(SparkVersionMismatchError) as caught:
        configure_spark(SparkSession.builder)
    message = str(caught.value)
    assert installed in message
    assert "pip install" in message


def test_configure_spark_warns_for_a_newer_pyspark_and_uses_the_newest_line(bundled, monkeypatch):
    monkeypatch.setattr(pyspark, "__version__", "4.3.0")
    with pytest.warns(UserWarning, match="no build for Spark 4.3"):
        builder = configure_spark(SparkSession.builder)
    assert _names(_options(builder)["spark.jars"].split(","))[0] == f"spark-kinesis-spark4.2_2.13-{V}.jar"


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


@pytest.mark.parametrize(
    "module", ["spark_kinesis", "spark_kinesis.builders", "spark_kinesis.types", "spark_kinesis.realtime"]
)
def test_docstring_examples_run(module: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(
        importlib.import_module(module), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    assert result.attempted > 0 and result.failed == 0, result


@pytest.mark.all_lines
def test_the_wheel_carries_every_line_jar_and_the_deps_jar_the_build_made() -> None:
    import zipfile

    version = pominfo.get("version")
    wheel = ROOT / "dist" / f"spark_kinesis-{version}-py3-none-any.whl"
    built = [pominfo.deps_jar()] + [pominfo.line_jar(x["name"]) for x in pominfo.lines()]
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        assert "spark_kinesis/py.typed" in names
        assert {n for n in names if n.endswith(".jar")} == {f"spark_kinesis/jars/{j.name}" for j in built}
        for jar in built:
            assert archive.read(f"spark_kinesis/jars/{jar.name}") == jar.read_bytes(), f"{jar.name} differs"
    # The Python package index's default limit for one file.
    assert wheel.stat().st_size < 100_000_000, wheel.stat().st_size
