package io.sparkkinesis.sink

import java.util.concurrent.ConcurrentHashMap

import scala.util.control.NonFatal

import io.sparkkinesis.client.{SdkKinesisClient, ShardNotFound, StreamMetadataClient}
import io.sparkkinesis.config.SinkConfig
import io.sparkkinesis.errors.KinesisErrors
import org.slf4j.LoggerFactory
import software.amazon.awssdk.awscore.exception.AwsServiceException

/**
 * The driver's one look at the target stream when a write starts (DescribeStreamSummary), so that a missing stream
 * fails the write at once, naming the stream, the region and the endpoint, instead of each row failing after the
 * KPL's record TTL.
 *
 * Anything else does not fail the write. In particular a writer's IAM policy may lack `kinesis:DescribeStreamSummary`
 * (the awslabs connector's documented writer policy does not grant it; see docs/iam.md), so AccessDenied logs a warning
 * once per stream and the write goes on; other errors (an unreachable endpoint, ...) the writes themselves report.
 */
object TargetStreamCheck {
  private val log = LoggerFactory.getLogger(getClass)
  private val warnedNotAllowed = ConcurrentHashMap.newKeySet[(String, String, String)]()

  /** What DescribeStreamSummary said of the stream. */
  sealed trait Finding
  case object Exists extends Finding
  final case class Missing(cause: Throwable) extends Finding
  final case class NotAllowed(errorCode: String) extends Finding
  final case class Unknown(error: Throwable) extends Finding

  /** Fails with KINESIS_STREAM_NOT_FOUND when the sink's stream does not exist; logs, and goes on, when unsure. */
  def verify(config: SinkConfig): Unit = {
    val where =
      s"stream ${config.streamName} in region ${config.client.region} at ${config.client.endpointUrl}"
    look(config) match {
      case Exists => ()
      case Missing(cause) =>
        throw KinesisErrors.streamNotFound(
          config.streamName,
          config.client.region,
          config.client.endpointUrl,
          "DescribeStreamSummary",
          cause
        )
      case NotAllowed(code) =>
        if (warnedNotAllowed.add((config.streamName, config.client.region, config.client.endpointUrl)))
          log.warn(
            s"Could not check that $where exists: these credentials may not call DescribeStreamSummary ($code). " +
              "Writing anyway; if the stream is missing, rows fail after kinesis.sink.recordTtl."
          )
      case Unknown(e) =>
        log.warn(
          s"Could not check that $where exists (${e.getClass.getSimpleName}: ${e.getMessage}); writing anyway"
        )
    }
  }

  /** One DescribeStreamSummary with the sink's endpoint, region, credentials and certificate setting. */
  private[sink] def look(config: SinkConfig): Finding = {
    val client =
      new SdkKinesisClient(config.client, trustAllCertificates = !config.producer.verifyCertificate)
    try look(config.streamName, client)
    finally client.close()
  }

  private def look(stream: String, client: StreamMetadataClient): Finding =
    try { client.describeStream(stream); Exists }
    catch {
      case e: ShardNotFound => Missing(e)
      case e: AwsServiceException if isAccessDenied(e) => NotAllowed(e.awsErrorDetails().errorCode())
      case NonFatal(e) => Unknown(e)
    }

  private def isAccessDenied(e: AwsServiceException): Boolean =
    Option(e.awsErrorDetails()).flatMap(d => Option(d.errorCode())).exists { code =>
      code == "AccessDeniedException" || code == "AccessDenied"
    }
}
