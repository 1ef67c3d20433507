"""Which of the bundled jars a Spark installation needs.

The wheel carries one small jar per Spark line (``spark-kinesis-spark3.5_2.12-<version>.jar``, ...)
and one jar of shaded third-party libraries that every line shares
(``spark-kinesis-deps-<version>.jar``). A Spark needs its line's jar and the shared one. The line is
the Spark major.minor version and the Scala version of that Spark's own jars.
"""

from __future__ import annotations

import importlib.util
import os
import re
import warnings
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from spark_kinesis._version import SPARK_LINES, __version__

__all__ = [
    "JAR_ENV_VAR",
    "JarNotFoundError",
    "SparkLine",
    "SparkVersionMismatchError",
    "built_lines",
    "detect_scala_version",
    "jar_paths",
    "resolve_line",
]

JAR_ENV_VAR = "SPARK_KINESIS_JAR"
"""Environment variable that, when set, names the jars to use (comma-separated) instead."""

_JAR_DIR = "jars"
_DEPS_JAR = f"spark-kinesis-deps-{__version__}.jar"


class JarNotFoundError(FileNotFoundError):
    """A connector jar is not where it should be."""


class SparkVersionMismatchError(RuntimeError):
    """No bundled jar serves the requested (or installed) Spark and Scala versions."""


@dataclass(frozen=True, order=True)
class SparkLine:
    """A Spark line of the connector: Spark ``major.minor`` and the Scala binary version."""

    spark: tuple[int, int]
    scala: str

    @property
    def name(self) -> str:
        """The line's name, as in its artifact and jar: ``spark3.5_2.12``."""
        return f"spark{self.spark[0]}.{self.spark[1]}_{self.scala}"

    @property
    def jar_name(self) -> str:
        """The file name of the line's jar in the wheel."""
        return f"spark-kinesis-{self.name}-{__version__}.jar"

    @property
    def built_against(self) -> str:
        """The Spark release the line's jar was compiled against."""
        return SPARK_LINES[(f"{self.spark[0]}.{self.spark[1]}", self.scala)]

    def __str__(self) -> str:
        """Return ``Spark 3.5 (Scala 2.12)``."""
        return f"Spark {self.spark[0]}.{self.spark[1]} (Scala {self.scala})"


def _major_minor(version: str) -> tuple[int, int] | None:
    match = re.match(r"^\s*(\d+)\.(\d+)", version)
    return None if match is None else (int(match.group(1)), int(match.group(2)))


def _jar_dir() -> Path:
    return Path(str(resources.files("spark_kinesis").joinpath(_JAR_DIR))).resolve()


def built_lines() -> list[SparkLine]:
    """Return the lines whose jars this installation carries, oldest first.

    Returns
    -------
    list of SparkLine
        The lines of the build (``SPARK_LINES``) whose jar is present in the package.
    """
    present = []
    for (spark, scala), _ in SPARK_LINES.items():
        version = _major_minor(spark)
        if version is None:
            continue
        line = SparkLine(version, scala)
        if (_jar_dir() / line.jar_name).is_file():
            present.append(line)
    return sorted(present)


def _describe(lines: list[SparkLine]) -> str:
    by_spark: dict[tuple[int, int], list[str]] = {}
    for line in lines:
        by_spark.setdefault(line.spark, []).append(line.scala)
    parts = [
        f"{major}.{minor} (Scala {', '.join(scalas)})"
        for (major, minor), scalas in sorted(by_spark.items())
    ]
    return "Spark " + ", ".join(parts) if parts else "none (the package carries no line jar)"


def _spark_home() -> Path | None:
    """Return the Spark installation pyspark launches: ``SPARK_HOME``, else pyspark's folder."""
    if "SPARK_HOME" in os.environ:
        return Path(os.environ["SPARK_HOME"]).resolve()
    spec = importlib.util.find_spec("pyspark")
    return Path(spec.origin).resolve().parent if spec and spec.origin else None


def detect_scala_version(spark_home: str | None = None) -> str | None:
    """Return the Scala binary version of a Spark installation's own jars, such as ``"2.12"``.

    Parameters
    ----------
    spark_home : str, optional
        The Spark installation. By default ``SPARK_HOME`` when set, else the installed pyspark
        package (whose ``jars/`` folder holds Spark's jars).

    Returns
    -------
    str or None
        The version of its ``scala-library-<version>.jar``, or None if there is none.
    """
    home = Path(spark_home) if spark_home is not None else _spark_home()
    if home is None:
        return None
    for jar in sorted((home / "jars").glob("scala-library-*.jar")):
        match = re.match(r"scala-library-(\d+\.\d+)\.", jar.name)
        if match:
            return match.group(1)
    return None


def resolve_line(spark_version: str, scala: str | None = None) -> SparkLine:
    """Pick the bundled line for a Spark version and, optionally, a Scala version.

    Parameters
    ----------
    spark_version : str
        A Spark version, ``"3.5"`` or ``"3.5.6"``.
    scala : str, optional
        The Scala binary version (``"2.12"``, ``"2.13"``). By default the line's only build, or
        the Scala its pyspark releases use (2.12 for Spark 3, 2.13 from Spark 4).

    Returns
    -------
    SparkLine
        The exact line when it is built; for a Spark newer than every built line, the newest line
        with that Scala version (with a warning).

    Raises
    ------
    SparkVersionMismatchError
        If the version is older than, or between, the built lines, or no line has that Scala
        version; the message lists the supported lines.

    Warns
    -----
    UserWarning
        When a Spark newer than every built line gets the newest build.
    """
    lines = built_lines()
    wanted = _major_minor(spark_version)
    if wanted is None:
        raise SparkVersionMismatchError(
            f"{spark_version!r} is not a Spark version (expected major.minor, such as 3.5). "
            f"spark-kinesis {__version__} supports {_describe(lines)}: install a pyspark of one "
            "of them (for example pip install 'pyspark==3.5.*')."
        )
    if scala is None:
        same = [line.scala for line in lines if line.spark == wanted]
        scala = same[0] if len(same) == 1 else ("2.12" if wanted[0] < 4 else "2.13")
    for line in lines:
        if line.spark == wanted and line.scala == scala:
            return line
    newest = [line for line in lines if line.scala == scala]
    if newest and wanted > max(line.spark for line in lines):
        chosen = max(newest)
        warnings.warn(
            f"spark-kinesis {__version__} has no build for Spark {wanted[0]}.{wanted[1]} yet; "
            f"using the newest, for {chosen} (built against Spark {chosen.built_against}), which "
            "uses only DataSource V2 interfaces that newer Spark releases keep. Upgrade "
            f"spark-kinesis when a release for Spark {wanted[0]}.{wanted[1]} exists.",
            UserWarning,
            stacklevel=3,
        )
        return chosen
    raise SparkVersionMismatchError(
        f"spark-kinesis {__version__} has no build for Spark {spark_version} with Scala {scala}. "
        f"Supported: {_describe(lines)}; newer Spark minors use the newest build. Use a "
        "pyspark of a supported line (for example pip install 'pyspark==3.5.*'), or, for a "
        "cluster, ask for its line: spark-kinesis jar --spark 3.5 --scala 2.12."
    )


def jar_paths(spark: str | None = None, scala: str | None = None) -> list[str]:
    """Return the jars Spark needs: the line's jar, then the shared third-party jar.

    Parameters
    ----------
    spark : str, optional
        The Spark version to serve (``"3.5"``). By default the installed pyspark's.
    scala : str, optional
        The Scala binary version. By default, for the installed pyspark, the version of its own
        jars (see :func:`detect_scala_version`); for a given ``spark``, its line's default.

    Returns
    -------
    list of str
        Absolute paths of existing jar files. When ``SPARK_KINESIS_JAR`` is set, its
        comma-separated paths instead (with a warning when ``spark`` or ``scala`` is given).

    Raises
    ------
    SparkVersionMismatchError
        If no bundled line serves that Spark (see :func:`resolve_line`).
    JarNotFoundError
        If a jar is missing.
    """
    override = os.environ.get(JAR_ENV_VAR)
    if override:
        if spark is not None or scala is not None:
            asked = (
                f"Spark {spark}"
                if scala is None
                else f"Spark {spark or '(installed)'} / Scala {scala}"
            )
            warnings.warn(
                f"{JAR_ENV_VAR} is set: its jars are used, not the bundled ones for {asked}",
                stacklevel=2,
            )
        paths = []
        for part in (p.strip() for p in override.split(",") if p.strip()):
            path = Path(part).expanduser().resolve()
            if not path.is_file():
                raise JarNotFoundError(
                    f"{JAR_ENV_VAR}={override!r}: {part!r} does not name an existing file. "
                    f"Unset {JAR_ENV_VAR} to use the jars bundled with spark-kinesis {__version__}."
                )
            paths.append(str(path))
        return paths

    if spark is None:
        try:
            import pyspark
        except ImportError as error:
            raise ImportError(
                "spark_kinesis.jar_paths() without a Spark version needs pyspark installed; "
                "or name the line: jar_paths(spark='3.5', scala='2.12')"
            ) from error
        spark = pyspark.__version__
        if scala is None:
            scala = detect_scala_version()
    line = resolve_line(spark, scala)
    bundled = [_jar_dir() / line.jar_name, _jar_dir() / _DEPS_JAR]
    for jar in bundled:
        if not jar.is_file():
            raise JarNotFoundError(
                f"The spark-kinesis jar {jar} is missing. This happens when the package was "
                "installed from a source checkout without building the jars: run scripts/build.sh "
                "in the repository (or install the published wheel), or set "
                f"{JAR_ENV_VAR} to the jars to use."
            )
    return [str(jar) for jar in bundled]
