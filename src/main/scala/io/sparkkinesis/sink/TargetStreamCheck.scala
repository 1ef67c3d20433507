package io.sparkkinesis.sink

import java.util.concurrent.ConcurrentHashMap

import scala.util.control.NonFatal

import io.sparkkinesis.client._
import io.sparkkinesis.config.SinkConfig
import io.sparkkinesis.errors.KinesisErrors
import org.slf4j.LoggerFactory

/** How the sink's stream places records, as the driver learnt it when a write (or a streaming batch) started. */
private[sparkkinesis] sealed trait RecordDistribution

private[sparkkinesis] object RecordDistribution {

  /**
   * `RecordDistributionStrategy` AUTO: Kinesis places each record itself, ignoring its keys. The sink never
   * aggregates (an aggregate would land on a shard the KPL did not predict); rows may have no partition key.
   */
  case object ServiceManaged extends RecordDistribution

  /** `USER_PARTITION_KEY` (or an answer without the field): records go where their key hashes. */
  case object ByPartitionKey extends RecordDistribution

  /** The driver could not ask (DescribeStreamSummary refused or failed): the sink writes as to ByPartitionKey. */
  case object Unknown extends RecordDistribution

  def of(summary: StreamSummary): RecordDistribution =
    if (summary.serviceManagedDistribution) ServiceManaged else ByPartitionKey
}

/**
 * What the driver learnt of the sink's stream when a write (or a streaming batch) started: how it places records,
 * and the largest record it takes in bytes (None when DescribeStreamSummary could not be called).
 */
private[sink] final case class TargetStream(distribution: RecordDistribution, maxRecordBytes: Option[Long])

/**
 * The driver's one look at the target stream (DescribeStreamSummary) when a write starts, and again when each
 * streaming batch starts: a missing stream fails the write at once, naming the stream, the region and the endpoint,
 * instead of each row failing after the KPL's record TTL; and the sink learns the stream's record distribution and
 * writes accordingly ([[applyTo]]). Nothing else fails the write: AccessDenied (the awslabs connector's documented
 * writer policy does not grant `kinesis:DescribeStreamSummary`) logs a warning once per stream and the write goes on
 * as to a stream placed by partition key; other errors the writes themselves report.
 */
private[sparkkinesis] object TargetStreamCheck {
  private val log = LoggerFactory.getLogger(getClass)
  private val warnedNotAllowed = ConcurrentHashMap.newKeySet[(String, String, String)]()
  // The decision last logged per stream: logged once, and again when the stream is switched.
  private val logged = new ConcurrentHashMap[(String, String, String), RecordDistribution]()

  /** What DescribeStreamSummary said of the stream. */
  sealed trait Finding
  final case class Exists(summary: StreamSummary) extends Finding
  final case class Missing(cause: Throwable) extends Finding
  final case class NotAllowed(errorCode: String) extends Finding
  final case class Unknown(error: Throwable) extends Finding

  /**
   * Fails with KINESIS_STREAM_NOT_FOUND when the sink's stream does not exist; logs, and goes on, when unsure.
   * Returns how the stream places records, and logs the sink's decision once per stream (and when it changes).
   */
  def verify(config: SinkConfig): TargetStream = {
    val where =
      s"stream ${config.streamName} in region ${config.client.region} at ${config.client.endpointUrl}"
    val finding = look(config)
    val distribution = finding match {
      case Exists(summary) => RecordDistribution.of(summary)
      case Missing(cause) =>
        throw KinesisErrors.streamNotFound(
          config.streamName,
          config.client.region,
          config.client.endpointUrl,
          "DescribeStreamSummary",
          cause
        )
      case NotAllowed(code) =>
        if (warnedNotAllowed.add(streamKey(config)))
          log.warn(
            s"Could not check that $where exists, nor read its record distribution strategy: these credentials " +
              s"may not call DescribeStreamSummary ($code). Writing anyway, as to a stream that places records by " +
              "partition key: every row needs a partition key, and rows are aggregated when " +
              "kinesis.sink.aggregationEnabled is true. If the stream has service-managed record distribution " +
              "(RecordDistributionStrategy AUTO), set kinesis.sink.aggregationEnabled=false (aggregates are not " +
              "supported there), or grant kinesis:DescribeStreamSummary so that the sink detects it. If the stream " +
              "is missing, rows fail after kinesis.sink.recordTtl."
          )
        RecordDistribution.Unknown
      case Unknown(e) =>
        log.warn(
          s"Could not check that $where exists (${e.getClass.getSimpleName}: ${e.getMessage}); writing anyway, as " +
            "to a stream that places records by partition key"
        )
        RecordDistribution.Unknown
    }
    logDecision(config, distribution)
    TargetStream(distribution, Some(finding).collect { case Exists(summary) => summary.maxRecordBytes })
  }

  /** The largest user record the KPL takes (KinesisProducerConfiguration.setMaxUserRecordSize). */
  val KplMaxUserRecordBytes: Long = 10L * 1024 * 1024

  /**
   * The write's settings for the stream's record size limit: the rows' check and the KPL's maxUserRecordSize use it.
   * When the driver could not read it, Kinesis' default of 1 MiB: larger rows then fail, naming the permission.
   */
  def withRecordLimit(config: SinkConfig, maxRecordBytes: Option[Long]): SinkConfig = {
    val bytes = math.min(maxRecordBytes.getOrElse(StreamSummary.DefaultMaxRecordBytes), KplMaxUserRecordBytes)
    config.copy(
      producer = config.producer.copy(maxRecordBytes = bytes),
      recordLimitKnown = maxRecordBytes.isDefined
    )
  }

  /**
   * The write's settings for a stream that places records as `distribution` says: with service-managed distribution,
   * no aggregation (whatever kinesis.sink.aggregationEnabled says) and the KPL told so up front. Producers are pooled
   * by their settings, so a producer that aggregates is never used for such a stream.
   */
  def applyTo(config: SinkConfig, distribution: RecordDistribution): SinkConfig = distribution match {
    case RecordDistribution.ServiceManaged =>
      config.copy(producer =
        config.producer.copy(aggregationEnabled = false, serviceManagedDistribution = true)
      )
    case _ => config.copy(producer = config.producer.copy(serviceManagedDistribution = false))
  }

  private def streamKey(config: SinkConfig) =
    (config.streamName, config.client.region, config.client.endpointUrl)

  private def logDecision(config: SinkConfig, distribution: RecordDistribution): Unit = {
    val previous = logged.put(streamKey(config), distribution)
    if (previous != distribution && distribution != RecordDistribution.Unknown) {
      val aggregation = config.producer.aggregationEnabled
      val message = distribution match {
        case RecordDistribution.ServiceManaged =>
          s"Stream ${config.streamName} has service-managed record distribution (RecordDistributionStrategy AUTO): " +
            "the sink does not aggregate rows" +
            (if (aggregation) " (kinesis.sink.aggregationEnabled=true is ignored for it)" else "") +
            ", and rows without a partition key are written without one"
        case _ =>
          s"Stream ${config.streamName} places records by partition key (RecordDistributionStrategy " +
            s"USER_PARTITION_KEY): the sink ${if (aggregation) "aggregates" else "does not aggregate"} rows " +
            "(kinesis.sink.aggregationEnabled), and every row needs a partition key"
      }
      log.info(message + (if (previous != null) " (the stream was switched since the last write)" else ""))
    }
  }

  /** One DescribeStreamSummary with the sink's endpoint, region, credentials and certificate setting. */
  private[sink] def look(config: SinkConfig): Finding = {
    val client =
      new SdkKinesisClient(config.client, trustAllCertificates = !config.producer.verifyCertificate)
    try {
      SinkStreamArn.check(config, client)
      look(config.streamArn.getOrElse(config.streamName), client)
    } finally client.close()
  }

  private def look(stream: String, client: StreamMetadataClient): Finding =
    try Exists(client.describeStream(stream))
    catch {
      case e: ShardNotFound => Missing(e)
      case AccessDenied(code) => NotAllowed(code)
      // The proxy refused its credentials (ProxyErrors): the KPL, behind the same proxy, could not write either.
      case e: ProxyRefused => throw e
      case NonFatal(e) => Unknown(e)
    }
}
