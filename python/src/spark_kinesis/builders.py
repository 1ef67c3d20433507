"""Typed builders for the connector's options: :class:`KinesisSource` and :class:`KinesisSink`.

A builder holds Python values, checks them when it is created (before any JVM call) and emits the
``.option("kinesis.<key>", value)`` calls Spark needs. Value patterns and the rules across options
(credentials, STS, fan-out, metadata committer) come from the option table in the bundled jar, so
the builders refuse exactly what the jar refuses, with the same rule id and text; checks the jar
cannot state as data (stream-name lists, ARNs, the region, position documents against the streams)
are left to the jar. Every argument defaults to ``None``, which
means "not set": the connector's own default applies (listed with each argument, and by
``spark-kinesis options``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from spark_kinesis._fields import (
    PREFIX,
    OptionField,
    check_extra_options,
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
from spark_kinesis.provider import COMPATIBLE_FORMAT, FORMAT, check_format, warn_if_taken
from spark_kinesis.types import (
    ConsumerType,
    EndingPosition,
    HttpProtocol,
    MetadataCommitterType,
    ShardPositions,
    StartingPosition,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, DataFrameReader, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery
    from pyspark.sql.streaming.readwriter import DataStreamReader, DataStreamWriter

    Reader = TypeVar("Reader", DataStreamReader, DataFrameReader)

__all__ = ["KinesisSink", "KinesisSource"]


Millis = int | timedelta
"""A time in milliseconds: an ``int`` of milliseconds or a ``timedelta``."""

Seconds = int | timedelta
"""A time in seconds: an ``int`` of seconds or a ``timedelta`` of whole seconds."""


@dataclass(frozen=True, kw_only=True)
class _KinesisOptions:
    """Options that the source and the sink share: where the stream is and how to call AWS."""

    owner: ClassVar[str] = "KinesisOptions"
    side: ClassVar[Literal["source", "sink"]] = "source"

    stream_name: str | None = option(OptionField("streamName", "string"))
    stream_arn: str | None = option(OptionField("streamArn", "string"))
    region: str | None = option(OptionField("region", "string"))
    endpoint_url: str | None = option(OptionField("endpointUrl", "string"))
    client_num_retries: int | None = option(
        OptionField("clientNumRetries", "integer", "5", minimum=0, maximum=100)
    )
    client_retry_intervals_ms: Millis | None = option(
        OptionField("clientRetryIntervalsMs", "integer", "1000", unit="ms", minimum=1)
    )
    client_max_retry_interval_ms: Millis | None = option(
        OptionField("clientMaxRetryIntervalMs", "integer", "10000", unit="ms", minimum=1)
    )
    client_connect_timeout_ms: Millis | None = option(
        OptionField(
            "clientConnectTimeoutMs", "integer", "2000", unit="ms", minimum=1, maximum=600000
        )
    )
    client_socket_timeout_ms: Millis | None = option(
        OptionField(
            "clientSocketTimeoutMs", "integer", "30000", unit="ms", minimum=1, maximum=3600000
        )
    )
    client_api_call_attempt_timeout_ms: Millis | None = option(
        OptionField(
            "clientApiCallAttemptTimeoutMs", "integer", unit="ms", minimum=1, maximum=3600000
        )
    )
    client_max_connections: int | None = option(
        OptionField("clientMaxConnections", "integer", "64", minimum=1, maximum=10000)
    )
    proxy_address: str | None = option(OptionField("proxyAddress", "string"))
    proxy_port: int | None = option(
        OptionField("proxyPort", "integer", "443", minimum=1, maximum=65535)
    )
    proxy_username: str | None = option(OptionField("proxyUsername", "string"))
    proxy_password: str | None = option(OptionField("proxyPassword", "string", secret=True))
    aws_access_key_id: str | None = option(OptionField("awsAccessKeyId", "string", secret=True))
    aws_secret_key: str | None = option(OptionField("awsSecretKey", "string", secret=True))
    session_token: str | None = option(OptionField("sessionToken", "string", secret=True))
    sts_role_arn: str | None = option(OptionField("stsRoleArn", "string"))
    sts_session_name: str | None = option(OptionField("stsSessionName", "string"))
    sts_endpoint_url: str | None = option(OptionField("stsEndpointUrl", "string"))
    sts_external_id: str | None = option(OptionField("stsExternalId", "string", secret=True))
    credential_provider_class: str | None = option(OptionField("credentialProviderClass", "string"))
    credential_provider_param: str | None = option(
        OptionField("credentialProviderParam", "string", secret=True)
    )
    extra_options: Mapping[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        given: dict[str, str] = {}
        for name, spec in option_fields(self):
            value = getattr(self, name)
            if value is not None:
                given[spec.key] = render(self.owner, name, spec, value)
        known = {spec.full_key.lower(): name for name, spec in option_fields(self)}
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
                arguments = {spec.key: (name, spec) for name, spec in option_fields(self)}
                shown = []
                for key in rule.option_keys():
                    if key in arguments:
                        name, spec = arguments[key]
                        value = "<secret>" if spec.secret and key in given else repr(given.get(key))
                        shown.append(f"{name}={value}")
                text = rule.render_message(given, defaults)
                raise OptionRuleError(f"{self.owner}({', '.join(shown)}): {text}", rule.id, text)

    def _set_on(self, target: Any, format: str, method: str) -> Any:  # noqa: ANN401 - reader or writer
        """Set the format and these options on a reader or writer; return it, for chaining.

        The name is checked first; on a classic session ``aws-kinesis`` is looked up in Spark and a
        warning says when it selects another connector. On a Spark Connect session the secret
        options are made redacted before they are sent (see
        :func:`spark_kinesis.connect.protect_secrets`).
        """
        check_format(format, owner=f"{self.owner}.{method}")
        session = session_of(target)
        if format == COMPATIBLE_FORMAT and is_classic_session(session):
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

    def options_value(self, name: str) -> str | None:
        """Return the option string of one argument, or ``None`` when it is unset."""
        spec = dict(option_fields(self))[name]
        value = getattr(self, name)
        return None if value is None else render(self.owner, name, spec, value)

    def with_options(self, **changes: Any) -> Any:  # noqa: ANN401 - returns the same builder type
        """Return a copy with some arguments changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def __repr__(self) -> str:
        shown: list[str] = []
        for name, spec in option_fields(self):
            value = getattr(self, name)
            if value is not None:
                shown.append(f"{name}={'<secret>' if spec.secret else repr(value)}")
        if self.extra_options:
            shown.append(f"extra_options=<{len(self.extra_options)} keys>")
        return f"{type(self).__name__}({', '.join(shown)})"


@dataclass(frozen=True, kw_only=True, repr=False)
class KinesisSource(_KinesisOptions):
    """Options of the source ``format("spark-kinesis")``, for streaming and batch reads.

    Every argument is keyword-only and optional except ``stream_name``; ``None`` leaves the option
    unset so that the connector's default applies. Values are checked here, before Spark is
    involved; errors name the argument, the option and what is allowed.

    Parameters
    ----------
    stream_name : str
        ``kinesis.streamName``: the stream to read, or a comma-separated list of streams (the
        ``streamName`` column tells their rows apart). Required unless ``stream_arn`` is set.
    stream_arn : str
        ``kinesis.streamArn``: the ARN of the stream to read, or a comma-separated list, instead of
        ``stream_name`` (requests then name the stream by ARN; the region comes from the ARN).
    region : str, optional
        ``kinesis.region``: AWS region of the connector's clients (default: from the endpoint, else
        the AWS default region chain).
    endpoint_url : str, optional
        ``kinesis.endpointUrl``: Kinesis endpoint, such as a VPC endpoint or a local emulator.
    kinesis_region : str, optional
        ``kinesis.kinesisRegion``: the stream's region when it differs from ``region``.
    consumer_type : ConsumerType or str, optional
        ``kinesis.consumerType``: GetRecords (default) or SubscribeToShard (enhanced fan-out).
    consumer_name : str, optional
        ``kinesis.consumerName``: the enhanced fan-out consumer; required for SubscribeToShard.
    starting_position : StartingPosition, ShardPositions or str, optional
        ``kinesis.startingPosition``: where a query without checkpoint starts (default LATEST;
        TRIM_HORIZON for a batch read); a :class:`ShardPositions` places each shard.
    ending_position : EndingPosition, ShardPositions or str, optional
        ``kinesis.endingPosition``: batch reads (:meth:`read`) only; where the read ends,
        exclusive (default LATEST: the tip of each shard when the read is planned).
    fail_on_data_loss : bool, optional
        ``kinesis.failOnDataLoss``: fail when unread records are gone (default False).
    include_sub_sequence_number : bool, optional
        ``kinesis.includeSubSequenceNumber``: add a ``subSequenceNumber`` column (long; the index
        of a record in its KPL aggregate, 0 for a record that was not aggregated), so that
        ``(streamName, shardId, sequenceNumber, subSequenceNumber)`` is unique per record
        (default False).
    max_fetch_records_per_shard : int, optional
        ``kinesis.maxFetchRecordsPerShard``: most records per shard per batch (default 100000).
    max_fetch_time_per_shard_sec : int or timedelta, optional
        ``kinesis.maxFetchTimePerShardSec``: most time per shard per batch (default unlimited).
    max_fetch_rate : float, optional
        ``kinesis.maxFetchRate``: most MB per second read from one shard, across the batches
        read on one executor (default unlimited), to share a shard's read throughput with other
        applications. GetRecords only: refused with ``consumer_type="SubscribeToShard"``.
    max_records_per_trigger : int, optional
        ``kinesis.maxRecordsPerTrigger``: most records per batch across all shards (default
        unlimited).
    max_bytes_per_trigger : int, optional
        ``kinesis.maxBytesPerTrigger``: most bytes of record data per batch across all shards
        (default unlimited; may pass by less than one record per shard).
    describe_shard_interval : int (ms) or timedelta, optional
        ``kinesis.describeShardInterval``: least time between two ListShards calls (default 1 s).
    min_batches_to_retain : int, optional
        ``kinesis.minBatchesToRetain``: batches of metadata kept (default Spark's setting).
    check_new_record_threads : int, optional
        ``kinesis.checkNewRecordThreads``: driver threads reading batch metadata (default 8).
    metadata_committer_type : MetadataCommitterType or str, optional
        ``kinesis.metadataCommitterType``: HDFS (default) or DYNAMODB.
    metadata_path : str, optional
        ``kinesis.metadataPath``: Hadoop path of the metadata (default inside the checkpoint).
    dynamodb_table_name : str, optional
        ``kinesis.dynamodb.tableName``: table of the metadata; required for DYNAMODB.
    dynamodb_region, dynamodb_endpoint_url : str, optional
        ``kinesis.dynamodb.region`` / ``kinesis.dynamodb.endpointUrl``: where that table lives
        (default: the Kinesis region and its regional endpoint).
    metadata_num_retries, metadata_retry_intervals_ms, metadata_max_retry_interval_ms : optional
        ``kinesis.metadataNumRetries`` (5), ``kinesis.metadataRetryIntervalsMs`` (1000 ms),
        ``kinesis.metadataMaxRetryIntervalMs`` (10000 ms): retries of metadata reads and writes.
    client_num_retries, client_retry_intervals_ms, client_max_retry_interval_ms : optional
        ``kinesis.clientNumRetries`` (5), ``kinesis.clientRetryIntervalsMs`` (1000 ms),
        ``kinesis.clientMaxRetryIntervalMs`` (10000 ms): retries of Kinesis API calls.
    client_connect_timeout_ms, client_socket_timeout_ms, \
client_api_call_attempt_timeout_ms : optional
        ``kinesis.clientConnectTimeoutMs`` (2000 ms), ``kinesis.clientSocketTimeoutMs`` (30000 ms),
        ``kinesis.clientApiCallAttemptTimeoutMs`` (none): timeouts of the AWS SDK clients.
    client_max_connections : int, optional
        ``kinesis.clientMaxConnections``: pooled connections of a Kinesis or DynamoDB client (64).
    proxy_address, proxy_port, proxy_username, proxy_password : optional
        ``kinesis.proxyAddress``, ``kinesis.proxyPort`` (443), ``kinesis.proxyUsername``,
        ``kinesis.proxyPassword`` (secret): the HTTP proxy of every AWS call (docs/network.md).
    records_per_fetch : int, optional
        ``kinesis.getRecords.numberOfRecordsPerFetch``: records per GetRecords call (default 10000).
    fetch_interval_ms : int or timedelta, optional
        ``kinesis.getRecords.fetchIntervalMs``: least time between GetRecords (200 ms).
    idle_probe_interval_ms : int or timedelta, optional
        ``kinesis.idleProbeIntervalMs``: longest wait between polling batches at the tips (1000 ms);
        the wait doubles from ``fetch_interval_ms`` while batches find nothing, and there is none
        after a batch that found records. Enhanced fan-out never waits.
    subscribe_timeout_sec : int or timedelta, optional
        ``kinesis.subscribeToShard.timeoutSec``: wait for a SubscribeToShard call (default 60 s).
    subscribe_max_retries : int, optional
        ``kinesis.subscribeToShard.maxRetries``: renewals after recoverable errors in a row (10).
    subscribe_http_protocol : HttpProtocol or str, optional
        ``kinesis.subscribeToShard.httpProtocol``: HTTP2 (AWS, default), HTTP2_ALPN or HTTP1_1.
    consumer_deregister_on_stop : bool, optional
        ``kinesis.consumerDeregisterOnStop``: deregister the consumer when the query stops (True).
    executor_affinity : bool, optional
        ``kinesis.executorAffinity``: run each shard's task on the same executor batch after
        batch, so it reuses the iterator or subscription left there (True).
    shards_per_task : int, optional
        ``kinesis.shardsPerTask``: shards one read task reads, at once with one metadata entry
        per task and batch in a stream, one after another in a batch read (automatic: one per
        task up to 2 tasks per core, then grouped).
    aws_access_key_id, aws_secret_key, session_token : str, optional
        ``kinesis.awsAccessKeyId``, ``kinesis.awsSecretKey``, ``kinesis.sessionToken``: static
        credentials. Secret: never shown by ``repr``.
    sts_role_arn, sts_session_name, sts_endpoint_url, sts_external_id : str, optional
        ``kinesis.stsRoleArn`` and friends: a role to assume for every AWS call.
    credential_provider_class, credential_provider_param : str, optional
        ``kinesis.credentialProviderClass`` / ``kinesis.credentialProviderParam``: a custom
        credentials provider on the classpath.
    extra_options : Mapping[str, str], optional
        Escape hatch: options passed through unchecked, for keys this builder does not know.

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

    kinesis_region: str | None = option(OptionField("kinesisRegion", "string"))
    consumer_type: ConsumerType | str | None = option(
        OptionField(
            "consumerType", "choice", "GetRecords", choices=("GetRecords", "SubscribeToShard")
        )
    )
    consumer_name: str | None = option(OptionField("consumerName", "string"))
    starting_position: StartingPosition | ShardPositions | str | None = option(
        OptionField("startingPosition", "position", "LATEST")
    )
    ending_position: EndingPosition | ShardPositions | str | None = option(
        OptionField("endingPosition", "end_position", "LATEST")
    )
    fail_on_data_loss: bool | None = option(OptionField("failOnDataLoss", "boolean", "false"))
    include_sub_sequence_number: bool | None = option(
        OptionField("includeSubSequenceNumber", "boolean", "false")
    )
    max_fetch_records_per_shard: int | None = option(
        OptionField("maxFetchRecordsPerShard", "integer", "100000", minimum=1)
    )
    max_fetch_time_per_shard_sec: Seconds | None = option(
        OptionField("maxFetchTimePerShardSec", "integer", unit="s", minimum=1)
    )
    max_records_per_trigger: int | None = option(
        OptionField("maxRecordsPerTrigger", "integer", minimum=1)
    )
    max_bytes_per_trigger: int | None = option(
        OptionField("maxBytesPerTrigger", "integer", minimum=1)
    )
    max_fetch_rate: float | None = option(OptionField("maxFetchRate", "decimal"))
    describe_shard_interval: Millis | None = option(
        OptionField("describeShardInterval", "duration", "1000ms", minimum=0)
    )
    min_batches_to_retain: int | None = option(
        OptionField("minBatchesToRetain", "integer", minimum=1, maximum=2147483647)
    )
    check_new_record_threads: int | None = option(
        OptionField("checkNewRecordThreads", "integer", "8", minimum=1, maximum=256)
    )
    metadata_committer_type: MetadataCommitterType | str | None = option(
        OptionField("metadataCommitterType", "choice", "HDFS", choices=("HDFS", "DYNAMODB"))
    )
    metadata_path: str | None = option(OptionField("metadataPath", "string"))
    dynamodb_table_name: str | None = option(OptionField("dynamodb.tableName", "string"))
    dynamodb_region: str | None = option(OptionField("dynamodb.region", "string"))
    dynamodb_endpoint_url: str | None = option(OptionField("dynamodb.endpointUrl", "string"))
    metadata_num_retries: int | None = option(
        OptionField("metadataNumRetries", "integer", "5", minimum=0, maximum=100)
    )
    metadata_retry_intervals_ms: Millis | None = option(
        OptionField("metadataRetryIntervalsMs", "integer", "1000", unit="ms", minimum=0)
    )
    metadata_max_retry_interval_ms: Millis | None = option(
        OptionField("metadataMaxRetryIntervalMs", "integer", "10000", unit="ms", minimum=0)
    )
    records_per_fetch: int | None = option(
        OptionField(
            "getRecords.numberOfRecordsPerFetch", "integer", "10000", minimum=1, maximum=10000
        )
    )
    fetch_interval_ms: Millis | None = option(
        OptionField("getRecords.fetchIntervalMs", "integer", "200", unit="ms", minimum=0)
    )
    idle_probe_interval_ms: Millis | None = option(
        OptionField("idleProbeIntervalMs", "integer", "1000", unit="ms", minimum=0)
    )
    subscribe_timeout_sec: Seconds | None = option(
        OptionField(
            "subscribeToShard.timeoutSec", "integer", "60", unit="s", minimum=1, maximum=3600
        )
    )
    subscribe_max_retries: int | None = option(
        OptionField("subscribeToShard.maxRetries", "integer", "10", minimum=0, maximum=1000)
    )
    subscribe_http_protocol: HttpProtocol | str | None = option(
        OptionField(
            "subscribeToShard.httpProtocol",
            "choice",
            "HTTP2",
            choices=("HTTP2", "HTTP2_ALPN", "HTTP1_1"),
        )
    )
    consumer_deregister_on_stop: bool | None = option(
        OptionField("consumerDeregisterOnStop", "boolean", "true")
    )
    executor_affinity: bool | None = option(OptionField("executorAffinity", "boolean", "true"))
    shards_per_task: int | None = option(
        OptionField("shardsPerTask", "integer", minimum=1, maximum=10000)
    )

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


@dataclass(frozen=True, kw_only=True, repr=False)
class KinesisSink(_KinesisOptions):
    """Options of the sink ``format("spark-kinesis")``, for streaming and batch writes.

    The DataFrame written must have the columns ``data`` (string or binary), ``partitionKey``
    (string) and optionally ``explicitHashKey`` (string).

    Parameters
    ----------
    stream_name : str
        ``kinesis.streamName``: the stream to write. Required.
    region, endpoint_url : str, optional
        ``kinesis.region`` and ``kinesis.endpointUrl``, as for :class:`KinesisSource`.
    flush_wait_time_ms : int or timedelta, optional
        ``kinesis.sink.flushWaitTimeMs``: wait between flushes while a task drains (default 100).
    record_max_buffered_time_ms : int or timedelta, optional
        ``kinesis.sink.recordMaxBufferedTimeMs``: longest a record waits in the producer (1000).
    max_connections : int, optional
        ``kinesis.sink.maxConnections``: producer connections to Kinesis (default 1).
    aggregation_enabled : bool, optional
        ``kinesis.sink.aggregationEnabled``: KPL aggregation of many rows per record (True).
    record_ttl : int, optional
        ``kinesis.sink.recordTtl``: milliseconds the KPL keeps retrying a row (30000).
    verify_certificate : bool, optional
        ``kinesis.sink.verifyCertificate``: check the endpoint's TLS certificate (True; False
        only for local emulators with self-signed certificates).
    producer_sts_endpoint_url : str, optional
        ``kinesis.sink.stsEndpointUrl``: accepted for compatibility; unused since KPL 1.x.
    rate_limit : int, optional
        ``kinesis.sink.rateLimit``: percent of a shard's write limit the KPL may use (150).
    request_timeout_ms : int or timedelta, optional
        ``kinesis.sink.requestTimeoutMs``: timeout of one PutRecords request (6000 ms).
    metrics_level : str, optional
        ``kinesis.sink.metricsLevel``: KPL CloudWatch metrics, none (default), summary or detailed.
    aggregation_max_count, aggregation_max_size : int, optional
        ``kinesis.sink.aggregationMaxCount`` / ``kinesis.sink.aggregationMaxSize``: limits of one
        aggregated record.
    threading_model : str, optional
        ``kinesis.sink.threadingModel``: PER_REQUEST (default) or POOLED.
    max_outstanding_records : int, optional
        ``kinesis.sink.maxOutstandingRecords``: unacknowledged rows per producer before tasks wait
        (10000).
    client_num_retries, client_retry_intervals_ms, client_max_retry_interval_ms : optional
        Retries of Kinesis API calls, as for :class:`KinesisSource`.
    client_connect_timeout_ms, client_socket_timeout_ms, client_api_call_attempt_timeout_ms, \
client_max_connections, proxy_address, proxy_port, proxy_username, proxy_password : optional
        Network settings, as for :class:`KinesisSource`; the proxy is also the KPL's.
    stream_arn : str, optional
        ``kinesis.streamArn``: the ARN of the stream to write instead of ``stream_name`` (the
        region comes from it). It must be a stream of the credentials' account: the KPL writes by
        name, so a write to another account's stream is refused when it starts.
    sink_proxy_address, sink_proxy_port, sink_proxy_username, sink_proxy_password : optional
        The awslabs names of the proxy options (``kinesis.sink.proxy*``); set these or the
        ``proxy_*`` arguments, not both.
    aws_access_key_id, aws_secret_key, session_token, sts_role_arn, sts_session_name, \
sts_endpoint_url, sts_external_id, credential_provider_class, credential_provider_param : optional
        Credentials, as for :class:`KinesisSource`.
    extra_options : Mapping[str, str], optional
        Escape hatch: options passed through unchecked, for keys this builder does not know.

    Examples
    --------
    >>> sink = KinesisSink(stream_name="clicks-enriched", region="eu-west-1")
    >>> sink.options()
    {'kinesis.streamName': 'clicks-enriched', 'kinesis.region': 'eu-west-1'}
    >>> query = sink.write_stream(df, checkpoint_location="/chk/clicks")  # doctest: +SKIP
    """

    owner: ClassVar[str] = "KinesisSink"
    side: ClassVar[Literal["source", "sink"]] = "sink"

    flush_wait_time_ms: Millis | None = option(
        OptionField("sink.flushWaitTimeMs", "integer", "100", unit="ms", minimum=1)
    )
    record_max_buffered_time_ms: Millis | None = option(
        OptionField("sink.recordMaxBufferedTimeMs", "integer", "1000", unit="ms", minimum=1)
    )
    max_connections: int | None = option(
        OptionField("sink.maxConnections", "integer", "1", minimum=1, maximum=256)
    )
    aggregation_enabled: bool | None = option(
        OptionField("sink.aggregationEnabled", "boolean", "true")
    )
    record_ttl: int | None = option(
        OptionField("sink.recordTtl", "integer", "30000", minimum=100, maximum=2147483647)
    )
    verify_certificate: bool | None = option(
        OptionField("sink.verifyCertificate", "boolean", "true")
    )
    producer_sts_endpoint_url: str | None = option(OptionField("sink.stsEndpointUrl", "string"))
    sink_proxy_address: str | None = option(OptionField("sink.proxyAddress", "string"))
    sink_proxy_port: int | None = option(
        OptionField("sink.proxyPort", "integer", "443", minimum=1, maximum=65535)
    )
    sink_proxy_username: str | None = option(OptionField("sink.proxyUsername", "string"))
    sink_proxy_password: str | None = option(
        OptionField("sink.proxyPassword", "string", secret=True)
    )
    rate_limit: int | None = option(
        OptionField("sink.rateLimit", "integer", "150", minimum=1, maximum=2147483647)
    )
    request_timeout_ms: Millis | None = option(
        OptionField(
            "sink.requestTimeoutMs", "integer", "6000", unit="ms", minimum=100, maximum=600000
        )
    )
    metrics_level: str | None = option(
        OptionField("sink.metricsLevel", "choice", "none", choices=("none", "summary", "detailed"))
    )
    aggregation_max_count: int | None = option(
        OptionField(
            "sink.aggregationMaxCount", "integer", "4294967295", minimum=1, maximum=4294967295
        )
    )
    aggregation_max_size: int | None = option(
        OptionField("sink.aggregationMaxSize", "integer", "51200", minimum=64, maximum=1048576)
    )
    threading_model: str | None = option(
        OptionField(
            "sink.threadingModel", "choice", "PER_REQUEST", choices=("PER_REQUEST", "POOLED")
        )
    )
    max_outstanding_records: int | None = option(
        OptionField("sink.maxOutstandingRecords", "integer", "10000", minimum=1, maximum=2147483647)
    )

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
        processing_time: str | None = None,
        real_time: str | None = None,
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
        processing_time : str, optional
            A processing-time trigger such as ``"10 seconds"``; default: as fast as possible.
        real_time : str, optional
            Run in Spark's real-time mode (Spark 4.1 and newer) with this batch duration, such
            as ``"5 minutes"``: records are written as they are read, and the duration only
            sets how often offsets are checkpointed (see :mod:`spark_kinesis.realtime`). The
            session must set ``spark.sql.streaming.realTimeMode.allowlistCheck`` to ``false``.
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
            writer = writer.trigger(processingTime=processing_time)
        if real_time is not None:
            from spark_kinesis.realtime import check_sink_allowed, real_time_trigger

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
