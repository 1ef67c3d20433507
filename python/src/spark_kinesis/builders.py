"""Typed builders for the connector's options: :class:`KinesisSource` and :class:`KinesisSink`.

A builder checks its Python values when it is created (before any JVM call) and emits the
``.option("kinesis.<key>", value)`` calls Spark needs. Each argument declares only its option key
and Python type; all else (the option's facts, the rules across options, the grammar of positions)
comes from the bundled jar's option table, so the builders refuse exactly what the jar refuses,
with the same rule id and text. Left to the jar are the checks that need more than the options: that
a credentials provider class loads, that two stream ARNs name different streams and agree with
``region``, and that position documents and consumer ARNs match the streams read. An argument left
``None`` is not set: the connector's default applies.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from spark_kinesis._fields import (
    PREFIX,
    Duration,
    check_extra_options,
    documented,
    option,
    option_fields,
    render,
)
from spark_kinesis.connect import is_classic_session, protect_secrets, session_of
from spark_kinesis.option_table import (
    OptionRuleError,
    bundled_option_rules,
    bundled_option_table,
)
from spark_kinesis.provider import _COMPATIBLE_FORMAT, FORMAT, check_format, warn_if_taken
from spark_kinesis.realtime import check_sink_allowed, interval_text, real_time_trigger
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
    from pyspark.sql import DataFrame, DataFrameReader, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery
    from pyspark.sql.streaming.readwriter import DataStreamReader, DataStreamWriter

    Reader = TypeVar("Reader", DataStreamReader, DataFrameReader)

__all__ = ["KinesisSink", "KinesisSource"]


@dataclass(frozen=True, kw_only=True)
class _KinesisOptions:
    """Options that the source and the sink share: where the stream is and how to call AWS."""

    owner: ClassVar[str] = "KinesisOptions"
    side: ClassVar[Literal["source", "sink"]] = "source"

    stream_name: str | None = option("streamName")
    stream_arn: str | None = option("streamArn")
    region: str | None = option("region")
    endpoint_url: str | None = option("endpointUrl")
    client_num_retries: int | None = option("clientNumRetries")
    client_retry_intervals_ms: Duration | None = option("clientRetryIntervalsMs")
    client_max_retry_interval_ms: Duration | None = option("clientMaxRetryIntervalMs")
    client_connect_timeout_ms: Duration | None = option("clientConnectTimeoutMs")
    client_socket_timeout_ms: Duration | None = option("clientSocketTimeoutMs")
    client_api_call_attempt_timeout_ms: Duration | None = option("clientApiCallAttemptTimeoutMs")
    client_max_connections: int | None = option("clientMaxConnections")
    proxy_address: str | None = option("proxyAddress")
    proxy_port: int | None = option("proxyPort")
    proxy_username: str | None = option("proxyUsername")
    proxy_password: str | None = option("proxyPassword")
    aws_access_key_id: str | None = option("awsAccessKeyId")
    aws_secret_key: str | None = option("awsSecretKey")
    session_token: str | None = option("sessionToken")
    sts_role_arn: str | None = option("stsRoleArn")
    sts_session_name: str | None = option("stsSessionName")
    sts_endpoint_url: str | None = option("stsEndpointUrl")
    sts_external_id: str | None = option("stsExternalId")
    credential_provider_class: str | None = option("credentialProviderClass")
    credential_provider_param: str | None = option("credentialProviderParam")
    extra_options: Mapping[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        given: dict[str, str] = {}
        for spec in option_fields(self):
            value = getattr(self, spec.name)
            if value is not None:
                given[spec.info.key] = render(self.owner, spec, value)
        known = {spec.info.full_key.lower(): spec.name for spec in option_fields(self)}
        extra = check_extra_options(self.owner, self.extra_options, known)
        self._check_rules(given)
        rendered = {PREFIX + key: text for key, text in given.items()}
        object.__setattr__(self, "_rendered", {**rendered, **extra})

    def _check_rules(self, given: Mapping[str, str]) -> None:
        """Raise at the first rule of the jar's table (in its order) that ``given`` breaks."""
        table = bundled_option_table()
        defaults = {key: info.default for key, info in table.items() if info.default is not None}
        for rule in bundled_option_rules():
            if rule.applies_to(self.side) and rule.broken_by(given, defaults):
                arguments = {spec.info.key: spec for spec in option_fields(self)}
                shown = [
                    f"{arguments[key].name}={arguments[key].shown(given.get(key))}"
                    for key in rule.option_keys()
                    if key in arguments
                ]
                text = rule.render_message(given, defaults)
                raise OptionRuleError(f"{self.owner}({', '.join(shown)}): {text}", rule.id, text)

    def _set_on(self, target: Any, format: str, method: str) -> Any:  # noqa: ANN401 - reader or writer
        """Set the format and these options on a reader or writer; return it, for chaining.

        On a classic session a warning says when ``aws-kinesis`` selects another connector; on a
        Connect session the secret options are redacted first (:func:`.connect.protect_secrets`).
        """
        check_format(format, owner=f"{self.owner}.{method}")
        session = session_of(target)
        if format == _COMPATIBLE_FORMAT and is_classic_session(session):
            warn_if_taken(session, stacklevel=4)
        options = self.options()
        protect_secrets(session, options, self.owner)
        return target.format(format).options(**options)

    def options(self) -> dict[str, str]:
        """Return the ``kinesis.*`` options this builder sets, as Spark's option strings.

        Secret values are included: this is what Spark needs. Do not log the result.

        Returns
        -------
        dict of str to str
            Option key to value, only for the arguments that were given.
        """
        rendered: dict[str, str] = getattr(self, "_rendered")  # noqa: B009 - set in __post_init__
        return dict(rendered)

    def with_options(self, **changes: Any) -> Any:  # noqa: ANN401 - returns the same builder type
        """Return a copy with some arguments changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def __repr__(self) -> str:
        shown: list[str] = []
        for spec in option_fields(self):
            value = getattr(self, spec.name)
            if value is not None:
                shown.append(f"{spec.name}={spec.shown(value)}")
        if self.extra_options:
            shown.append(f"extra_options=<{len(self.extra_options)} keys>")
        return f"{type(self).__name__}({', '.join(shown)})"


@documented
@dataclass(frozen=True, kw_only=True, repr=False)
class KinesisSource(_KinesisOptions):
    """Options of the source ``format("spark-kinesis")``, for streaming and batch reads.

    Every argument is keyword-only; ``None`` leaves the option unset, so that the connector's
    default applies. Values are checked here, before Spark is involved; errors name the argument,
    the option and what is allowed. The parameters are listed from the jar's option table.

    Examples
    --------
    >>> source = KinesisSource(
    ...     stream_name="clicks",
    ...     region="eu-west-1",
    ...     starting_position=StartingPosition.at_timestamp("2026-11-01T00:00:00Z"),
    ...     max_fetch_records_per_shard=50_000,
    ... )
    >>> source.options()["kinesis.startingPosition"]
    'AT_TIMESTAMP 2026-11-01T00:00:00Z'
    >>> df = source.read_stream(spark)  # doctest: +SKIP
    """

    owner: ClassVar[str] = "KinesisSource"

    kinesis_region: str | None = option("kinesisRegion")
    consumer_type: ConsumerType | str | None = option("consumerType")
    consumer_name: str | None = option("consumerName")
    starting_position: StartingPosition | ShardPositions | str | None = option("startingPosition")
    ending_position: EndingPosition | ShardPositions | str | None = option("endingPosition")
    fail_on_data_loss: bool | None = option("failOnDataLoss")
    include_sub_sequence_number: bool | None = option("includeSubSequenceNumber")
    max_fetch_records_per_shard: int | None = option("maxFetchRecordsPerShard")
    max_fetch_time_per_shard_sec: Duration | None = option("maxFetchTimePerShardSec")
    max_records_per_trigger: int | None = option("maxRecordsPerTrigger")
    max_bytes_per_trigger: int | None = option("maxBytesPerTrigger")
    max_fetch_rate: float | None = option("maxFetchRate")
    describe_shard_interval: Duration | None = option("describeShardInterval")
    min_batches_to_retain: int | None = option("minBatchesToRetain")
    check_new_record_threads: int | None = option("checkNewRecordThreads")
    metadata_committer_type: MetadataCommitterType | str | None = option("metadataCommitterType")
    metadata_path: str | None = option("metadataPath")
    dynamodb_table_name: str | None = option("dynamodb.tableName")
    dynamodb_region: str | None = option("dynamodb.region")
    dynamodb_endpoint_url: str | None = option("dynamodb.endpointUrl")
    metadata_num_retries: int | None = option("metadataNumRetries")
    metadata_retry_intervals_ms: Duration | None = option("metadataRetryIntervalsMs")
    metadata_max_retry_interval_ms: Duration | None = option("metadataMaxRetryIntervalMs")
    records_per_fetch: int | None = option("getRecords.numberOfRecordsPerFetch")
    fetch_interval_ms: Duration | None = option("getRecords.fetchIntervalMs")
    idle_probe_interval_ms: Duration | None = option("idleProbeIntervalMs")
    avoid_empty_batches: bool | None = option("avoidEmptyBatches")
    internal_avoid_empty_batches: bool | None = option("internal.avoidEmptyBatches")
    subscribe_timeout_sec: Duration | None = option("subscribeToShard.timeoutSec")
    subscribe_max_retries: int | None = option("subscribeToShard.maxRetries")
    subscribe_http_protocol: HttpProtocol | str | None = option("subscribeToShard.httpProtocol")
    consumer_deregister_on_stop: bool | None = option("consumerDeregisterOnStop")
    consumer_arn: str | None = option("consumerArn")
    consumer_tags: str | None = option("consumerTags")
    executor_affinity: bool | None = option("executorAffinity")
    shards_per_task: int | None = option("shardsPerTask")

    def apply(self, reader: Reader, *, format: str = FORMAT) -> Reader:
        """Set the format and these options on a ``DataStreamReader`` or a ``DataFrameReader``.

        Parameters
        ----------
        reader : pyspark.sql.streaming.DataStreamReader or pyspark.sql.DataFrameReader
            Usually ``spark.readStream``, or ``spark.read`` for a batch read.
        format : str, default "spark-kinesis"
            The data source name: :data:`spark_kinesis.FORMAT` selects this connector whatever
            else is on the classpath. ``"aws-kinesis"`` is accepted for jobs that need that name;
            on a classic session a warning then says when it selects another connector (as on
            Amazon EMR 7.1+, which bundles the awslabs connector).

        Returns
        -------
        pyspark.sql.streaming.DataStreamReader or pyspark.sql.DataFrameReader
            The reader, for chaining.

        Raises
        ------
        ValueError
            If ``format`` is not a name of this connector.

        Warns
        -----
        ProviderConflictWarning
            If ``format="aws-kinesis"`` and the session resolves that name to another provider.
        """
        return self._set_on(reader, format, "apply")  # type: ignore[no-any-return]

    def read_stream(self, spark: SparkSession, *, format: str = FORMAT) -> DataFrame:
        """Start reading: ``spark.readStream.format("spark-kinesis").options(...).load()``.

        Parameters
        ----------
        spark : pyspark.sql.SparkSession
            A session with the connector jar (see :func:`spark_kinesis.configure_spark`).
        format : str, default "spark-kinesis"
            The data source name, as for :meth:`apply`.

        Returns
        -------
        pyspark.sql.DataFrame
            A streaming DataFrame with the connector's read schema.
        """
        return self.apply(spark.readStream, format=format).load()

    def read(self, spark: SparkSession, *, format: str = FORMAT) -> DataFrame:
        """Read once: ``spark.read.format("spark-kinesis").options(...).load()``.

        The read covers ``starting_position`` to ``ending_position`` (by default, everything
        retained up to the tip of each shard when the read is planned), with GetRecords.

        Parameters
        ----------
        spark : pyspark.sql.SparkSession
            A session with the connector jar (see :func:`spark_kinesis.configure_spark`).
        format : str, default "spark-kinesis"
            The data source name, as for :meth:`apply`.

        Returns
        -------
        pyspark.sql.DataFrame
            A DataFrame with the connector's read schema.
        """
        return self.apply(spark.read, format=format).load()


@documented
@dataclass(frozen=True, kw_only=True, repr=False)
class KinesisSink(_KinesisOptions):
    """Options of the sink ``format("spark-kinesis")``, for streaming and batch writes.

    The DataFrame written must have the columns ``data`` (string or binary), ``partitionKey``
    (string) and optionally ``explicitHashKey`` (string). The parameters are listed from the jar's
    option table.

    Examples
    --------
    >>> sink = KinesisSink(stream_name="clicks-enriched", region="eu-west-1")
    >>> sink.options()
    {'kinesis.streamName': 'clicks-enriched', 'kinesis.region': 'eu-west-1'}
    >>> query = sink.write_stream(df, checkpoint_location="/chk/clicks")  # doctest: +SKIP
    """

    owner: ClassVar[str] = "KinesisSink"
    side: ClassVar[Literal["source", "sink"]] = "sink"

    producer: SinkProducer | str | None = option("sink.producer")
    flush_wait_time_ms: Duration | None = option("sink.flushWaitTimeMs")
    record_max_buffered_time_ms: Duration | None = option("sink.recordMaxBufferedTimeMs")
    max_connections: int | None = option("sink.maxConnections")
    aggregation_enabled: bool | None = option("sink.aggregationEnabled")
    record_ttl: Duration | None = option("sink.recordTtl")
    verify_certificate: bool | None = option("sink.verifyCertificate")
    producer_sts_endpoint_url: str | None = option("sink.stsEndpointUrl")
    sink_proxy_address: str | None = option("sink.proxyAddress")
    sink_proxy_port: int | None = option("sink.proxyPort")
    sink_proxy_username: str | None = option("sink.proxyUsername")
    sink_proxy_password: str | None = option("sink.proxyPassword")
    rate_limit: int | None = option("sink.rateLimit")
    request_timeout_ms: Duration | None = option("sink.requestTimeoutMs")
    metrics_level: MetricsLevel | str | None = option("sink.metricsLevel")
    aggregation_max_count: int | None = option("sink.aggregationMaxCount")
    aggregation_max_size: int | None = option("sink.aggregationMaxSize")
    threading_model: ThreadingModel | str | None = option("sink.threadingModel")
    max_outstanding_records: int | None = option("sink.maxOutstandingRecords")

    def apply(self, writer: DataStreamWriter, *, format: str = FORMAT) -> DataStreamWriter:
        """Set the format and these options on a ``DataStreamWriter`` (``df.writeStream``).

        Parameters
        ----------
        writer : pyspark.sql.streaming.DataStreamWriter
            Usually ``df.writeStream``.
        format : str, default "spark-kinesis"
            The data source name, as for :meth:`KinesisSource.apply`.

        Returns
        -------
        pyspark.sql.streaming.DataStreamWriter
            The writer, for chaining.
        """
        return self._set_on(writer, format, "apply")  # type: ignore[no-any-return]

    def write_stream(
        self,
        df: DataFrame,
        checkpoint_location: str,
        *,
        query_name: str | None = None,
        processing_time: str | timedelta | None = None,
        real_time: str | timedelta | None = None,
        format: str = FORMAT,
    ) -> StreamingQuery:
        """Start a streaming query that writes ``df`` to the stream.

        Parameters
        ----------
        df : pyspark.sql.DataFrame
            A streaming DataFrame with ``data`` and ``partitionKey`` columns.
        checkpoint_location : str
            The query's checkpoint directory (required: the sink is at-least-once across restarts).
        query_name : str, optional
            A name for the query.
        processing_time : str or timedelta, optional
            A processing-time trigger: an interval such as ``"10 seconds"`` or a ``timedelta``;
            default: as fast as possible.
        real_time : str or timedelta, optional
            Run in Spark's real-time mode (Spark 4.1 and newer) with this batch duration, such
            as ``"5 minutes"`` or ``timedelta(minutes=5)``: records are written as they are read,
            and the duration only sets how often offsets are checkpointed (see
            :mod:`spark_kinesis.realtime`). The session must set
            ``spark.sql.streaming.realTimeMode.allowlistCheck`` to ``false``.
        format : str, default "spark-kinesis"
            The data source name, as for :meth:`KinesisSource.apply`.

        Returns
        -------
        pyspark.sql.streaming.StreamingQuery
            The running query.

        Raises
        ------
        ValueError
            If ``checkpoint_location`` is empty, both triggers are given, or ``real_time`` is
            given on Spark older than 4.1 or with the allow-list check on.

        Examples
        --------
        A Kinesis to Kinesis pipeline in real-time mode:

        >>> spark.conf.set("spark.sql.streaming.realTimeMode.allowlistCheck", "false")
        ... # doctest: +SKIP
        >>> events = KinesisSource(
        ...     stream_name="events", consumer_type=ConsumerType.SUBSCRIBE_TO_SHARD,
        ...     consumer_name="enricher"
        ... ).read_stream(spark)  # doctest: +SKIP
        >>> KinesisSink(stream_name="enriched").write_stream(
        ...     events.selectExpr("data", "partitionKey"), "/chk/enricher", real_time="5 minutes"
        ... )  # doctest: +SKIP
        """
        if not isinstance(checkpoint_location, str) or not checkpoint_location.strip():
            raise ValueError(
                "KinesisSink.write_stream(checkpoint_location=...): a non-empty path is required"
            )
        if processing_time is not None and real_time is not None:
            raise ValueError(
                "KinesisSink.write_stream: give processing_time or real_time, not both "
                f"(got processing_time={processing_time!r}, real_time={real_time!r})"
            )
        writer = self.apply(df.writeStream, format=format).option(
            "checkpointLocation", checkpoint_location
        )
        if query_name is not None:
            writer = writer.queryName(query_name)
        if processing_time is not None:
            writer = writer.trigger(processingTime=interval_text(processing_time))
        if real_time is not None:
            real_time_trigger(writer, real_time)
            check_sink_allowed(df.sparkSession)
        return writer.start()

    def write(self, df: DataFrame, *, format: str = FORMAT) -> None:
        """Write a batch DataFrame to the stream (``df.write.format("spark-kinesis")...save()``).

        Parameters
        ----------
        df : pyspark.sql.DataFrame
            A DataFrame with ``data`` and ``partitionKey`` columns.
        format : str, default "spark-kinesis"
            The data source name, as for :meth:`KinesisSource.apply`.
        """
        self._set_on(df.write, format, "write").mode("append").save()
