"""The connector's SQL functions, as PySpark column functions.

The functions live in the connector's jar and reach a session through the SQL extension
:data:`SQL_EXTENSIONS` (``spark.sql.extensions``), which :func:`spark_kinesis.configure_spark`
adds to a builder; a classic session started without it gets them from
:func:`register_functions`. The wrappers here call them by name with
``pyspark.sql.functions.call_function``, so they work with classic sessions and with Spark Connect
sessions whose server has the extension.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession
    from pyspark.sql._typing import ColumnOrName
    from pyspark.sql.types import StructType

__all__ = [
    "SQL_EXTENSIONS",
    "dynamodb_changes",
    "from_glue_schema_registry",
    "register_functions",
    "to_glue_schema_registry",
]

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


def _registry_options(function: str, options: Mapping[str, str] | None, **named: object) -> Column:
    """Build the options map of a Glue Schema Registry function: ``options`` and the named ones."""
    from pyspark.sql.functions import create_map, lit

    merged: dict[str, str] = {}
    for key, value in (options or {}).items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(
                f"{function}: options must map strings to strings, got {key!r}: {value!r}"
            )
        merged[key] = value
    for name, given in named.items():
        if given is None:
            continue
        key = "kinesis.schemaRegistry." + name
        if key in merged:
            raise ValueError(f"{function}: {key} is given twice, as an argument and in options")
        merged[key] = str(given).lower() if isinstance(given, bool) else str(given)
    return create_map(*[lit(part) for pair in merged.items() for part in pair])


def from_glue_schema_registry(
    data: ColumnOrName,
    schema_name: str | None = None,
    *,
    registry_name: str | None = None,
    schema_version: int | None = None,
    schema_definition: str | None = None,
    data_format: str | None = None,
    mode: str | None = None,
    error_field: str | None = None,
    options: Mapping[str, str] | None = None,
) -> Column:
    """Decode records framed by the AWS Glue Schema Registry into a struct.

    Producers that use the Glue Schema Registry (the serde library, the KPL or KCL with a schema,
    Glue streaming jobs) put an 18-byte header before each payload: the version byte 3, a
    compression byte and the id of the writer's schema version. Each record is decoded with its own
    writer schema (fetched from Glue by that id once per executor) and read as the reader schema:
    the latest version of ``schema_name`` unless ``schema_version`` or ``schema_definition`` says
    otherwise. Avro payloads follow Avro's schema evolution rules and have the type Spark's
    ``from_avro`` gives the reader schema; JSON (JSON Schema) payloads are matched by field name
    (a missing field is its ``default`` or null, an unknown one is skipped), with the types
    listed in docs/guide/payloads.md; Protobuf payloads (the record is the ``.proto`` file's first
    message) are matched by field name too, typed as Spark's ``from_protobuf`` types them.

    The session needs the connector's SQL extension (see :func:`dynamodb_changes`). The reader
    schema is looked up when the query is analysed, on the driver.

    Parameters
    ----------
    data : :class:`~pyspark.sql.Column` or str
        The framed records, BINARY (the ``data`` column of the Kinesis source).
    schema_name : str, optional
        The Glue schema (``kinesis.schemaRegistry.schemaName``); give it or ``schema_definition``.
    registry_name : str, optional
        The registry (``kinesis.schemaRegistry.registryName``, default ``default-registry``).
    schema_version : int, optional
        The version of ``schema_name`` to read as (default: the latest).
    schema_definition : str, optional
        A schema to read as, instead of a registered version.
    data_format : str, optional
        The format of ``schema_definition``: ``AVRO`` (default), ``JSON`` (a JSON Schema) or
        ``PROTOBUF`` (a ``.proto`` file).
    mode : str, optional
        ``FAILFAST`` (default): a record that cannot be decoded fails the query, saying why.
        ``PERMISSIVE``: it decodes to null.
    error_field : str, optional
        In ``PERMISSIVE`` mode, the name of a string field added to the struct with the reason a
        record could not be decoded (null for records that could).
    options : Mapping[str, str], optional
        Further connector options: ``kinesis.region``, ``kinesis.schemaRegistry.endpointUrl``,
        ``kinesis.stsRoleArn``, ``kinesis.credentialProviderClass``, proxy and timeout options
        (see docs/options.md). Secrets (static keys, passwords) are refused: a function's arguments
        appear in query plans.

    Returns
    -------
    :class:`~pyspark.sql.Column`
        The decoded record; null for a null input.

    Examples
    --------
    >>> from spark_kinesis import from_glue_schema_registry
    >>> orders = records.select(  # doctest: +SKIP
    ...     from_glue_schema_registry("data", "orders", registry_name="shop").alias("order")
    ... )
    """
    from pyspark.sql.functions import call_function, col

    column = col(data) if isinstance(data, str) else data
    settings = _registry_options(
        "from_glue_schema_registry",
        options,
        schemaName=schema_name,
        registryName=registry_name,
        schemaVersion=schema_version,
        schemaDefinition=schema_definition,
        dataFormat=data_format,
        mode=mode,
        errorField=error_field,
    )
    return call_function("from_glue_schema_registry", column, settings)


def to_glue_schema_registry(
    value: ColumnOrName,
    schema_name: str,
    *,
    registry_name: str | None = None,
    schema_version: int | None = None,
    schema_definition: str | None = None,
    data_format: str | None = None,
    auto_register: bool | None = None,
    compression: str | None = None,
    options: Mapping[str, str] | None = None,
) -> Column:
    """Encode a struct as a Glue Schema Registry record, for the sink's ``data`` column.

    The writer schema is a registered version of ``schema_name``: the latest (or
    ``schema_version``), or the version whose text is ``schema_definition``, which is registered
    first when ``auto_register`` is true. Consumers that use the Glue Schema Registry (the serde
    library, the KCL, :func:`from_glue_schema_registry`) read the result.

    Parameters
    ----------
    value : :class:`~pyspark.sql.Column` or str
        The values to write; their type must be writable with the schema (checked when the query
        is analysed, naming the field that does not fit).
    schema_name : str
        The Glue schema.
    registry_name : str, optional
        The registry (default ``default-registry``).
    schema_version : int, optional
        The version to write with (default: the latest).
    schema_definition : str, optional
        The schema to write with; its registered version is looked up by its text.
    data_format : str, optional
        The format of ``schema_definition``: ``AVRO`` (default), ``JSON`` (a JSON Schema) or
        ``PROTOBUF`` (a ``.proto`` file).
    auto_register : bool, optional
        Register ``schema_definition`` (creating the schema if needed) when the registry does not
        hold it; default false, which fails the query instead.
    compression : str, optional
        ``NONE`` (default) or ``ZLIB``.
    options : Mapping[str, str], optional
        Further connector options, as for :func:`from_glue_schema_registry`.

    Returns
    -------
    :class:`~pyspark.sql.Column`
        The framed record, BINARY.
    """
    from pyspark.sql.functions import call_function, col

    column = col(value) if isinstance(value, str) else value
    settings = _registry_options(
        "to_glue_schema_registry",
        options,
        schemaName=schema_name,
        registryName=registry_name,
        schemaVersion=schema_version,
        schemaDefinition=schema_definition,
        dataFormat=data_format,
        autoRegister=auto_register,
        compression=compression,
    )
    return call_function("to_glue_schema_registry", column, settings)


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
