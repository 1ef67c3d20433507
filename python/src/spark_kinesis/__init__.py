"""Amazon Kinesis Data Streams connector for Spark Structured Streaming.

The wheel carries the connector's shaded jar. :func:`configure_spark` adds that jar to a
``SparkSession.Builder``; :func:`jar_path` tells where it is, for ``spark-submit --jars``.

Examples
--------
>>> from pyspark.sql import SparkSession
>>> from spark_kinesis import configure_spark
>>> spark = configure_spark(SparkSession.builder.master("local[2]")).getOrCreate()  # doctest: +SKIP
>>> df = (
...     spark.readStream.format("aws-kinesis")
...     .option("kinesis.streamName", "my-stream")
...     .option("kinesis.region", "us-east-1")
...     .load()
... )  # doctest: +SKIP
"""

from __future__ import annotations

import os
import re
import warnings
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from spark_kinesis._version import SCALA_BINARY_VERSION, SPARK_VERSION, __version__
from spark_kinesis.builders import KinesisSink, KinesisSource
from spark_kinesis.types import (
    ConsumerType,
    HttpProtocol,
    MetadataCommitterType,
    StartingPosition,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "FORMAT",
    "JAR_ENV_VAR",
    "SCALA_BINARY_VERSION",
    "SPARK_VERSION",
    "ConsumerType",
    "HttpProtocol",
    "JarNotFoundError",
    "KinesisSink",
    "KinesisSource",
    "MetadataCommitterType",
    "SparkVersionMismatchError",
    "StartingPosition",
    "__version__",
    "configure_spark",
    "jar_path",
]

FORMAT = "aws-kinesis"
"""The name to pass to ``spark.readStream.format(...)`` and ``df.writeStream.format(...)``."""

JAR_ENV_VAR = "SPARK_KINESIS_JAR"
"""Environment variable that, when set, names the jar to use instead of the bundled one."""

_JAR_DIR = "jars"
_JAR_NAME = "spark-kinesis.jar"


class JarNotFoundError(FileNotFoundError):
    """The connector jar is not where it should be."""


class SparkVersionMismatchError(RuntimeError):
    """The installed pyspark is not the Spark version the jar was built for."""


def jar_path() -> str:
    """Return the absolute path of the connector jar.

    The jar ships inside this package (``spark_kinesis/jars/spark-kinesis.jar``). If the
    environment variable ``SPARK_KINESIS_JAR`` is set, its value is used instead, which is
    handy while developing the connector itself.

    Returns
    -------
    str
        Absolute path of an existing jar file.

    Raises
    ------
    JarNotFoundError
        If the jar does not exist (a subclass of :class:`FileNotFoundError`).

    Examples
    --------
    >>> import spark_kinesis
    >>> spark_kinesis.jar_path()  # doctest: +SKIP
    '/venv/lib/python3.11/site-packages/spark_kinesis/jars/spark-kinesis.jar'

    With ``spark-submit``::

        JAR="$(python -c 'import spark_kinesis; print(spark_kinesis.jar_path())')"
        spark-submit --jars "$JAR" app.py
    """
    override = os.environ.get(JAR_ENV_VAR)
    if override:
        path = Path(override).expanduser().resolve()
        if not path.is_file():
            raise JarNotFoundError(
                f"{JAR_ENV_VAR}={override!r} does not name an existing file. "
                f"Unset {JAR_ENV_VAR} to use the jar bundled with spark-kinesis {__version__}."
            )
        return str(path)

    resource = resources.files("spark_kinesis").joinpath(_JAR_DIR).joinpath(_JAR_NAME)
    bundled = Path(str(resource)).resolve()
    if not bundled.is_file():
        raise JarNotFoundError(
            f"The spark-kinesis connector jar is missing: expected {bundled}. "
            "This happens when the package was installed from a source checkout without building "
            "the jar: run scripts/build.sh in the repository (or install the published wheel), "
            f"or set {JAR_ENV_VAR} to the path of a spark-kinesis jar."
        )
    return str(bundled)


def _major_minor(version: str) -> tuple[int, int] | None:
    match = re.match(r"^\s*(\d+)\.(\d+)", version)
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2))


def _check_pyspark_version(installed: str) -> None:
    wanted = _major_minor(SPARK_VERSION)
    have = _major_minor(installed)
    if have is None or have != wanted:
        raise SparkVersionMismatchError(
            f"spark-kinesis {__version__} is built for Spark {SPARK_VERSION} "
            f"(Scala {SCALA_BINARY_VERSION}), but the installed pyspark is {installed}. "
            f"Install a pyspark {SPARK_VERSION.rsplit('.', 1)[0]}.x "
            f"(for example: pip install 'pyspark=={SPARK_VERSION}'), "
            "or a spark-kinesis release built for your Spark version."
        )


def _split_jars(value: object) -> list[str]:
    if value is None:
        return []
    return [part.strip() for part in str(value).split(",") if part.strip()]


def configure_spark(builder: SparkSession.Builder) -> SparkSession.Builder:
    """Add the connector jar to a ``SparkSession`` builder.

    The jar is appended to ``spark.jars``; jars already configured on the builder are kept, and
    calling this twice does not add the jar twice. The builder is changed in place and returned
    so that calls can be chained.

    Parameters
    ----------
    builder : pyspark.sql.SparkSession.Builder
        The builder, for example ``SparkSession.builder.appName("app")``. Configure it before
        ``getOrCreate()``: a jar cannot be added to a JVM that is already running.

    Returns
    -------
    pyspark.sql.SparkSession.Builder
        The same builder, with the jar added.

    Raises
    ------
    TypeError
        If ``builder`` is not a ``SparkSession.Builder``.
    SparkVersionMismatchError
        If the installed pyspark's major.minor version differs from the Spark version the jar
        was built for.
    JarNotFoundError
        If the jar is missing (see :func:`jar_path`).

    Warns
    -----
    UserWarning
        If ``spark.speculation`` is enabled on the builder: speculative tasks read the same
        shard range twice, which spends the shard's read budget for nothing.

    Examples
    --------
    >>> from pyspark.sql import SparkSession
    >>> from spark_kinesis import configure_spark
    >>> builder = SparkSession.builder.appName("kinesis-demo").master("local[2]")
    >>> spark = configure_spark(builder).getOrCreate()  # doctest: +SKIP

    Jars configured earlier stay configured:

    >>> builder = SparkSession.builder.config("spark.jars", "/opt/jars/other.jar")
    >>> configure_spark(builder)  # doctest: +SKIP
    >>> # spark.jars is now "/opt/jars/other.jar,<path of spark-kinesis.jar>"
    """
    try:
        import pyspark
        from pyspark.sql import SparkSession
    except ImportError as error:
        raise ImportError(
            "configure_spark needs pyspark: pip install 'spark-kinesis[spark]' "
            f"(or pip install 'pyspark=={SPARK_VERSION}')"
        ) from error

    if not isinstance(builder, SparkSession.Builder):
        hint = ""
        if isinstance(builder, SparkSession):
            hint = (
                " You passed a SparkSession that is already running; pass the builder before "
                "calling getOrCreate()."
            )
        elif builder is SparkSession.Builder:
            hint = " You passed the class; pass an instance such as SparkSession.builder."
        raise TypeError(
            "configure_spark expects a pyspark.sql.SparkSession.Builder (such as "
            f"SparkSession.builder), got {type(builder).__module__}.{type(builder).__qualname__}."
            + hint
        )

    _check_pyspark_version(pyspark.__version__)
    jar = jar_path()

    # pyspark keeps what was set through .config(...) in the builder's private _options map;
    # reading it is the only way to keep jars that were configured before this call.
    options: dict[str, object] = dict(getattr(builder, "_options", {}))

    if str(options.get("spark.speculation", "false")).strip().lower() == "true":
        warnings.warn(
            "spark.speculation is true: speculative copies of a Kinesis read task fetch the same "
            "records again and spend the shard's read budget (5 GetRecords calls per second). "
            "Consider spark.speculation=false for streaming queries that read Kinesis.",
            UserWarning,
            stacklevel=2,
        )

    jars = _split_jars(options.get("spark.jars"))
    if jar not in jars:
        jars.append(jar)
    return builder.config("spark.jars", ",".join(jars))
