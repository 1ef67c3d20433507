"""The connector's SQL functions, as PySpark column functions.

The functions live in the connector's jar and reach a session through the SQL extension
:data:`SQL_EXTENSIONS` (``spark.sql.extensions``), which :func:`spark_kinesis.configure_spark`
adds to a builder; a classic session started without it gets them from
:func:`register_functions`. The wrappers here call them by name with
``pyspark.sql.functions.call_function``, so they work with classic sessions and with Spark Connect
sessions whose server has the extension.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession
    from pyspark.sql._typing import ColumnOrName
    from pyspark.sql.types import StructType

__all__ = ["SQL_EXTENSIONS", "dynamodb_changes", "register_functions"]

SQL_EXTENSIONS = "io.sparkkinesis.KinesisSqlExtensions"
"""The class to list in ``spark.sql.extensions`` for the connector's SQL functions."""


def dynamodb_changes(data: ColumnOrName, schema: str | StructType | None = None) -> Column:
    """Decode the change records that Kinesis Data Streams for DynamoDB writes.

    Each record is one JSON document describing one item change. The result is a struct of
    ``eventName`` (``INSERT``, ``MODIFY`` or ``REMOVE``), ``eventId``, ``tableName``,
    ``awsRegion``, ``keys``, ``newImage`` (null for ``REMOVE``), ``oldImage`` (null for
    ``INSERT``), ``approximateCreationTime`` (a timestamp, at the millisecond or microsecond
    precision of the record), ``sizeBytes`` and ``principalId`` (``dynamodb.amazonaws.com`` for a
    Time to Live delete).

    The session needs the connector's SQL extension (:data:`SQL_EXTENSIONS`, added by
    :func:`spark_kinesis.configure_spark`, or :func:`register_functions` on a running classic
    session); a Spark Connect server needs it in its own configuration.

    Parameters
    ----------
    data : :class:`~pyspark.sql.Column` or str
        The record's data, BINARY (the ``data`` column of the Kinesis source) or STRING.
    schema : str or :class:`~pyspark.sql.types.StructType`, optional
        The item's attributes to type, as a DDL string (``"id STRING, price DECIMAL(10,2)"``) or
        a ``StructType``. ``keys``, ``newImage`` and ``oldImage`` are then structs of these fields,
        each DynamoDB value converted exactly to its field's type (a value that does not fit fails
        the query, naming the field). Without it they are untyped: ``VARIANT`` on Spark 4, a JSON
        string on Spark 3.5.

    Returns
    -------
    :class:`~pyspark.sql.Column`
        The decoded change, a struct; null for a null record.

    Examples
    --------
    >>> from pyspark.sql.functions import col
    >>> from spark_kinesis import dynamodb_changes
    >>> changes = records.select(  # doctest: +SKIP
    ...     dynamodb_changes(col("data"), "id STRING, price DECIMAL(10,2)").alias("change"),
    ...     "sequenceNumber",
    ... )
    """
    from pyspark.sql.functions import call_function, col, lit
    from pyspark.sql.types import StructType

    column = col(data) if isinstance(data, str) else data
    if schema is None:
        return call_function("dynamodb_changes", column)
    if isinstance(schema, StructType):
        return call_function("dynamodb_changes", column, lit(schema.json()))
    if isinstance(schema, str):
        return call_function("dynamodb_changes", column, lit(schema))
    raise TypeError(
        "dynamodb_changes: schema must be a DDL string such as 'id STRING, price DECIMAL(10,2)' "
        f"or a StructType, got {type(schema).__name__}"
    )


def register_functions(spark: SparkSession) -> None:
    """Add the connector's SQL functions to a running classic session.

    For a session built without :data:`SQL_EXTENSIONS` in ``spark.sql.extensions`` (for example
    one a notebook started for you). A Spark Connect session cannot be changed from the client:
    configure the extension on its server.

    Parameters
    ----------
    spark : :class:`~pyspark.sql.SparkSession`
        A classic session whose JVM has the connector's jar.

    Raises
    ------
    TypeError
        If ``spark`` is a Spark Connect session or not a session.
    """
    from spark_kinesis.connect import is_classic_session

    if not is_classic_session(spark):
        raise TypeError(
            "register_functions needs a classic SparkSession; for Spark Connect add "
            f"spark.sql.extensions={SQL_EXTENSIONS} to the server's configuration"
        )
    session: Any = spark
    session._jvm.io.sparkkinesis.KinesisSqlExtensions.register(session._jsparkSession)
