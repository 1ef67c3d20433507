package io.sparkkinesis.config

import java.time.{Instant, OffsetDateTime}
import java.time.format.DateTimeParseException
import java.util.Locale

import scala.util.Try

import io.sparkkinesis.credentials.CredentialsConfig

/** Where a query with no checkpoint starts reading. */
sealed trait StartingPositionSpec

object StartingPositionSpec {
  case object Latest extends StartingPositionSpec
  case object TrimHorizon extends StartingPositionSpec
  final case class AtTimestamp(instant: Instant) extends StartingPositionSpec

  private val allowed =
    "LATEST, TRIM_HORIZON, EARLIEST or 'AT_TIMESTAMP <ISO-8601 instant with offset, e.g. 2023-08-30T19:00:05Z>'"

  def parse(raw: String): Either[String, StartingPositionSpec] = {
    val trimmed = raw.trim
    trimmed.toUpperCase(Locale.ROOT) match {
      case "LATEST" => Right(Latest)
      case "TRIM_HORIZON" | "EARLIEST" => Right(TrimHorizon)
      case upper if upper.startsWith("AT_TIMESTAMP") =>
        val text = trimmed.substring("AT_TIMESTAMP".length).trim
        parseInstant(text)
          .map(AtTimestamp)
          .toRight(s"$allowed; '$text' is not an ISO-8601 instant with an offset")
      case _ => Left(allowed)
    }
  }

  private def parseInstant(text: String): Option[Instant] =
    try Some(OffsetDateTime.parse(text).toInstant)
    catch { case _: DateTimeParseException => Try(Instant.parse(text)).toOption }
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
    credentials: CredentialsConfig = CredentialsConfig.DefaultChainOnly
)

/** HTTP protocol of the SubscribeToShard client. */
sealed abstract class HttpProtocol(val name: String)

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
    client: AwsClientConfig,
    startingPosition: StartingPositionSpec,
    failOnDataLoss: Boolean,
    maxRecordsPerShard: Long,
    maxFetchTimePerShardMs: Option[Long],
    describeShardIntervalMs: Long,
    idleProbeIntervalMs: Long,
    minBatchesToRetain: Option[Int],
    metadataThreads: Int,
    metadataPath: Option[String],
    dynamoDb: Option[DynamoDbConfig],
    metadataRetry: RetryPolicy,
    recordsPerFetch: Int,
    fetchIntervalMs: Long,
    efo: Option[EfoConfig]
) {
  def consumerType: String = if (efo.isDefined) "SubscribeToShard" else "GetRecords"
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
    val client = clientConfig(view, defaultRegion)
    val metadataRetry = RetryPolicy(
      view.getOrDefault(MetadataNumRetries).toInt,
      view.getOrDefault(MetadataRetryIntervalsMs),
      view.getOrDefault(MetadataMaxRetryIntervalMs)
    )
    SourceConfig(
      streamName = view.required(StreamName),
      client = client,
      startingPosition = StartingPositionSpec.parse(view.getOrDefault(StartingPosition)).toOption.get,
      failOnDataLoss = view.getOrDefault(FailOnDataLoss),
      maxRecordsPerShard = view.getOrDefault(MaxFetchRecordsPerShard),
      // Saturates: seconds beyond Long.MaxValue / 1000 would otherwise wrap to a negative limit.
      maxFetchTimePerShardMs = view
        .get(MaxFetchTimePerShardSec)
        .map(s => if (s > Long.MaxValue / 1000L) Long.MaxValue else s * 1000L),
      describeShardIntervalMs = view.getOrDefault(DescribeShardInterval),
      idleProbeIntervalMs = view.getOrDefault(IdleProbeIntervalMs),
      minBatchesToRetain = view.get(MinBatchesToRetain).map(_.toInt),
      metadataThreads = view.getOrDefault(CheckNewRecordThreads).toInt,
      metadataPath = view.get(MetadataPath),
      dynamoDb = DynamoDbConfig.parse(view, client, metadataRetry),
      metadataRetry = metadataRetry,
      recordsPerFetch = view.getOrDefault(RecordsPerFetch).toInt,
      fetchIntervalMs = view.getOrDefault(FetchIntervalMs),
      efo = efoConfig(view)
    )
  }

  private def efoConfig(view: OptionValues): Option[EfoConfig] =
    if (view.getOrDefault(ConsumerType) != "SubscribeToShard") None
    else {
      val name = view
        .get(ConsumerName)
        .getOrElse(
          throw new IllegalArgumentException(
            s"Option ${ConsumerName.fullKey} is required when ${ConsumerType.fullKey} is SubscribeToShard: " +
              "name the enhanced fan-out consumer this query reads with (1 to 128 characters of a-z, A-Z, 0-9, " +
              "'_', '.' and '-')."
          )
        )
      Some(
        EfoConfig(
          consumerName = name,
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
      defaultRegion: () => Option[String]
  ): AwsClientConfig = {
    val endpoint = view.get(EndpointUrl)
    val fromEndpoint = endpoint.collect { case endpointRegion(r) => r }
    val region = view
      .get(KinesisRegion)
      .orElse(view.get(Region))
      .orElse(fromEndpoint)
      .orElse(defaultRegion())
      .getOrElse(
        throw new IllegalArgumentException(
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
      credentials = CredentialsConfig.parse(view, region)
    )
  }
}

/**
 * The user's options checked against the option table: unknown `kinesis.*` keys, bad values and options this build
 * does not support yet all fail here, when the query is defined.
 */
final class OptionValues(raw: Map[String, String], scope: OptionScope) {

  private val values: Map[OptionSpec[_], String] = raw.iterator.flatMap { case (key, value) =>
    if (!key.toLowerCase(Locale.ROOT).startsWith(OptionSpec.Prefix)) None
    else {
      val spec = KinesisOptions.lookup(key).getOrElse {
        val hint = KinesisOptions.closestKey(key).map(k => s" Did you mean '$k'?").getOrElse("")
        throw new IllegalArgumentException(
          s"Unknown option '$key'.$hint See docs/options.md for the valid options."
        )
      }
      Some(spec -> value)
    }
  }.toMap

  values.keys.foreach { spec =>
    // Scope first: an option of the other side is wrong here whether or not that side is supported yet.
    if (spec.scope != scope && spec.scope != OptionScope.Both && scope != OptionScope.Both) {
      val where = if (spec.scope == OptionScope.Sink) "writes (the sink)" else "reads (the source)"
      throw new IllegalArgumentException(s"Option ${spec.fullKey} applies to $where only; remove it here.")
    }
    spec.notYetSupported.foreach { reason =>
      throw new IllegalArgumentException(s"Option ${spec.fullKey} is not supported yet: $reason.")
    }
    parseChecked(spec)
  }

  private def parseChecked[T](spec: OptionSpec[T]): T = {
    val text = values(spec)
    def shown = if (spec.secret) "<redacted>" else s"'$text'"
    val parsed = spec.optionType.parse(text) match {
      case Right(v) => v
      case Left(allowed) =>
        throw new IllegalArgumentException(
          s"Invalid value $shown for option ${spec.fullKey}: expected $allowed."
        )
    }
    spec.check(parsed).foreach { allowed =>
      throw new IllegalArgumentException(
        s"Invalid value $shown for option ${spec.fullKey}: expected $allowed."
      )
    }
    spec.unsupportedValues.get(parsed).foreach { reason =>
      throw new IllegalArgumentException(
        s"Option ${spec.fullKey} = '${spec.optionType.render(parsed)}' is not supported yet: $reason"
      )
    }
    parsed
  }

  def get[T](spec: OptionSpec[T]): Option[T] = if (values.contains(spec)) Some(parseChecked(spec)) else None

  def getOrDefault[T](spec: OptionSpec[T]): T = get(spec).getOrElse(spec.default match {
    case OptionDefault.Fixed(v) => v
    case other => throw new IllegalStateException(s"${spec.fullKey} has no fixed default ($other)")
  })

  def required[T](spec: OptionSpec[T]): T = get(spec).getOrElse(
    throw new IllegalArgumentException(s"Option ${spec.fullKey} is required: ${spec.doc}")
  )
}
