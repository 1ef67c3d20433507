"""Spark's real-time mode (``Trigger.RealTime``, Spark 4.1 and newer) with this connector.

In real-time mode a query's tasks run for a whole batch and emit each Kinesis record as it arrives;
the batch duration only sets how often offsets are checkpointed (Spark's default: 5 minutes). It
needs the ``update`` output mode; on Spark 4.1 and 4.2 only stateless queries run in it (Spark 4.3
adds aggregations and deduplication); and every shard read needs a free task slot for the whole
batch. See docs/guide/real-time.md for the latency and cost of each reader.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from spark_kinesis.lines import _major_minor

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.readwriter import DataStreamWriter

__all__ = [
    "ALLOWLIST_CHECK_CONF",
    "MIN_SPARK_VERSION",
    "check_sink_allowed",
    "interval_text",
    "real_time_trigger",
    "require_real_time",
]

MIN_SPARK_VERSION = (4, 1)
"""The first Spark release with real-time mode."""

ALLOWLIST_CHECK_CONF = "spark.sql.streaming.realTimeMode.allowlistCheck"
"""Spark's check that a real-time query writes only to sinks on its allow-list (ours is not)."""


def interval_text(interval: str | timedelta) -> str:
    """Return a trigger interval as Spark reads it: a ``timedelta`` in milliseconds, text as is.

    Examples
    --------
    >>> interval_text(timedelta(seconds=30))
    '30000 milliseconds'
    >>> interval_text("5 minutes")
    '5 minutes'
    """
    if isinstance(interval, timedelta):
        return f"{interval // timedelta(milliseconds=1)} milliseconds"
    return interval


def require_real_time(spark_version: str | None = None) -> None:
    """Fail unless the installed pyspark (or ``spark_version``) has real-time mode.

    Parameters
    ----------
    spark_version : str, optional
        A Spark version such as ``"4.1.3"``; default: the installed pyspark's.

    Raises
    ------
    ValueError
        If that Spark is older than 4.1, naming the version found and the one needed.
    """
    if spark_version is None:
        import pyspark

        spark_version = str(pyspark.__version__)
    major_minor = _major_minor(spark_version)
    if major_minor is None:
        raise ValueError(
            f"Cannot tell the Spark version from {spark_version!r}: real-time mode needs Spark "
            f"{MIN_SPARK_VERSION[0]}.{MIN_SPARK_VERSION[1]} or newer"
        )
    if major_minor < MIN_SPARK_VERSION:
        raise ValueError(
            f"Real-time mode (trigger realTime) needs Spark {MIN_SPARK_VERSION[0]}."
            f"{MIN_SPARK_VERSION[1]} or newer; this is Spark {spark_version}. Use a "
            "processing-time trigger on this Spark line (docs/guide/real-time.md compares the "
            "modes), or upgrade."
        )


def real_time_trigger(
    writer: DataStreamWriter, batch_duration: str | timedelta = "5 minutes"
) -> DataStreamWriter:
    """Set a real-time trigger and the ``update`` output mode on a streaming writer.

    Parameters
    ----------
    writer : pyspark.sql.streaming.DataStreamWriter
        Usually ``df.writeStream`` of a DataFrame read with ``format("spark-kinesis")``.
    batch_duration : str or timedelta, default "5 minutes"
        How often offsets are checkpointed, such as ``"30 seconds"`` or
        ``timedelta(seconds=30)``. It is not a latency: records are emitted as they arrive.
        After a reshard the new shards are read from the next batch on, so a shorter duration
        shortens that pause.

    Returns
    -------
    pyspark.sql.streaming.DataStreamWriter
        The writer, for chaining.

    Raises
    ------
    ValueError
        If the installed pyspark is older than 4.1, or ``batch_duration`` is empty.

    Examples
    --------
    >>> from spark_kinesis.realtime import real_time_trigger
    >>> query = real_time_trigger(
    ...     events.writeStream.format("console"), "30 seconds"
    ... ).start()  # doctest: +SKIP
    """
    require_real_time()
    if isinstance(batch_duration, timedelta) and batch_duration > timedelta(0):
        batch_duration = interval_text(batch_duration)
    if not isinstance(batch_duration, str) or not batch_duration.strip():
        raise ValueError(
            f"real_time_trigger(batch_duration={batch_duration!r}): expected a duration such as "
            "'5 minutes' or '30 seconds'"
        )
    writer = writer.outputMode("update")
    try:
        return writer.trigger(realTime=batch_duration)  # type: ignore[call-overload, no-any-return, unused-ignore]
    except TypeError:
        # pyspark 4.1's Python API lacks the keyword that its JVM has: set the JVM trigger directly.
        jwrite = getattr(writer, "_jwrite", None)
        if jwrite is None:
            raise ValueError(
                "This pyspark has no realTime trigger in Python and no JVM writer to set it on "
                "(Spark Connect?): use pyspark 4.2 or newer for real-time mode from Python"
            ) from None
        jvm: Any = writer._spark._jvm
        trigger = jvm.org.apache.spark.sql.streaming.Trigger.RealTime(batch_duration)
        writer._jwrite = jwrite.trigger(trigger)
        return writer


def check_sink_allowed(spark: SparkSession) -> None:
    """Fail unless ``spark`` lets a real-time query write to this connector's sink.

    Spark checks the sinks of real-time queries against an allow-list that names only its own;
    writing to Kinesis in real-time mode needs ``spark.sql.streaming.realTimeMode.allowlistCheck``
    set to ``false``.

    Raises
    ------
    ValueError
        If the check is on, naming the setting and how to change it.
    """
    value = spark.conf.get(ALLOWLIST_CHECK_CONF, "true")
    if str(value).strip().lower() != "false":
        raise ValueError(
            f"A real-time query can write to the Kinesis sink only with {ALLOWLIST_CHECK_CONF}="
            f"false (Spark's allow-list of real-time sinks names only its own; it is {value!r}). "
            f'Set it with spark.conf.set("{ALLOWLIST_CHECK_CONF}", "false").'
        )
