package io.sparkkinesis.config

import java.net.URI

import scala.util.Try

import io.sparkkinesis.errors.KinesisErrors

/**
 * What configures one executor-wide producer (`producer`: the Kinesis Producer Library, or the in-JVM one). Tasks
 * whose settings are equal share one producer, so this holds only producer-level settings (not the stream name) and
 * one secret: `proxy` (its password, redacted by its `toString`), since producers with different proxy credentials
 * must not be shared.
 * `serviceManagedDistribution`: the write's stream has RecordDistributionStrategy AUTO, as the driver learnt it
 * ([[io.sparkkinesis.sink.TargetStreamCheck]]); such a producer never aggregates. `maxRecordBytes`: the largest
 * record (data and partition key) the stream takes, as the driver learnt it (1 MiB, Kinesis' default, until then or
 * when it could not ask); the KPL's maxUserRecordSize and aggregation size limit are set from it.
 */
private[sparkkinesis] final case class ProducerSettings(
    region: String,
    endpointHost: String,
    endpointPort: Long,
    stsEndpoint: Option[(String, Long)],
    verifyCertificate: Boolean,
    recordMaxBufferedTimeMs: Long,
    maxConnections: Long,
    aggregationEnabled: Boolean,
    aggregationMaxCount: Long,
    aggregationMaxSize: Long,
    recordTtlMs: Long,
    requestTimeoutMs: Long,
    rateLimit: Long,
    metricsLevel: MetricsLevel,
    threadingModel: ThreadingModel,
    serviceManagedDistribution: Boolean = false,
    proxy: Option[ProxyConfig] = None,
    maxRecordBytes: Long = 1048576L,
    producer: ProducerKind = ProducerKind.Kpl
)

/** The validated, typed view of the sink options. */
private[sparkkinesis] final case class SinkConfig(
    streamName: String,
    client: AwsClientConfig,
    producer: ProducerSettings,
    flushWaitTimeMs: Long,
    maxOutstandingRecords: Long,
    // Whether producer.maxRecordBytes is the stream's own limit (DescribeStreamSummary answered) or the default.
    recordLimitKnown: Boolean = false,
    // Set when the write named its stream by kinesis.streamArn (streamName is then the ARN's stream name).
    streamArn: Option[String] = None
) {

  /**
   * Longest a task's commit waits for its rows' acknowledgements. The producer settles every row within its TTL plus
   * one request timeout (for a request in flight at the TTL): a longer wait means the producer itself is stuck.
   */
  def commitTimeoutMs: Long = producer.recordTtlMs + 2 * producer.requestTimeoutMs + 10000L
}

private[sparkkinesis] object SinkConfig {
  import KinesisOptions._

  /** Validates the user's options (keys in any case) for a write, or fails with one clear message. */
  def parse(options: Map[String, String], defaultRegion: () => Option[String]): SinkConfig = {
    val view = new OptionValues(options, OptionScope.Sink)
    // OptionRules has checked that one of streamName and streamArn is set, and that streamArn names one stream.
    val arn = view.get(StreamArn).flatMap(StreamArns.parse(StreamArn.fullKey, _).headOption)
    val arnRegion = StreamArns.region(arn.toSeq, view.get(Region))
    val client = SourceConfig.clientConfig(view, () => arnRegion.orElse(defaultRegion()), arnRegion)
    val (host, port) = producerEndpoint(client.endpointUrl, EndpointUrl.fullKey)
    SinkConfig(
      streamName = view.get(StreamName).orElse(arn.map(_.streamName)).get,
      client = client,
      producer = ProducerSettings(
        region = client.region,
        endpointHost = host,
        endpointPort = port,
        stsEndpoint = view.get(SinkStsEndpointUrl).map(producerEndpoint(_, SinkStsEndpointUrl.fullKey)),
        verifyCertificate = view.getOrDefault(SinkVerifyCertificate),
        recordMaxBufferedTimeMs = view.getOrDefault(SinkRecordMaxBufferedTimeMs),
        maxConnections = view.getOrDefault(SinkMaxConnections),
        aggregationEnabled = view.getOrDefault(SinkAggregationEnabled),
        aggregationMaxCount = view.getOrDefault(SinkAggregationMaxCount),
        aggregationMaxSize = view.getOrDefault(SinkAggregationMaxSize),
        recordTtlMs = view.getOrDefault(SinkRecordTtlMs),
        requestTimeoutMs = view.getOrDefault(SinkRequestTimeoutMs),
        rateLimit = view.getOrDefault(SinkRateLimit),
        metricsLevel = view.getOrDefault(SinkMetricsLevel),
        threadingModel = view.getOrDefault(SinkThreadingModel),
        proxy = client.network.proxy,
        producer = view.getOrDefault(SinkProducer)
      ),
      flushWaitTimeMs = view.getOrDefault(SinkFlushWaitTimeMs),
      maxOutstandingRecords = view.getOrDefault(SinkMaxOutstandingRecords),
      streamArn = arn.map(_.arn)
    )
  }

  /**
   * Host and port the KPL connects to (HTTPS only: the rule `sink-endpoint-https` and the pattern of
   * `sink.stsEndpointUrl` refuse other schemes). A URL without a host is refused here, by Java's URI parser.
   */
  private[config] def producerEndpoint(endpointUrl: String, option: String): (String, Long) = {
    val uri = Try(new URI(endpointUrl)).toOption
      .filter(u => u.getHost != null)
      .getOrElse(throw KinesisErrors.expectedValue(option, endpointUrl, "an https:// URL with a host"))
    (uri.getHost, if (uri.getPort > 0) uri.getPort.toLong else 443L)
  }
}

/**
 * `kinesis.sink.producer`: the Kinesis Producer Library and its native process ([[io.sparkkinesis.sink.KplProducer]])
 * or PutRecords from the JVM ([[io.sparkkinesis.sink.JvmProducer]]).
 */
private[sparkkinesis] sealed abstract class ProducerKind(val name: String) extends Choice

private[sparkkinesis] object ProducerKind {
  case object Kpl extends ProducerKind("KPL")
  case object Java extends ProducerKind("JAVA")
  val all: Seq[ProducerKind] = Seq(Kpl, Java)
}

/** `kinesis.sink.metricsLevel`: the KPL's metrics. */
private[sparkkinesis] sealed abstract class MetricsLevel(val name: String) extends Choice

private[sparkkinesis] object MetricsLevel {
  case object NoMetrics extends MetricsLevel("none")
  case object Summary extends MetricsLevel("summary")
  case object Detailed extends MetricsLevel("detailed")
  val all: Seq[MetricsLevel] = Seq(NoMetrics, Summary, Detailed)
}

/** `kinesis.sink.threadingModel`: how the KPL's native process sends requests. */
private[sparkkinesis] sealed abstract class ThreadingModel(val name: String) extends Choice

private[sparkkinesis] object ThreadingModel {
  case object PerRequest extends ThreadingModel("PER_REQUEST")
  case object Pooled extends ThreadingModel("POOLED")
  val all: Seq[ThreadingModel] = Seq(PerRequest, Pooled)
}
