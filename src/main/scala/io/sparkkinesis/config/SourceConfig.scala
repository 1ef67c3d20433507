package io.sparkkinesis.config

import java.time.Instant

import io.sparkkinesis.errors.KinesisErrors
import software.amazon.awssdk.regions.providers.DefaultAwsRegionProviderChain

/**
 * Connection settings of an AWS client the connector builds (Kinesis, Glue Schema Registry). Its `toString` shows no
 * secret (see [[CredentialsConfig]]), so it may appear in logs and task descriptions.
 */
private[sparkkinesis] final case class AwsClientConfig(
    region: String,
    endpointUrl: String,
    numRetries: Int,
    retryBaseDelayMs: Long,
    retryMaxDelayMs: Long,
    credentials: CredentialsConfig = CredentialsConfig.DefaultChainOnly,
    network: NetworkConfig = NetworkConfig.Default
)

private[sparkkinesis] object AwsClientConfig {

  /** The region of the environment (AWS SDK's default region chain), when the options name none. */
  val environmentRegion: () => Option[String] = () =>
    scala.util.Try(new DefaultAwsRegionProviderChain().getRegion.id()).toOption

  /** The settings of a client of the service at `endpointUrl` in `region`: retries, credentials, network. */
  private[config] def parse(view: OptionValues, region: String, endpointUrl: String): AwsClientConfig = {
    import KinesisOptions._
    AwsClientConfig(
      region = region,
      endpointUrl = endpointUrl,
      numRetries = view.getOrDefault(ClientNumRetries).toInt,
      retryBaseDelayMs = view.getOrDefault(ClientRetryIntervalsMs),
      retryMaxDelayMs = view.getOrDefault(ClientMaxRetryIntervalMs),
      credentials = CredentialsConfig.parse(view, region),
      network = NetworkConfig.parse(view)
    )
  }

  /** The public endpoint of an AWS service in a region. */
  private[config] def serviceEndpoint(service: String, region: String): String =
    s"https://$service.$region.${if (region.startsWith("cn-")) "amazonaws.com.cn" else "amazonaws.com"}"
}

/** The validated, typed view of the source options. */
private[sparkkinesis] final case class SourceConfig(
    streamName: String,
    // Stream name -> ARN, for the streams given by kinesis.streamArn.
    streamArns: Map[String, String],
    client: AwsClientConfig,
    startingPosition: StartingPositionSpec,
    // A batch read starts at TRIM_HORIZON unless kinesis.startingPosition is given (LATEST would read nothing).
    batchStartingPosition: StartingPositionSpec,
    // Set only when kinesis.endingPosition was given: batch reads default to LATEST, streaming queries refuse it.
    endingPosition: Option[EndingPositionSpec],
    failOnDataLoss: Boolean,
    // A re-created stream fails the query unless kinesis.failOnDataLoss is set to false explicitly: its default
    // (false, as in the awslabs connector) is about shards that expired, not about a checkpoint of another stream.
    failOnRecreatedStream: Boolean,
    maxRecordsPerShard: Long,
    maxFetchTimePerShardMs: Option[Long],
    maxRecordsPerTrigger: Option[Long],
    maxBytesPerTrigger: Option[Long],
    describeShardIntervalMs: Long,
    idleProbeIntervalMs: Long,
    avoidEmptyBatches: Boolean,
    executorAffinity: Boolean,
    shardsPerTask: Option[Int],
    minBatchesToRetain: Option[Int],
    metadataThreads: Int,
    metadataPath: Option[String],
    dynamoDb: Option[DynamoDbConfig],
    metadataRetry: RetryPolicy,
    recordsPerFetch: Int,
    fetchIntervalMs: Long,
    readMode: ReadMode,
    includeSubSequenceNumber: Boolean = false
) {

  /** The streams read: `kinesis.streamName` is one name or a comma-separated list. */
  def streamNames: Seq[String] = SourceConfig.splitStreamNames(streamName)

  /** How requests name a stream: by ARN when it was given as one, else by name. */
  def streamId(name: String): String = streamArns.getOrElse(name, name)
}

/** Exponential back-off with a cap: wait `baseMs * 2^attempt`, at most `maxMs`, for up to `retries` retries. */
private[sparkkinesis] final case class RetryPolicy(retries: Int, baseMs: Long, maxMs: Long) {
  def delayMs(attempt: Int): Long = math.min(maxMs, baseMs * (1L << math.min(attempt, 30)))
}

private[sparkkinesis] object SourceConfig {
  import KinesisOptions._

  /** Validates the user's options (keys in any case) and builds the typed view, or fails with one clear message. */
  def parse(options: Map[String, String], defaultRegion: () => Option[String]): SourceConfig = {
    val view = new OptionValues(options, OptionScope.Source)
    val arns = view.get(StreamArn).map(StreamArns.parse(StreamArn.fullKey, _)).getOrElse(Nil)
    // OptionRules has checked that exactly one of streamName and streamArn is set.
    val streamName = view.get(StreamName).getOrElse(arns.map(_.streamName).mkString(","))
    val arnRegion = StreamArns.region(arns, view.get(KinesisRegion).orElse(view.get(Region)))
    val client = clientConfig(view, () => arnRegion.orElse(defaultRegion()), arnRegion)
    val metadataRetry = RetryPolicy(
      view.getOrDefault(MetadataNumRetries).toInt,
      view.getOrDefault(MetadataRetryIntervalsMs),
      view.getOrDefault(MetadataMaxRetryIntervalMs)
    )
    val startingPosition = StartingPositionSpec.parse(view.getOrDefault(StartingPosition)).toOption.get
    val endingPosition = view.get(EndingPosition).map(EndingPositionSpec.parse(_).toOption.get)
    checkPositionDocuments(splitStreamNames(streamName), startingPosition, endingPosition)
    SourceConfig(
      streamName = streamName,
      streamArns = arns.map(a => a.streamName -> a.arn).toMap,
      client = client,
      startingPosition = startingPosition,
      batchStartingPosition = view
        .get(StartingPosition)
        .fold[StartingPositionSpec](StartingPositionSpec.TrimHorizon)(_ => startingPosition),
      endingPosition = endingPosition,
      failOnDataLoss = view.getOrDefault(FailOnDataLoss),
      failOnRecreatedStream = view.get(FailOnDataLoss).getOrElse(true),
      maxRecordsPerShard = view.getOrDefault(MaxFetchRecordsPerShard),
      maxFetchTimePerShardMs = view.get(MaxFetchTimePerShardSec),
      maxRecordsPerTrigger = view.get(MaxRecordsPerTrigger),
      maxBytesPerTrigger = view.get(MaxBytesPerTrigger),
      describeShardIntervalMs = view.getOrDefault(DescribeShardInterval),
      idleProbeIntervalMs = view.getOrDefault(IdleProbeIntervalMs),
      avoidEmptyBatches = view
        .get(AvoidEmptyBatches)
        .orElse(view.get(InternalAvoidEmptyBatches))
        .getOrElse(view.getOrDefault(AvoidEmptyBatches)),
      executorAffinity = view.getOrDefault(ExecutorAffinity),
      shardsPerTask = view.get(ShardsPerTask).map(_.toInt),
      minBatchesToRetain = view.get(MinBatchesToRetain).map(_.toInt),
      metadataThreads = view.getOrDefault(CheckNewRecordThreads).toInt,
      metadataPath = view.get(MetadataPath),
      dynamoDb = DynamoDbConfig.parse(view, client, metadataRetry),
      metadataRetry = metadataRetry,
      recordsPerFetch = view.getOrDefault(RecordsPerFetch).toInt,
      fetchIntervalMs = view.getOrDefault(FetchIntervalMs),
      readMode = readMode(view, arns, splitStreamNames(streamName)),
      includeSubSequenceNumber = view.getOrDefault(IncludeSubSequenceNumber)
    )
  }

  /** Position documents name only streams the query reads, and no end lies before its start. */
  private def checkPositionDocuments(
      streams: Seq[String],
      start: StartingPositionSpec,
      end: Option[EndingPositionSpec]
  ): Unit = {
    def refuse(spec: OptionSpec[_])(problem: String): Nothing =
      throw KinesisErrors.badValueNotShown(spec.fullKey, problem)
    def check(spec: OptionSpec[_], positions: ShardPositions): Unit =
      positions.streams.keys.toSeq.sorted.find(s => !streams.contains(s)).foreach { s =>
        refuse(spec)(
          s"stream '$s' is not read by this query; the streams read (${StreamName.fullKey}) are " +
            streams.mkString(", ")
        )
      }
    val startDoc = start match {
      case StartingPositionSpec.PerShard(p) => check(StartingPosition, p); Some(p)
      case _ => None
    }
    val endDoc = end.collect { case EndingPositionSpec.PerShard(p) => check(EndingPosition, p); p }
    for (s <- startDoc; e <- endDoc) ShardPositions.checkRange(s, e).left.foreach(refuse(EndingPosition))
    end.foreach(checkTimeRange(start, _).left.foreach(refuse(EndingPosition)))
  }

  /**
   * Where both ends of a shard are timestamps (for every shard, or in a per-shard document), the end must not lie
   * before the start. (Ends fixed by sequence number are compared by [[ShardPositions.checkRange]].)
   */
  private[config] def checkTimeRange(
      start: StartingPositionSpec,
      end: EndingPositionSpec
  ): Either[String, Unit] = {
    def inDocument(doc: ShardPositions) = Timestamps(
      None,
      for ((stream, shards) <- doc.streams; (id, ShardPlace.AtTimestamp(at)) <- shards)
        yield (stream, id) -> at
    )
    def timestamps(position: Any): Timestamps = position match {
      case StartingPositionSpec.AtTimestamp(instant) => Timestamps(Some(instant), Map.empty)
      case EndingPositionSpec.AtTimestamp(instant) => Timestamps(Some(instant), Map.empty)
      case StartingPositionSpec.PerShard(doc) => inDocument(doc)
      case EndingPositionSpec.PerShard(doc) => inDocument(doc)
      case _ => Timestamps(None, Map.empty)
    }
    val (starts, ends) = (timestamps(start), timestamps(end))
    val everyShard = for (s <- starts.everyShard; e <- ends.everyShard) yield ("", s, e)
    val perShard = for {
      key @ (stream, id) <- (starts.perShard.keySet ++ ends.perShard.keySet).toSeq.sorted
      s <- starts.at(key)
      e <- ends.at(key)
    } yield (s"stream '$stream', shard '$id': ", s, e)
    (everyShard.toSeq ++ perShard)
      .collectFirst {
        case (where, s, e) if e.isBefore(s) =>
          s"${where}the ending timestamp $e lies before the starting timestamp $s"
      }
      .toLeft(())
  }

  /** The timestamps of one position option: for every shard, or per (stream, shard) of a document. */
  private final case class Timestamps(everyShard: Option[Instant], perShard: Map[(String, String), Instant]) {
    def at(key: (String, String)): Option[Instant] = perShard.get(key).orElse(everyShard)
  }

  def splitStreamNames(raw: String): Seq[String] = OptionSpec.Matching.items(raw)

  private def readMode(view: OptionValues, streamArns: Seq[StreamArn], streams: Seq[String]): ReadMode =
    if (view.getOrDefault(ConsumerType) == io.sparkkinesis.config.ConsumerType.GetRecords)
      ReadMode.Polling(view.get(MaxFetchRate))
    else
      ReadMode.FanOut(
        EfoConfig(
          // OptionRules has checked that exactly one of consumerName and consumerArn is set.
          consumerName = view.get(ConsumerName),
          consumerArns = view.get(ConsumerArn).map(consumerArns(_, streamArns, streams)).getOrElse(Map.empty),
          tags = view.get(ConsumerTags).map(consumerTags).getOrElse(Map.empty),
          deregisterOnStop = view.getOrDefault(ConsumerDeregisterOnStop),
          subscribeTimeoutMs = view.getOrDefault(SubscribeTimeoutSec),
          maxRetries = view.getOrDefault(SubscribeMaxRetries).toInt,
          httpProtocol = view.getOrDefault(SubscribeHttpProtocol)
        )
      )

  /**
   * `kinesis.consumerArn` as stream name -> consumer ARN: exactly one consumer of each stream read (a consumer ARN
   * starts with its stream's ARN), of the stream's ARN when it was given by ARN. (Whether a stream given by name is
   * the consumer's stream, account included, the driver checks with the ARN Kinesis answers: see StreamConsumers.)
   */
  private def consumerArns(raw: String, arns: Seq[StreamArn], streams: Seq[String]): Map[String, String] = {
    def refuse(problem: String) = KinesisErrors.badValue(ConsumerArn.fullKey, raw, problem)
    val byStream = splitStreamNames(raw).map(arn => streamArnOf(arn).split(":stream/").last -> arn)
    if (byStream.map(_._1).sorted != streams.sorted)
      throw refuse(
        s"expected one consumer of each stream read (${streams.mkString(", ")}), in any order; it gives consumers " +
          s"of ${byStream.map(s => s"'${s._1}'").mkString(", ")}"
      )
    arns
      .map(s => (s, streamArnOf(byStream.toMap.apply(s.streamName))))
      .find(s => s._1.arn != s._2)
      .foreach { case (s, ofConsumer) =>
        throw refuse(
          s"the consumer of stream '${s.streamName}' belongs to $ofConsumer, not to ${s.arn} (${StreamArn.fullKey})"
        )
      }
    byStream.toMap
  }

  /** The ARN of the stream of an enhanced fan-out consumer ARN (`<stream ARN>/consumer/<name>:<timestamp>`). */
  def streamArnOf(consumerArn: String): String = consumerArn.substring(0, consumerArn.indexOf("/consumer/"))

  /** `kinesis.consumerTags` (its pattern checked) as a map; a key given twice is refused. */
  def consumerTags(raw: String): Map[String, String] = {
    val pairs = raw.split(",").toSeq.map(_.split("=", 2)).map(kv => kv(0).trim -> kv(1).trim)
    pairs.map(_._1).diff(pairs.map(_._1).distinct).headOption.foreach { key =>
      throw KinesisErrors.badValue(
        ConsumerTags.fullKey,
        raw,
        s"tag key '$key' is given twice; give each key once"
      )
    }
    pairs.toMap
  }

  private val endpointRegion = """^https?://kinesis(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?/?$""".r

  private[config] def clientConfig(
      view: OptionValues,
      defaultRegion: () => Option[String],
      arnRegion: Option[String] = None
  ): AwsClientConfig = {
    val endpoint = view.get(EndpointUrl)
    val fromEndpoint = endpoint.collect { case endpointRegion(r) => r }
    val region = view
      .get(KinesisRegion)
      .orElse(view.get(Region))
      .orElse(arnRegion)
      .orElse(fromEndpoint)
      .orElse(defaultRegion())
      .getOrElse(throw KinesisErrors.noRegion())
    val url = endpoint.getOrElse(AwsClientConfig.serviceEndpoint("kinesis", region))
    AwsClientConfig.parse(view, region, url)
  }
}
