package io.sparkkinesis.config

import java.util.Locale

import scala.concurrent.duration.DurationInt

import io.sparkkinesis.config.OptionDefault.{Derived, Fixed, Required}
import io.sparkkinesis.config.OptionScope.{Both, Functions, Sink}
import io.sparkkinesis.config.OptionSpec.{atLeast, between, DecimalBounds, HttpUrl, Matching}
import io.sparkkinesis.config.OptionType._

/** The single table of every `kinesis.*` option. Docs, validation and the Python builders derive from it. */
private[sparkkinesis] object KinesisOptions {

  private val inOrder = Vector.newBuilder[OptionSpec[_]]

  private implicit final class Declaring[T](spec: OptionSpec[T]) {

    /** The option, added to [[all]] in the order of the declarations. */
    def declared: OptionSpec[T] = {
      inOrder += spec
      spec
    }
  }

  /** One enhanced fan-out consumer ARN (the form Kinesis gives them). */
  val ConsumerArnForm: String =
    "arn:[a-z-]+:kinesis:[a-z0-9-]+:[0-9]{12}:stream/[a-zA-Z0-9_.-]{1,128}/consumer/[a-zA-Z0-9_.-]{1,128}:[0-9]+"

  /** One `key=value` tag (AWS' characters; the key is not `aws:...`). */
  private val TagPair = "(?!aws:)[a-zA-Z0-9 _.:/+@-]{1,128}=[a-zA-Z0-9 _.:/=+@-]{0,256}"

  /** A region's name as AWS writes it, such as `us-east-1`; emulators accept any such name. */
  private val RegionName =
    Matching("[a-z0-9]+(-[a-z0-9]+)*", "a region name such as us-east-1 (a-z, 0-9 and '-')")

  val EndpointUrl =
    OptionSpec("endpointUrl", Str, Derived("https://kinesis.<region>.amazonaws.com"), Both, check = HttpUrl)(
      "Kinesis endpoint URL. When absent it is derived from the region."
    ).declared

  val Region = OptionSpec(
    "region",
    Str,
    Derived("from endpointUrl, else the AWS default region chain"),
    Both,
    check = RegionName
  )(
    "AWS region the connector runs in (used for the Kinesis client unless kinesis.kinesisRegion is set)."
  ).declared

  val KinesisRegion = OptionSpec("kinesisRegion", Str, Derived("kinesis.region"), check = RegionName)(
    "Region the stream belongs to, when it differs from kinesis.region."
  ).declared

  val StreamName = OptionSpec(
    "streamName",
    Str,
    Required,
    Both,
    check = Matching(
      StreamArns.NamePattern,
      "one stream name or a comma-separated list of them, each of 1 to 128 letters, digits, '_', '.' or '-'",
      listOf = Some("a stream name")
    )
  )(
    "Name of the Kinesis stream. A source may read several streams: a comma-separated list of names (the " +
      "streamName column tells their rows apart). For reads, kinesis.streamArn may be given instead."
  ).declared

  val StreamArn = OptionSpec(
    "streamArn",
    Str,
    Derived("none: kinesis.streamName is used"),
    Both,
    check = Matching(
      StreamArns.ArnPattern,
      "one stream ARN or a comma-separated list of them, each arn:<partition>:kinesis:<region>:<12-digit account>:" +
        "stream/<stream name>, for example arn:aws:kinesis:us-east-1:123456789012:stream/orders",
      listOf = Some("a Kinesis stream ARN")
    )
  )(
    "ARN of the stream to read (arn:aws:kinesis:<region>:<account>:stream/<name>), or a comma-separated list, " +
      "instead of kinesis.streamName. Requests name the stream by ARN, so a stream of another account can be read " +
      "where its resource policy allows; the region comes from the ARN. A write takes one ARN, of a stream of the " +
      "account of its credentials: the sink's KPL 1.1.1 addresses streams by name in that account, so a write to " +
      "another account's stream is refused when it starts (use a role of that account)."
  ).declared

  val ConsumerType = OptionSpec(
    "consumerType",
    OneOf(io.sparkkinesis.config.ConsumerType.all),
    Fixed(io.sparkkinesis.config.ConsumerType.GetRecords)
  )(
    "How records are read: GetRecords (shared-throughput polling) or SubscribeToShard (enhanced fan-out)."
  ).declared

  val FailOnDataLoss = OptionSpec("failOnDataLoss", Bool, Fixed(false))(
    "Fail the query when records it had not read yet are gone (shard expired or deleted); otherwise log and skip."
  ).declared

  val IncludeSubSequenceNumber = OptionSpec("includeSubSequenceNumber", Bool, Fixed(false))(
    "Add a subSequenceNumber column (long): the index of a user record in its KPL aggregate, 0 for a record that " +
      "was not aggregated. (streamName, shardId, sequenceNumber, subSequenceNumber) is then unique per record; " +
      "without it the records of one aggregate share their sequenceNumber."
  ).declared

  val MaxFetchRecordsPerShard =
    OptionSpec("maxFetchRecordsPerShard", Integer, Fixed(100000L), check = atLeast(1))(
      "Most records read from one shard in one micro-batch."
    ).declared

  val MaxFetchTimePerShardSec = OptionSpec(
    "maxFetchTimePerShardSec",
    Seconds,
    Derived("unlimited (a task ends at the shard's tip or its record limit)"),
    check = atLeast(1.second)
  )("Longest time a task spends reading one shard in one micro-batch.").declared

  val MaxRecordsPerTrigger = OptionSpec(
    "maxRecordsPerTrigger",
    Integer,
    Derived("unlimited (only maxFetchRecordsPerShard applies)"),
    check = atLeast(1)
  )(
    "Most records read in one micro-batch across all shards, split evenly over the shards the batch reads " +
      "(when it is smaller than their number, that many shards are read, in rotation). Also applies to " +
      "Trigger.AvailableNow, which then reads in several batches."
  ).declared

  val MaxBytesPerTrigger =
    OptionSpec("maxBytesPerTrigger", Integer, Derived("unlimited"), check = atLeast(1))(
      "Most bytes of record data read in one micro-batch across all shards, split evenly over the shards the " +
        "batch reads. A task stops before the record that would pass its share, but reads at least one record, so " +
        "a batch may pass the limit by less than one record per shard."
    ).declared

  val MaxFetchRate =
    OptionSpec("maxFetchRate", Decimal, Derived("unlimited"), check = DecimalBounds(above = 0, max = 1000))(
      "Most MB (10^6 bytes) per second read from one shard, averaged over its GetRecords calls: after a call that " +
        "returned B bytes, the next waits until B / rate has passed, also when that next call is made by the next " +
        "batch's task on the same executor. Lets several applications share a shard's 2 MB/s read throughput " +
        "without throttling each other. GetRecords only: refused with consumerType SubscribeToShard."
    ).declared

  val StartingPosition = OptionSpec(
    "startingPosition",
    Str,
    Fixed("LATEST"),
    check = (v: String) => StartingPositionSpec.parse(v).left.toOption
  )(
    "Where a new query starts (a batch read: TRIM_HORIZON unless this is set): LATEST, TRIM_HORIZON, EARLIEST (same as TRIM_HORIZON), " +
      "'AT_TIMESTAMP <ISO-8601 instant>' such as 'AT_TIMESTAMP 2023-08-30T19:00:05-08:00', or a JSON document of " +
      "per-shard positions {\"<stream>\": {\"<shardId>\": {\"type\": ...}}} with types TRIM_HORIZON, LATEST, " +
      "AT_TIMESTAMP (timestamp), AT_SEQUENCE_NUMBER / AFTER_SEQUENCE_NUMBER (sequenceNumber, optional " +
      "subSequenceNumber: a KPL sub-record) and SHARD_END. A shard the document does not list counts as read " +
      "when it is an ancestor of a listed shard, and starts at TRIM_HORIZON otherwise."
  ).declared

  val EndingPosition = OptionSpec(
    "endingPosition",
    Str,
    Fixed("LATEST"),
    check = (v: String) => EndingPositionSpec.parse(v).left.toOption
  )(
    "Batch reads only: where the read ends, exclusive. LATEST (the tip of every shard when the read is planned), " +
      "'AT_TIMESTAMP <ISO-8601 instant>' (the records that arrived before it), or a JSON document of per-shard " +
      "positions as for startingPosition, without SHARD_END. A shard the document does not list reads nothing " +
      "below an ancestor ended by sequence number, ends at an ancestor's timestamp, and otherwise at LATEST."
  ).declared

  val DescribeShardInterval =
    OptionSpec("describeShardInterval", Millis, Fixed(1000L), check = atLeast(0.millis))(
      "Least time between two ListShards calls made by the driver to discover new shards."
    ).declared

  val MinBatchesToRetain = OptionSpec(
    "minBatchesToRetain",
    Integer,
    Derived("spark.sql.streaming.minBatchesToRetain"),
    check = between(1, Int.MaxValue)
  )("Batches of connector metadata kept recoverable.").declared

  val CheckNewRecordThreads =
    OptionSpec("checkNewRecordThreads", Integer, Fixed(8L), check = between(1, 256))(
      "Driver threads that read the previous batch's per-shard results from the metadata store. Records are read " +
        "by the tasks only: each GetRecords call of the driver (idle probes, Trigger.AvailableNow, batch-read ends) " +
        "asks for one record, only to learn where a shard's tip is, and passes no record on."
    ).declared

  val MetadataCommitterType =
    OptionSpec("metadataCommitterType", OneOf(CommitterType.all), Fixed(CommitterType.Hdfs))(
      "Where per-batch shard metadata is kept: HDFS (any Hadoop file system path) or DYNAMODB."
    ).declared

  val MetadataPath = OptionSpec("metadataPath", Str, Derived("<checkpointLocation>/sources/<n>/kinesis"))(
    "Hadoop path (local, HDFS, S3A) for the metadata when metadataCommitterType is HDFS."
  ).declared

  val MetadataNumRetries = OptionSpec("metadataNumRetries", Integer, Fixed(5L), check = between(0, 100))(
    "Retries of a failed metadata read or write."
  ).declared

  val MetadataRetryIntervalsMs =
    OptionSpec("metadataRetryIntervalsMs", Millis, Fixed(1000L), check = atLeast(0.millis))(
      "First wait before retrying a metadata request; doubles on each retry."
    ).declared

  val MetadataMaxRetryIntervalMs =
    OptionSpec("metadataMaxRetryIntervalMs", Millis, Fixed(10000L), check = atLeast(0.millis))(
      "Longest wait between two retries of a metadata request."
    ).declared

  val ClientNumRetries = OptionSpec("clientNumRetries", Integer, Fixed(5L), Both, check = between(0, 100))(
    "Retries of a failed Kinesis API call."
  ).declared

  val ClientRetryIntervalsMs =
    OptionSpec("clientRetryIntervalsMs", Millis, Fixed(1000L), Both, check = atLeast(1.milli))(
      "Base wait before retrying a Kinesis API call; grows exponentially, with jitter."
    ).declared

  val ClientMaxRetryIntervalMs =
    OptionSpec("clientMaxRetryIntervalMs", Millis, Fixed(10000L), Both, check = atLeast(1.milli))(
      "Longest wait between two retries of a Kinesis API call."
    ).declared

  val ClientConnectTimeoutMs =
    OptionSpec("clientConnectTimeoutMs", Millis, Fixed(2000L), Both, check = between(1.milli, 10.minutes))(
      "Time to open a connection (TCP and TLS) to an AWS endpoint or to the proxy, for every AWS SDK client " +
        "of the connector (Kinesis, enhanced fan-out, DynamoDB, STS). Not the sink's KPL: see sink.requestTimeoutMs."
    ).declared

  val ClientSocketTimeoutMs =
    OptionSpec("clientSocketTimeoutMs", Millis, Fixed(30000L), Both, check = between(1.milli, 1.hour))(
      "Time an open connection may stay silent while a response is awaited (read timeout) before the " +
        "attempt fails and is retried; Kinesis, DynamoDB and STS calls. Enhanced fan-out subscriptions are watched by " +
        "subscribeToShard.timeoutSec instead."
    ).declared

  val ClientApiCallAttemptTimeoutMs = OptionSpec(
    "clientApiCallAttemptTimeoutMs",
    Millis,
    Derived("none (only the connect and socket timeouts bound an attempt)"),
    Both,
    check = between(1.milli, 1.hour)
  )(
    "Longest time one attempt of a Kinesis, DynamoDB or STS API call may take in all (connection, request and " +
      "response); a late attempt fails and is retried per clientNumRetries. Not applied to SubscribeToShard, whose " +
      "subscription lasts up to 5 minutes."
  ).declared

  val ClientMaxConnections =
    OptionSpec("clientMaxConnections", Integer, Fixed(64L), Both, check = between(1, 10000))(
      "Pooled HTTP connections of one Kinesis or DynamoDB client (one per configuration and JVM, shared by the " +
        "tasks of an executor). Enhanced fan-out subscriptions are not capped (one HTTP/2 stream each); the sink's " +
        "KPL has sink.maxConnections."
    ).declared

  val ProxyAddress = OptionSpec(
    "proxyAddress",
    Str,
    Derived("none: direct connections"),
    Both,
    check = Matching("[^\\s/:@]+|\\[[0-9a-fA-F:.]+\\]", "a host name or IP address, without scheme or port")
  )(
    "Host name or IP address of an HTTP proxy for every AWS call of the connector: the source's Kinesis, " +
      "enhanced fan-out, DynamoDB and STS clients, and the sink (its KPL and its stream check). HTTPS endpoints " +
      "are reached through CONNECT tunnels. The awslabs spelling kinesis.sink.proxyAddress is accepted for writes."
  ).declared

  val ProxyPort = OptionSpec("proxyPort", Integer, Fixed(443L), Both, check = between(1, 65535))(
    "Port of kinesis.proxyAddress (443 by default, as the awslabs connector's KPL has it)."
  ).declared

  val ProxyUsername = OptionSpec("proxyUsername", Str, Derived("none: no proxy authentication"), Both)(
    "User name for the proxy's Basic authentication."
  ).declared

  val ProxyPassword = OptionSpec("proxyPassword", Str, Derived("none"), Both, secret = true)(
    "Password for the proxy's Basic authentication; needs kinesis.proxyUsername. The sink's KPL native process " +
      "never receives it (see docs/guide/credentials.md)."
  ).declared

  val RecordsPerFetch =
    OptionSpec("getRecords.numberOfRecordsPerFetch", Integer, Fixed(10000L), check = between(1, 10000))(
      "Most records asked for in one GetRecords call."
    ).declared

  val FetchIntervalMs =
    OptionSpec("getRecords.fetchIntervalMs", Millis, Fixed(200L), check = atLeast(0.millis))(
      "Least time between two GetRecords calls on one shard (Kinesis allows 5 reads per second per shard)."
    ).declared

  val IdleProbeIntervalMs =
    OptionSpec("idleProbeIntervalMs", Millis, Fixed(1000L), check = atLeast(0.millis))(
      "Longest wait between two batches whose shards are at their tips. After a batch that found records at the " +
        "tips, a polling query plans the next one getRecords.fetchIntervalMs after it, enhanced fan-out at once; " +
        "after each batch in a row that found nothing the wait doubles, from fetchIntervalMs (at least 100 ms) " +
        "up to this. An idle query thus settles at one batch per interval (after waits of 400 and 800 ms at the " +
        "defaults): for polling, one GetRecords call per shard. A batch behind the tip is followed at once. 0: a " +
        "batch on every trigger. With kinesis.avoidEmptyBatches, the interval between idle probes (at least 100 ms)."
    ).declared

  val AvoidEmptyBatches = OptionSpec("avoidEmptyBatches", Bool, Fixed(true))(
    "Run no Spark batch while the stream is idle (as the awslabs connector does by default). After a batch that " +
      "found every shard at its tip with nothing new, the driver plans the next one only once a probe finds a " +
      "record (or a shard closed, added or behind): every kinesis.idleProbeIntervalMs, one GetRecords call (Limit " +
      "1) per shard from where the batch would read it, which needs kinesis:GetShardIterator and kinesis:GetRecords " +
      "with enhanced fan-out too; where those are denied, a warning says so and the query runs paced idle batches " +
      "instead. The probe only decides when the batch runs; it reads from the recorded positions. false: a batch " +
      "every kinesis.idleProbeIntervalMs while idle. The awslabs key kinesis.internal.avoidEmptyBatches sets it too."
  ).declared

  val ConsumerName = OptionSpec(
    "consumerName",
    Str,
    Derived("required when consumerType is SubscribeToShard"),
    check = Matching(
      "[a-zA-Z0-9_.-]{1,128}",
      "1 to 128 characters of a-z, A-Z, 0-9, '_', '.' and '-' (Kinesis' rule for consumer names)"
    )
  )(
    "Enhanced fan-out consumer of each stream read (the same name on every stream). Registered when absent, " +
      "reused when present. One name per query: two queries reading with one consumer take each other's " +
      "subscriptions. Or give kinesis.consumerArn instead."
  ).declared

  val ConsumerDeregisterOnStop = OptionSpec("consumerDeregisterOnStop", Bool, Fixed(true))(
    "Deregister the enhanced fan-out consumer when the query stops (query.stop() or a failure). With false it " +
      "stays registered for the next run (and is billed per shard-hour while registered)."
  ).declared

  val ConsumerArn = OptionSpec(
    "consumerArn",
    Str,
    Derived("none: the query registers kinesis.consumerName"),
    check = Matching(
      s"$ConsumerArnForm(\\s*,\\s*$ConsumerArnForm)*",
      "one consumer ARN per stream, comma-separated, each " +
        "arn:<partition>:kinesis:<region>:<account>:stream/<stream>/consumer/<name>:<creation timestamp>"
    )
  )(
    "ARN of an existing enhanced fan-out consumer to read through, instead of kinesis.consumerName; with several " +
      "streams, a comma-separated list of one consumer per stream (each ARN names its stream). The query makes no " +
      "RegisterStreamConsumer, DescribeStreamConsumer or DeregisterStreamConsumer call (only kinesis:SubscribeToShard " +
      "on the consumer is needed, which a resource policy may grant to another account); a missing or inactive " +
      "consumer fails the first batch's tasks."
  ).declared

  val ConsumerTags = OptionSpec(
    "consumerTags",
    Str,
    Derived("none"),
    check = Matching(
      s"$TagPair(\\s*,\\s*$TagPair){0,49}",
      "comma-separated key=value pairs (at most 50), keys of 1 to 128 and values of up to 256 characters of " +
        "ASCII letters, digits, spaces and _ . : / = + - @ (no '=' in a key), keys not starting with 'aws:'"
    )
  )(
    "Tags the query gives each consumer it registers (kinesis.consumerName), for cost allocation: comma-separated " +
      "key=value pairs such as team=risk,env=prod (at most 50; a key of 1 to 128 characters not starting with " +
      "'aws:', a value of up to 256). A consumer that exists already keeps its tags."
  ).declared

  val ExecutorAffinity = OptionSpec("executorAffinity", Bool, Fixed(true))(
    "Ask Spark to run each shard's task on the same executor batch after batch (spread evenly over the executors " +
      "and stable while they stay up), so it continues on the shard iterator or enhanced fan-out subscription the " +
      "previous task left there. Spark still runs a task elsewhere once spark.locality.wait passes. With false, " +
      "Spark places tasks freely. No effect in local mode."
  ).declared

  val ShardsPerTask = OptionSpec(
    "shardsPerTask",
    Integer,
    Derived(
      "automatic: one shard per task up to 2 tasks per core of the application (spark.default.parallelism), " +
        "then as many shards per task as keep a batch at that many tasks; a batch read (spark.read) aims at 1 task " +
        "per core"
    ),
    check = between(1, 10000)
  )(
    "Shards one read task reads. In a micro-batch it reads them at once (each keeps its own order, limits, pacing " +
      "and back-off), with one metadata entry per task and batch; the groups stay the same from batch to batch. In " +
      "a batch read (spark.read) too. Grouping keeps the scheduling and " +
      "metadata cost of a batch low on streams of many shards. Real-time mode reads one shard per task."
  ).declared

  val SubscribeTimeoutSec =
    OptionSpec("subscribeToShard.timeoutSec", Seconds, Fixed(60000L), check = between(1.second, 1.hour))(
      "Time a subscription may stay silent (no response, no event) while a task waits on it before it is renewed."
    ).declared

  val SubscribeMaxRetries =
    OptionSpec("subscribeToShard.maxRetries", Integer, Fixed(10L), check = between(0, 1000))(
      "Renewals of a failed subscription in a row (recoverable errors only) before the task fails."
    ).declared

  val SubscribeHttpProtocol =
    OptionSpec("subscribeToShard.httpProtocol", OneOf(HttpProtocol.all), Fixed(HttpProtocol.Http2))(
      "HTTP protocol of SubscribeToShard: HTTP2 (what AWS needs; h2c prior knowledge on an http:// endpoint), " +
        "HTTP2_ALPN (h2 negotiated with TLS ALPN, e.g. kinesis-mock's TLS port) or HTTP1_1 (emulators only)."
    ).declared

  val StsRoleArn = OptionSpec(
    "stsRoleArn",
    Str,
    Derived("none"),
    Both,
    check = Matching("(?s)arn:.*", "a role ARN such as arn:aws:iam::123456789012:role/name")
  )(
    "IAM role to assume (for example in another account) for every AWS call of the connector: Kinesis and " +
      "DynamoDB. The base credentials that assume it are the static keys when given, else the default chain. " +
      "The session is created once per executor and refreshed in the background before it expires."
  ).declared

  val StsSessionName = OptionSpec("stsSessionName", Str, Derived("spark-kinesis"), Both)(
    "Session name of the assumed role (shows in the role account's CloudTrail). Needs kinesis.stsRoleArn."
  ).declared

  val StsEndpointUrl = OptionSpec(
    "stsEndpointUrl",
    Str,
    Derived("the regional STS endpoint of kinesis.region"),
    Both,
    check = HttpUrl
  )("STS endpoint URL used to assume kinesis.stsRoleArn.").declared

  val StsExternalId = OptionSpec("stsExternalId", Str, Derived("none"), Both, secret = true)(
    "External ID sent when assuming kinesis.stsRoleArn, for roles whose trust policy requires sts:ExternalId " +
      "(protection against the confused deputy). Treated as a secret."
  ).declared

  val AwsAccessKeyId = OptionSpec("awsAccessKeyId", Str, Derived("none"), Both, secret = true)(
    "Static access key id; needs kinesis.awsSecretKey. Prefer the default chain or a role."
  ).declared

  val AwsSecretKey = OptionSpec("awsSecretKey", Str, Derived("none"), Both, secret = true)(
    "Static secret access key; needs kinesis.awsAccessKeyId."
  ).declared

  val SessionToken = OptionSpec("sessionToken", Str, Derived("none"), Both, secret = true)(
    "Session token of temporary static keys; needs kinesis.awsAccessKeyId and kinesis.awsSecretKey."
  ).declared

  val CredentialProviderClass = OptionSpec("credentialProviderClass", Str, Derived("none"), Both)(
    "Class implementing io.sparkkinesis.credentials.KinesisCredentialsProvider (public constructor taking one " +
      "String, or none). Takes precedence over every other credential option."
  ).declared

  val CredentialProviderParam =
    OptionSpec("credentialProviderParam", Str, Derived("none"), Both, secret = true)(
      "String handed to the constructor of kinesis.credentialProviderClass. Treated as a secret."
    ).declared

  val DynamoDbTableName =
    OptionSpec("dynamodb.tableName", Str, Derived("required when metadataCommitterType is DYNAMODB"))(
      "DynamoDB table for the connector metadata; created on demand (on-demand billing). One table can serve " +
        "many queries: entries are keyed by checkpoint location and run."
    ).declared

  val DynamoDbRegion = OptionSpec("dynamodb.region", Str, Derived("kinesis.region"), check = RegionName)(
    "Region of the DynamoDB metadata table."
  ).declared

  val DynamoDbEndpointUrl =
    OptionSpec("dynamodb.endpointUrl", Str, Derived("the regional DynamoDB endpoint"), check = HttpUrl)(
      "DynamoDB endpoint URL."
    ).declared

  val SinkProducer =
    OptionSpec("sink.producer", OneOf(ProducerKind.all), Fixed(ProducerKind.Kpl), Sink)(
      "Which producer writes: KPL, the Kinesis Producer Library (a native process, for linux-x86_64, " +
        "linux-aarch64 with glibc, and x86_64 macOS), or JAVA, PutRecords from the JVM with the same aggregation " +
        "format (any platform the JVM runs on). See docs/guide/sink.md."
    ).declared

  val SinkFlushWaitTimeMs =
    OptionSpec("sink.flushWaitTimeMs", Millis, Fixed(100L), Sink, check = atLeast(1.milli))(
      "Wait between flushes while a task drains its records."
    ).declared

  val SinkRecordMaxBufferedTimeMs =
    OptionSpec("sink.recordMaxBufferedTimeMs", Millis, Fixed(1000L), Sink, check = atLeast(1.milli))(
      "Longest time a record waits in the producer's buffer."
    ).declared

  val SinkMaxConnections =
    OptionSpec("sink.maxConnections", Integer, Fixed(1L), Sink, check = between(1, 256))(
      "Producer connections to Kinesis."
    ).declared

  val SinkAggregationEnabled = OptionSpec("sink.aggregationEnabled", Bool, Fixed(true), Sink)(
    "Aggregate many rows into one Kinesis record (KPL format)."
  ).declared

  val SinkRecordTtlMs = OptionSpec(
    "sink.recordTtl",
    Millis,
    Fixed(30000L),
    Sink,
    check = between(100.millis, Int.MaxValue.millis)
  )("Time a row may wait in the producer (including retries) before it fails, and its task with it.").declared

  val SinkVerifyCertificate = OptionSpec("sink.verifyCertificate", Bool, Fixed(true), Sink)(
    "Verify the TLS certificate of the Kinesis endpoint. Set false only for a local emulator with a " +
      "self-signed certificate."
  ).declared

  val SinkStsEndpointUrl = OptionSpec(
    "sink.stsEndpointUrl",
    Str,
    Derived("the KPL's regional STS endpoint"),
    Sink,
    check = Matching("(?s)https://.*", "an https:// URL (the KPL speaks only HTTPS)")
  )(
    "Accepted for compatibility with the awslabs connector, and unused: the sink's KPL 1.x calls no STS (it " +
      "learns the stream's ARN from Kinesis DescribeStreamSummary)."
  ).declared

  val SinkProxyAddress = OptionSpec(
    "sink.proxyAddress",
    Str,
    Derived("none: direct connections"),
    Sink,
    check = ProxyAddress.check
  )(
    "The awslabs connector's name of kinesis.proxyAddress for writes: the HTTP proxy of the KPL and of the sink's " +
      "stream check. Set this family or kinesis.proxy*, not both."
  ).declared

  val SinkProxyPort = OptionSpec("sink.proxyPort", Integer, Fixed(443L), Sink, check = between(1, 65535))(
    "Port of kinesis.sink.proxyAddress (443 by default, as the KPL has it)."
  ).declared

  val SinkProxyUsername =
    OptionSpec("sink.proxyUsername", Str, Derived("none: no proxy authentication"), Sink)(
      "User name for kinesis.sink.proxyAddress's Basic authentication."
    ).declared

  val SinkProxyPassword = OptionSpec("sink.proxyPassword", Str, Derived("none"), Sink, secret = true)(
    "Password for kinesis.sink.proxyAddress's Basic authentication; needs kinesis.sink.proxyUsername. The KPL's " +
      "native process never receives it (see docs/guide/credentials.md)."
  ).declared

  val SinkRateLimit =
    OptionSpec("sink.rateLimit", Integer, Fixed(150L), Sink, check = between(1, Int.MaxValue))(
      "Percent of a shard's write limit one producer may use before it holds records back (KPL RateLimit)."
    ).declared

  val SinkRequestTimeoutMs =
    OptionSpec("sink.requestTimeoutMs", Millis, Fixed(6000L), Sink, check = between(100.millis, 10.minutes))(
      "Time before a PutRecords request of the producer times out and its records are retried."
    ).declared

  val SinkMetricsLevel =
    OptionSpec("sink.metricsLevel", OneOf(MetricsLevel.all), Fixed(MetricsLevel.NoMetrics), Sink)(
      "Producer metrics sent to CloudWatch. The default sends none, so no CloudWatch access is needed."
    ).declared

  val SinkAggregationMaxCount = OptionSpec(
    "sink.aggregationMaxCount",
    Integer,
    Fixed(4294967295L),
    Sink,
    check = between(1, 4294967295L)
  )("Most rows packed into one aggregated Kinesis record.").declared

  val SinkAggregationMaxSize =
    OptionSpec("sink.aggregationMaxSize", Integer, Fixed(51200L), Sink, check = between(64, 1048576))(
      "Most bytes of one aggregated Kinesis record."
    ).declared

  val SinkThreadingModel =
    OptionSpec("sink.threadingModel", OneOf(ThreadingModel.all), Fixed(ThreadingModel.PerRequest), Sink)(
      "How the native producer runs requests: a thread per request, or a pool (KPL ThreadingModel)."
    ).declared

  val SinkMaxOutstandingRecords =
    OptionSpec("sink.maxOutstandingRecords", Integer, Fixed(10000L), Sink, check = between(1, Int.MaxValue))(
      "Rows the executor's producer may hold unacknowledged; a task writing beyond it waits (bounds memory)."
    ).declared

  /** An awslabs `kinesis.internal.*` key: accepted and ignored, with what this connector does instead. */
  private def internal[T](key: String, optionType: OptionType[T], instead: String): OptionSpec[T] =
    OptionSpec(s"internal.$key", optionType, Derived("ignored"), compatibility = Some(instead))(
      s"Accepted for compatibility with the awslabs connector and ignored (a warning says so). $instead"
    )

  val InternalDataQueueCapacity = internal(
    "dataQueueCapacity",
    Integer,
    "This source keeps no queue of records between fetching threads and its tasks: a polling task asks for the " +
      "next GetRecords page only once it has taken the previous one, and a fan-out subscription holds at most 4 " +
      "events per shard. Bound a batch with kinesis.maxFetchRecordsPerShard, kinesis.maxRecordsPerTrigger or " +
      "kinesis.maxBytesPerTrigger."
  ).declared

  val InternalMaxDataQueueEmptyCount = internal(
    "maxDataQueueEmptyCount",
    Integer,
    "A task does not end a shard by counting empty polls of a queue: it ends it at the shard's tip (Kinesis " +
      "reports it 0 ms behind), at a batch limit (kinesis.maxFetchRecordsPerShard, kinesis.maxRecordsPerTrigger, " +
      "kinesis.maxBytesPerTrigger) or after kinesis.maxFetchTimePerShardSec."
  ).declared

  val InternalDataQueueWaitTimeoutSec = internal(
    "dataQueueWaitTimeoutSec",
    Seconds,
    "There is no data queue to wait on: a polling task spaces its GetRecords calls by " +
      "kinesis.getRecords.fetchIntervalMs, and a fan-out task renews a subscription that stays silent for " +
      "kinesis.subscribeToShard.timeoutSec."
  ).declared

  val InternalMaintenanceTaskIntervalSec = internal(
    "maintenanceTaskIntervalSec",
    Seconds,
    "There is no periodic maintenance task: after each batch commits, the driver deletes the metadata of batches " +
      "older than kinesis.minBatchesToRetain, on a background thread."
  ).declared

  val InternalAvoidEmptyBatches =
    OptionSpec("internal.avoidEmptyBatches", Bool, Derived("kinesis.avoidEmptyBatches"))(
      "The awslabs connector's name of kinesis.avoidEmptyBatches. Set one of the two, not both."
    ).declared

  // ---------------------------------------------------------------- the payload functions (Glue Schema Registry)

  val SchemaRegistryName =
    OptionSpec("schemaRegistry.registryName", Str, Fixed("default-registry"), Functions)(
      "Glue Schema Registry registry that holds kinesis.schemaRegistry.schemaName (the serde library's default name)."
    ).declared

  val SchemaRegistrySchemaName = OptionSpec("schemaRegistry.schemaName", Str, Derived("none"), Functions)(
    "Glue schema whose version is the reader schema of from_glue_schema_registry and the writer schema of " +
      "to_glue_schema_registry. Give it, or kinesis.schemaRegistry.schemaDefinition."
  ).declared

  val SchemaRegistrySchemaVersion =
    OptionSpec(
      "schemaRegistry.schemaVersion",
      Integer,
      Derived("the latest version"),
      Functions,
      check = atLeast(1)
    )("Version number of kinesis.schemaRegistry.schemaName to use.").declared

  val SchemaRegistrySchemaDefinition =
    OptionSpec("schemaRegistry.schemaDefinition", Str, Derived("the registered version's"), Functions)(
      "Schema text (an Avro schema, a JSON Schema with dataFormat JSON, or a .proto file with PROTOBUF). Decoding: the reader schema, looked up nowhere. " +
        "Encoding: the writer schema, whose version is found in (or, with autoRegister, added to) " +
        "kinesis.schemaRegistry.schemaName."
    ).declared

  val SchemaRegistryDataFormat = OptionSpec(
    "schemaRegistry.dataFormat",
    OneOf(GsrDataFormat.all),
    Derived("AVRO"),
    Functions
  )(
    "Format of kinesis.schemaRegistry.schemaDefinition: AVRO, JSON (a JSON Schema) or PROTOBUF (a .proto file)."
  ).declared

  val SchemaRegistryAutoRegister =
    OptionSpec("schemaRegistry.autoRegister", Bool, Fixed(false), Functions)(
      "Encoding: register kinesis.schemaRegistry.schemaDefinition as a new version (creating the schema if needed) " +
        "when the registry does not hold it yet; otherwise such a definition fails the query."
    ).declared

  val SchemaRegistryCompression =
    OptionSpec(
      "schemaRegistry.compression",
      OneOf(GsrCompression.all),
      Fixed(GsrCompression.None),
      Functions
    )("Encoding: NONE, or ZLIB (compressed payloads; decoding reads both).").declared

  val SchemaRegistryMode =
    OptionSpec("schemaRegistry.mode", OneOf(PayloadMode.all), Fixed(PayloadMode.FailFast), Functions)(
      "Decoding: FAILFAST fails the query on a record it cannot decode, naming why; PERMISSIVE returns null for it."
    ).declared

  val SchemaRegistryErrorField = OptionSpec("schemaRegistry.errorField", Str, Derived("none"), Functions)(
    "Decoding in PERMISSIVE mode: a string field of this name is added to the result, holding why a record " +
      "could not be decoded (null for records that were)."
  ).declared

  val SchemaRegistryCacheSize =
    OptionSpec("schemaRegistry.cacheSize", Integer, Fixed(1000L), Functions, check = between(1, 1000000))(
      "Writer schemas kept per executor JVM, by version id: a record of a cached version needs no Glue call."
    ).declared

  val SchemaRegistryEndpointUrl =
    OptionSpec(
      "schemaRegistry.endpointUrl",
      Str,
      Derived("https://glue.<region>.amazonaws.com"),
      Functions,
      check = HttpUrl
    )("Glue endpoint URL.").declared

  /** Every option, in documentation order: the order of their declarations above. */
  val all: Seq[OptionSpec[_]] = inOrder.result()

  private val byLowerKey: Map[String, OptionSpec[_]] = all.map(o => o.lowerKey -> o).toMap
  require(byLowerKey.size == all.size, "two options share a key")

  def lookup(key: String): Option[OptionSpec[_]] = byLowerKey.get(key.toLowerCase(Locale.ROOT))

  /** The warning for each compatibility-only option among `keys` (in table order): what is done instead. */
  def compatibilityWarnings(keys: Iterable[String]): Seq[String] = {
    val named = keys.flatMap(lookup).toSet
    for (spec <- all if named(spec); instead <- spec.compatibility)
      yield s"Option ${spec.fullKey} is accepted for compatibility with the awslabs connector and ignored: $instead"
  }

  /** The declared key closest to a misspelt one, by edit distance, when it is close enough to be a likely typo. */
  def closestKey(key: String): Option[String] = {
    val lower = key.toLowerCase(Locale.ROOT)
    val (best, distance) = all.map(o => o.fullKey -> editDistance(lower, o.lowerKey)).minBy(_._2)
    if (distance <= math.max(3, lower.length / 3)) Some(best) else None
  }

  private[config] def editDistance(a: String, b: String): Int = {
    val row = Array.tabulate(b.length + 1)(identity)
    for (i <- 1 to a.length) {
      var diagonal = row(0)
      row(0) = i
      for (j <- 1 to b.length) {
        val above = row(j)
        row(j) =
          math.min(math.min(row(j) + 1, row(j - 1) + 1), diagonal + (if (a(i - 1) == b(j - 1)) 0 else 1))
        diagonal = above
      }
    }
    row(b.length)
  }
}
