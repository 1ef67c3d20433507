"""Amazon Kinesis Data Streams connector for Spark Structured Streaming.

The wheel carries the connector's jars: one per Spark line and one of shaded third-party libraries
that every line shares. :func:`configure_spark` adds the two that the installed pyspark needs to a
``SparkSession.Builder``; :func:`jar_paths` names them, for ``spark-submit --jars``.

Examples
--------
>>> from pyspark.sql import SparkSession
>>> from spark_kinesis import FORMAT, configure_spark
>>> spark = configure_spark(SparkSession.builder.master("local[2]")).getOrCreate()  # doctest: +SKIP
>>> df = (
...     spark.readStream.format(FORMAT)
...     .option("kinesis.streamName", "my-stream")
...     .option("kinesis.region", "us-east-1")
...     .load()
... )  # doctest: +SKIP
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from spark_kinesis._version import SCALA_BINARY_VERSION, SPARK_VERSION, __version__
from spark_kinesis.builders import KinesisSink, KinesisSource
from spark_kinesis.connect import is_classic_session, is_connect_session
from spark_kinesis.functions import (
    SQL_EXTENSIONS,
    dynamodb_changes,
    from_glue_schema_registry,
    register_functions,
    to_glue_schema_registry,
)
from spark_kinesis.lines import (
    JAR_ENV_VAR,
    JarNotFoundError,
    SparkLine,
    SparkVersionMismatchError,
    built_lines,
    jar_paths,
)
from spark_kinesis.provider import (
    FORMAT,
    ProviderConflictWarning,
    classpath_conflicts,
    warn_if_taken,
)
from spark_kinesis.types import (
    ConsumerType,
    EndingPosition,
    HttpProtocol,
    MetadataCommitterType,
    MetricsLevel,
    ShardPositions,
    SinkProducer,
    StartingPosition,
    ThreadingModel,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "FORMAT",
    "JAR_ENV_VAR",
    "SCALA_BINARY_VERSION",
    "SPARK_VERSION",
    "SQL_EXTENSIONS",
    "ConsumerType",
    "EndingPosition",
    "HttpProtocol",
    "JarNotFoundError",
    "KinesisSink",
    "KinesisSource",
    "MetadataCommitterType",
    "MetricsLevel",
    "ProviderConflictWarning",
    "ShardPositions",
    "SinkProducer",
    "SparkLine",
    "SparkVersionMismatchError",
    "StartingPosition",
    "ThreadingModel",
    "__version__",
    "built_lines",
    "configure_spark",
    "dynamodb_changes",
    "from_glue_schema_registry",
    "jar_paths",
    "register_functions",
    "to_glue_schema_registry",
]


def _builder_settings(builder: SparkSession.Builder) -> Mapping[str, object]:
    """Return what was set on a ``SparkSession.Builder`` through ``.config(...)``, read-only.

    pyspark has no public way to read it back: this is the one place the package reads the
    builder's private ``_options`` dict (pyspark 3.5 to 4.2). Without it, the result is empty and a
    ``UserWarning`` says that jars configured earlier may be replaced.
    """
    settings = getattr(builder, "_options", None)
    if not isinstance(settings, dict):
        warnings.warn(
            "this pyspark's SparkSession.Builder keeps no _options dict, so configure_spark cannot "
            "see spark.jars set earlier on the builder: set them after configure_spark, or pass "
            "them with spark-submit --jars.",
            UserWarning,
            stacklevel=3,
        )
        return MappingProxyType({})
    return MappingProxyType(settings)


def configure_spark(builder: SparkSession.Builder) -> SparkSession.Builder:
    """Add the connector's jars for the installed pyspark to a ``SparkSession`` builder.

    The jars of the installed pyspark's line (see :func:`jar_paths`) are appended to
    ``spark.jars``, after the jars already configured and only once; ``spark.sql.extensions``
    gets :data:`SQL_EXTENSIONS` the same way, which gives every session the connector's SQL
    functions (see :mod:`spark_kinesis.functions`). The builder is changed in place and returned,
    for chaining.

    It also looks for another connector that registers the data source name ``aws-kinesis``, as
    the awslabs connector does (Amazon EMR 7.1+ puts it on the classpath): in the jars the session
    will load (``spark.jars``, ``spark.driver.extraClassPath``, ``spark-defaults.conf``,
    ``$SPARK_HOME/jars``), or by asking Spark when a classic session is running. Spark resolves
    that name to the other connector, so a warning says so; ``spark-kinesis`` (:data:`FORMAT`,
    used by the builders) always selects this connector.

    A builder for a remote Spark Connect server (``remote("sc://...")``, ``SPARK_REMOTE``) gets
    nothing and a warning: the jars belong on the server. A local Connect server
    (``remote("local[2]")``) is started by pyspark with the builder's settings and gets the jars.

    Parameters
    ----------
    builder : pyspark.sql.SparkSession.Builder
        The builder, for example ``SparkSession.builder.appName("app")``. Configure it before
        ``getOrCreate()``: a jar cannot be added to a JVM that is already running.

    Returns
    -------
    pyspark.sql.SparkSession.Builder
        The same builder, with the jars added.

    Raises
    ------
    TypeError
        If ``builder`` is not a ``SparkSession.Builder``.
    SparkVersionMismatchError
        If no bundled line serves the installed pyspark (older than every line, or a Scala
        version without a build); the message lists the supported lines.
    JarNotFoundError
        If a jar is missing (see :func:`jar_paths`).

    Warns
    -----
    UserWarning
        If the installed pyspark is newer than every built line: the newest build is used.
    UserWarning
        If ``spark.speculation`` is enabled on the builder: a speculative copy of a read task
        spends its shard's read budget again (the output stays exact: a copy whose end differs
        from the one recorded first fails).
    ProviderConflictWarning
        If another provider registers ``aws-kinesis`` (the message names both classes, and the
        jar when it was found in one).
    UserWarning
        If the builder is for a remote Spark Connect server: nothing is added.

    Examples
    --------
    >>> from pyspark.sql import SparkSession
    >>> from spark_kinesis import configure_spark
    >>> builder = SparkSession.builder.appName("kinesis-demo").master("local[2]")
    >>> spark = configure_spark(builder).getOrCreate()  # doctest: +SKIP

    Jars configured earlier stay configured:

    >>> builder = SparkSession.builder.config("spark.jars", "/opt/jars/other.jar")
    >>> configure_spark(builder)  # doctest: +SKIP
    >>> # spark.jars is now "/opt/jars/other.jar,<line jar>,<spark-kinesis-deps jar>"
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError as error:
        raise ImportError(
            "configure_spark needs pyspark: pip install 'spark-kinesis[spark]' "
            f"(or pip install 'pyspark=={SPARK_VERSION}')"
        ) from error

    if not isinstance(builder, SparkSession.Builder) and not is_connect_session(builder):
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

    options = _builder_settings(builder)

    server = _connect_server(builder, options)
    if server is not None:
        warnings.warn(
            f"configure_spark: this builder makes a Spark Connect session with {server}: the "
            "connector runs on that server, so its jars belong there and spark.jars is left "
            "unchanged (a Connect client cannot add jars to a running server). Start the server "
            "with them, for example: spark-submit --class "
            "org.apache.spark.sql.connect.service.SparkConnectServer "
            '--jars "$(spark-kinesis jar)" (on Databricks, install both jars as cluster '
            "libraries). The client needs this package only for the typed builders; errors from "
            "the server arrive at the first action.",
            UserWarning,
            stacklevel=2,
        )
        return builder

    needed = jar_paths()

    if str(options.get("spark.speculation", "false")).strip().lower() == "true":
        warnings.warn(
            "spark.speculation is true: a speculative copy of a Kinesis read task fetches the "
            "same records again and spends the shard's read budget (5 GetRecords calls per "
            "second); the output stays exact (a copy whose end differs from the one recorded "
            "first fails). Consider spark.speculation=false for streaming queries that read "
            "Kinesis.",
            UserWarning,
            stacklevel=2,
        )

    jars = [jar.strip() for jar in str(options.get("spark.jars") or "").split(",") if jar.strip()]
    jars.extend(jar for jar in needed if jar not in jars)
    builder = builder.config("spark.jars", ",".join(jars))
    extensions = [
        name.strip()
        for name in str(options.get("spark.sql.extensions") or "").split(",")
        if name.strip()
    ]
    if SQL_EXTENSIONS not in extensions:
        extensions.append(SQL_EXTENSIONS)
    builder = builder.config("spark.sql.extensions", ",".join(extensions))

    active = SparkSession.getActiveSession()
    if is_classic_session(active):
        # A running classic session: Spark itself says what "aws-kinesis" selects.
        warn_if_taken(active, stacklevel=3)
    else:
        for conflict in classpath_conflicts(_builder_settings(builder)):
            warnings.warn(conflict.message(), ProviderConflictWarning, stacklevel=2)
    return builder


def _connect_server(builder: object, options: Mapping[str, object]) -> str | None:
    """Name the remote Spark Connect server a builder connects to, or ``None``.

    ``None`` also for a classic session and for a local Connect server (``remote("local[...]")``
    or ``spark.api.mode=connect`` with a local master): pyspark starts that one in a JVM of its
    own, with the builder's settings, so ``spark.jars`` reaches it. The name keeps only the
    scheme, host and port: the rest of a Connect URL can carry a token.
    """
    url = options.get("spark.remote") or os.environ.get("SPARK_REMOTE")
    if url is None and is_connect_session(builder):
        return "a Spark Connect server"
    if url is None or not str(url).startswith("sc://"):
        return None
    return f"the server at sc://{urlparse(str(url)).netloc}"
