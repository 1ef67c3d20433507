package io.sparkkinesis.config

import java.time.{Instant, OffsetDateTime}
import java.time.format.DateTimeParseException
import java.util.Locale

import scala.util.Try

import io.sparkkinesis.errors.KinesisErrors

/** Where a query with no checkpoint starts reading. */
sealed trait StartingPositionSpec

object StartingPositionSpec {
  case object Latest extends StartingPositionSpec
  case object TrimHorizon extends StartingPositionSpec
  final case class AtTimestamp(instant: Instant) extends StartingPositionSpec

  /** Per-shard places; shards the document does not list start as [[ShardPositions]] states. */
  final case class PerShard(positions: ShardPositions) extends StartingPositionSpec

  private val allowed =
    "LATEST, TRIM_HORIZON, EARLIEST, 'AT_TIMESTAMP <ISO-8601 instant with offset, e.g. 2023-08-30T19:00:05Z>' or " +
      "a JSON document of per-shard positions"

  def parse(raw: String): Either[String, StartingPositionSpec] =
    PositionText.parse[StartingPositionSpec](
      raw,
      allowed,
      ShardPositions.StartTypes,
      { case "LATEST" => Latest; case "TRIM_HORIZON" | "EARLIEST" => TrimHorizon },
      AtTimestamp,
      PerShard
    )
}

/** The text forms shared by `kinesis.startingPosition` and `kinesis.endingPosition`. */
private[config] object PositionText {

  /**
   * A per-shard document (of `documentTypes`), `AT_TIMESTAMP <instant>`, or one of the names `named` knows (matched
   * in upper case). `allowed` describes every accepted form, for the message.
   */
  def parse[T](
      raw: String,
      allowed: String,
      documentTypes: Seq[String],
      named: PartialFunction[String, T],
      atTimestamp: Instant => T,
      perShard: ShardPositions => T
  ): Either[String, T] = {
    val trimmed = raw.trim
    val upper = trimmed.toUpperCase(Locale.ROOT)
    if (ShardPositions.looksLikeDocument(trimmed)) {
      ShardPositions
        .parse(trimmed, documentTypes)
        .map(perShard)
        .left
        .map(problem => s"a per-shard positions document; $problem")
    } else if (named.isDefinedAt(upper)) Right(named(upper))
    else if (upper.startsWith("AT_TIMESTAMP")) {
      val text = trimmed.substring("AT_TIMESTAMP".length).trim
      parseInstant(text)
        .map(atTimestamp)
        .toRight(s"$allowed; '$text' is not an ISO-8601 instant with an offset")
    } else Left(allowed)
  }

  def parseInstant(text: String): Option[Instant] =
    try Some(OffsetDateTime.parse(text).toInstant)
    catch { case _: DateTimeParseException => Try(Instant.parse(text)).toOption }
}

/** Where a batch read ends (exclusive): it reads the records before this place. */
sealed trait EndingPositionSpec

object EndingPositionSpec {

  /** The tip of each shard when the read is planned. */
  case object Latest extends EndingPositionSpec

  /** Before the first record that arrived at or after `instant`, in every shard. */
  final case class AtTimestamp(instant: Instant) extends EndingPositionSpec

  /** Per-shard places; for shards the document does not list, see the batch planner. */
  final case class PerShard(positions: ShardPositions) extends EndingPositionSpec

  private val allowed =
    "LATEST, 'AT_TIMESTAMP <ISO-8601 instant with offset, e.g. 2023-08-30T19:00:05Z>' or a JSON document of " +
      "per-shard positions"

  def parse(raw: String): Either[String, EndingPositionSpec] =
    PositionText.parse[EndingPositionSpec](
      raw,
      allowed,
      ShardPositions.EndTypes,
      { case "LATEST" => Latest },
      AtTimestamp,
      PerShard
    )
}

/**
 * Connection settings shared by every Kinesis client the connector builds. Its `toString` shows no secret (see
 * [[CredentialsConfig]]), so it may appear in logs and task descriptions.
 */
final case class AwsClientConfig(
    region: String,
    endpointUrl: String,
    numRetries: Int,
    retryBaseDelayMs: Long,
    retryMaxDelayMs: Long,
    credentials: CredentialsConfig = CredentialsConfig.DefaultChainOnly,
    network: NetworkConfig = NetworkConfig.Default
)

/** HTTP protocol of the SubscribeToShard client. */
sealed abstract class HttpProtocol(val name: String) extends Serializable

object HttpProtocol {
  case object Http2 extends HttpProtocol("HTTP2")
  case object Http2Alpn extends HttpProtocol("HTTP2_ALPN")
  case object Http1 extends HttpProtocol("HTTP1_1")
  val all: Seq[HttpProtocol] = Seq(Http2, Http2Alpn, Http1)
  def named(name: String): HttpProtocol = all.find(_.name == name).get
}

/** Enhanced fan-out settings (consumerType SubscribeToShard). */
final case class EfoConfig(
    consumerName: String,
    deregisterOnStop: Boolean,
    subscribeTimeoutMs: Long,
    maxRetries: Int,
    httpProtocol: HttpProtocol
)

/** The validated, typed view of the source options. */
final case class SourceConfig(
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
    maxFetchRateMBps: Option[Double],
    describeShardIntervalMs: Long,
    idleProbeIntervalMs: Long,
    executorAffinity: Boolean,
    shardsPerTask: Option[Int],
    minBatchesToRetain: Option[Int],
    metadataThreads: Int,
    metadataPath: Option[String],
    dynamoDb: Option[DynamoDbConfig],
    metadataRetry: RetryPolicy,
    recordsPerFetch: Int,
    fetchIntervalMs: Long,
    efo: Option[EfoConfig],
    // kinesis.includeSubSequenceNumber: rows carry a subSequenceNumber column (see KinesisScan.schema).
    includeSubSequenceNumber: Boolean = false
) {
  def consumerType: String = if (efo.isDefined) "SubscribeToShard" else "GetRecords"

  /** The streams read: `kinesis.streamName` is one name or a comma-separated list. */
  def streamNames: Seq[String] = SourceConfig.splitStreamNames(streamName)

  /** How requests name a stream: by ARN when it was given as one, else by name. */
  def streamId(name: String): String = streamArns.getOrElse(name, name)
}

/** Exponential back-off with a cap: wait `baseMs * 2^attempt`, at most `maxMs`, for up to `retries` retries. */
final case class RetryPolicy(retries: Int, baseMs: Long, maxMs: Long) {
  def delayMs(attempt: Int): Long = math.min(maxMs, baseMs * (1L << math.min(attempt, 30)))
}

object SourceConfig {
  import KinesisOptions._

  /** Validates the user's options (keys in any case) and builds the typed view, or fails with one clear message. */
  def parse(options: Map[String, String], defaultRegion: () => Option[String]): SourceConfig = {
    val view = new OptionValues(options, OptionScope.Source)
    val arns = view.get(StreamArn).map(StreamArns.parse(StreamArn.fullKey, _)).getOrElse(Nil)
    // OptionRules has checked that exactly one of streamName and streamArn is set.
    val streamName = checkStreamNames(view.get(StreamName).getOrElse(arns.map(_.streamName).mkString(",")))
    val arnRegion = StreamArns.region(arns, view.get(KinesisRegion).orElse(view.get(Region)))
    val client = clientConfig(view, () => arnRegion.orElse(defaultRegion()), arnRegion)
    val metadataRetry = RetryPolicy(
      view.getOrDefault(MetadataNumRetries).toInt,
      view.getOrDefault(MetadataRetryIntervalsMs),
      view.getOrDefault(MetadataMaxRetryIntervalMs)
    )
    val efo = efoConfig(view)
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
      // Saturates: seconds beyond Long.MaxValue / 1000 would otherwise wrap to a negative limit.
      maxFetchTimePerShardMs = view
        .get(MaxFetchTimePerShardSec)
        .map(s => if (s > Long.MaxValue / 1000L) Long.MaxValue else s * 1000L),
      maxRecordsPerTrigger = view.get(MaxRecordsPerTrigger),
      maxBytesPerTrigger = view.get(MaxBytesPerTrigger),
      maxFetchRateMBps = view.get(MaxFetchRate),
      describeShardIntervalMs = view.getOrDefault(DescribeShardInterval),
      idleProbeIntervalMs = view.getOrDefault(IdleProbeIntervalMs),
      executorAffinity = view.getOrDefault(ExecutorAffinity),
      shardsPerTask = view.get(ShardsPerTask).map(_.toInt),
      minBatchesToRetain = view.get(MinBatchesToRetain).map(_.toInt),
      metadataThreads = view.getOrDefault(CheckNewRecordThreads).toInt,
      metadataPath = view.get(MetadataPath),
      dynamoDb = DynamoDbConfig.parse(view, client, metadataRetry),
      metadataRetry = metadataRetry,
      recordsPerFetch = view.getOrDefault(RecordsPerFetch).toInt,
      fetchIntervalMs = view.getOrDefault(FetchIntervalMs),
      efo = efo,
      includeSubSequenceNumber = view.getOrDefault(IncludeSubSequenceNumber)
    )
  }

  /** Position documents name only streams the query reads, and no end lies before its start. */
  private def checkPositionDocuments(
      streams: Seq[String],
      start: StartingPositionSpec,
      end: Option[EndingPositionSpec]
  ): Unit = {
    def check(spec: OptionSpec[_], positions: ShardPositions): Unit =
      positions.streams.keys.toSeq.sorted.find(s => !streams.contains(s)).foreach { s =>
        throw KinesisErrors.invalidOption(
          s"Invalid value for option ${spec.fullKey}: stream '$s' is not read by this query; the streams read " +
            s"(${StreamName.fullKey}) are ${streams.mkString(", ")}."
        )
      }
    val startDoc = start match {
      case StartingPositionSpec.PerShard(p) => check(StartingPosition, p); Some(p)
      case _ => None
    }
    val endDoc = end.collect { case EndingPositionSpec.PerShard(p) => check(EndingPosition, p); p }
    for (s <- startDoc; e <- endDoc) ShardPositions.checkRange(s, e).left.foreach { problem =>
      throw KinesisErrors.invalidOption(s"Invalid value for option ${EndingPosition.fullKey}: $problem.")
    }
    end.foreach(e =>
      checkTimeRange(start, e).left.foreach { problem =>
        throw KinesisErrors.invalidOption(s"Invalid value for option ${EndingPosition.fullKey}: $problem.")
      }
    )
  }

  /**
   * Where both ends of a shard are timestamps (for every shard, or in a per-shard document), the end must not lie
   * before the start. (Ends fixed by sequence number are compared by [[ShardPositions.checkRange]].)
   */
  private[config] def checkTimeRange(
      start: StartingPositionSpec,
      end: EndingPositionSpec
  ): Either[String, Unit] = {
    val starts = start match {
      case StartingPositionSpec.AtTimestamp(instant) => Timestamps(Some(instant), Map.empty)
      case StartingPositionSpec.PerShard(doc) => Timestamps.of(doc)
      case _ => Timestamps(None, Map.empty)
    }
    val ends = end match {
      case EndingPositionSpec.AtTimestamp(instant) => Timestamps(Some(instant), Map.empty)
      case EndingPositionSpec.PerShard(doc) => Timestamps.of(doc)
      case _ => Timestamps(None, Map.empty)
    }
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

  private object Timestamps {

    def of(doc: ShardPositions): Timestamps = Timestamps(
      None,
      for {
        (stream, shards) <- doc.streams
        (id, ShardPlace.AtTimestamp(instant)) <- shards
      } yield (stream, id) -> instant
    )
  }

  private val streamNamePattern = "[a-zA-Z0-9_.-]{1,128}".r

  def splitStreamNames(raw: String): Seq[String] = raw.split(",").map(_.trim).toSeq

  /** Checks a comma-separated list of stream names: each valid, none twice. */
  private def checkStreamNames(raw: String): String = {
    val names = splitStreamNames(raw)
    val bad = names.filterNot(n => streamNamePattern.pattern.matcher(n).matches())
    if (bad.nonEmpty) {
      throw KinesisErrors.invalidOption(
        s"Invalid value '$raw' for option ${StreamName.fullKey}: '${bad.head}' is not a stream name; expected " +
          "one name or a comma-separated list of names of 1 to 128 letters, digits, '_', '.' or '-'."
      )
    }
    val twice = names.diff(names.distinct)
    if (twice.nonEmpty) {
      throw KinesisErrors.invalidOption(
        s"Invalid value '$raw' for option ${StreamName.fullKey}: stream '${twice.head}' is listed twice."
      )
    }
    raw
  }

  private def efoConfig(view: OptionValues): Option[EfoConfig] =
    if (view.getOrDefault(ConsumerType) != "SubscribeToShard") None
    else {
      Some(
        EfoConfig(
          consumerName = view.required(ConsumerName),
          deregisterOnStop = view.getOrDefault(ConsumerDeregisterOnStop),
          subscribeTimeoutMs = view.getOrDefault(SubscribeTimeoutSec) * 1000L,
          maxRetries = view.getOrDefault(SubscribeMaxRetries).toInt,
          httpProtocol = HttpProtocol.named(view.getOrDefault(SubscribeHttpProtocol))
        )
      )
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
      .getOrElse(
        throw KinesisErrors.invalidOption(
          "No AWS region: set kinesis.region (for example 'us-east-1'), or a regional kinesis.endpointUrl, " +
            "or the AWS_REGION environment variable"
        )
      )
    val url = endpoint.getOrElse {
      val suffix = if (region.startsWith("cn-")) "amazonaws.com.cn" else "amazonaws.com"
      s"https://kinesis.$region.$suffix"
    }
    AwsClientConfig(
      region = region,
      endpointUrl = url,
      numRetries = view.getOrDefault(ClientNumRetries).toInt,
      retryBaseDelayMs = view.getOrDefault(ClientRetryIntervalsMs),
      retryMaxDelayMs = view.getOrDefault(ClientMaxRetryIntervalMs),
      credentials = CredentialsConfig.parse(view, region),
      network = NetworkConfig.parse(view)
    )
  }
}

/**
 * The user's options checked against the option table: unknown `kinesis.*` keys, bad values, options this build
 * does not support yet and combinations that break an [[OptionRules]] rule of `scope` all fail here, when the query
 * is defined.
 */
final class OptionValues(raw: Map[String, String], scope: OptionScope) {

  private val values: Map[OptionSpec[_], String] = raw.iterator
    .filter { case (key, _) => key.toLowerCase(Locale.ROOT).startsWith(OptionSpec.Prefix) }
    .map { case (key, value) =>
      val spec = KinesisOptions.lookup(key).getOrElse {
        val hint = KinesisOptions.closestKey(key).map(k => s" Did you mean '$k'?").getOrElse("")
        throw KinesisErrors.invalidOption(
          s"Unknown option '$key'.$hint See docs/options.md for the valid options."
        )
      }
      spec -> value
    }
    .toMap

  values.keys.foreach { spec =>
    // Scope first: an option of the other side is wrong here whether or not that side is supported yet.
    if (spec.scope != scope && spec.scope != OptionScope.Both && scope != OptionScope.Both) {
      val where = if (spec.scope == OptionScope.Sink) "writes (the sink)" else "reads (the source)"
      throw KinesisErrors.invalidOption(s"Option ${spec.fullKey} applies to $where only; remove it here.")
    }
    spec.notYetSupported.foreach { reason =>
      throw KinesisErrors.unsupportedOption(s"Option ${spec.fullKey} is not supported yet: $reason.")
    }
    parseChecked(spec)
  }
  OptionRules.check(this, scope)
  OptionValues.warnOnce(KinesisOptions.compatibilityWarnings(values.keys.map(_.fullKey)))

  private def parseChecked[T](spec: OptionSpec[T]): T = {
    val text = values(spec)
    def shown = if (spec.secret) "<redacted>" else s"'$text'"
    val parsed = spec.optionType.parse(text) match {
      case Right(v) => v
      case Left(allowed) =>
        throw KinesisErrors.invalidOption(
          s"Invalid value $shown for option ${spec.fullKey}: expected $allowed."
        )
    }
    spec.check(parsed).foreach { allowed =>
      throw KinesisErrors.invalidOption(
        s"Invalid value $shown for option ${spec.fullKey}: expected $allowed."
      )
    }
    spec.unsupportedValues.get(parsed).foreach { reason =>
      throw KinesisErrors.unsupportedOption(
        s"Option ${spec.fullKey} = '${spec.optionType.render(parsed)}' is not supported yet: $reason"
      )
    }
    parsed
  }

  /** Whether the user gave the option. */
  def isSet(spec: OptionSpec[_]): Boolean = values.contains(spec)

  /** The option's value in its canonical string form: the value given, else its fixed default. */
  def canonical[T](spec: OptionSpec[T]): Option[String] =
    get(spec)
      .orElse(spec.default match {
        case OptionDefault.Fixed(v) => Some(v)
        case _ => None
      })
      .map(spec.optionType.render)

  def get[T](spec: OptionSpec[T]): Option[T] = if (values.contains(spec)) Some(parseChecked(spec)) else None

  def getOrDefault[T](spec: OptionSpec[T]): T = get(spec).getOrElse(spec.default match {
    case OptionDefault.Fixed(v) => v
    case other => throw new IllegalStateException(s"${spec.fullKey} has no fixed default ($other)")
  })

  def required[T](spec: OptionSpec[T]): T = get(spec).getOrElse(
    throw KinesisErrors.invalidOption(s"Option ${spec.fullKey} is required: ${spec.doc}")
  )
}

object OptionValues {
  private val log = org.slf4j.LoggerFactory.getLogger(classOf[OptionValues])
  private val warned = java.util.concurrent.ConcurrentHashMap.newKeySet[String]()

  /** Logs each warning once per JVM (a query's options are parsed several times while it is defined). */
  private def warnOnce(warnings: Seq[String]): Unit =
    warnings.foreach(w => if (warned.add(w)) log.warn(w))
}
