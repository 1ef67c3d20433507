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
 * (the policy the awslabs Kinesis connector documents for writers need not grant it), so AccessDenied logs a warning
 * once per stream and the write goes on; other errors (an unreachable endpoint, ...) the writes themselves report.
 */
object TargetStreamCheck {
  private val log = LoggerFactory.getLogger(getClass)
  private val warnedNoPermission = ConcurrentHashMap.newKeySet[(String, String, String)]()

  def verify(config: SinkConfig): Unit = {
    val client = new SdkKinesisClient(config.client, trustAllCertificates = !config.producer.verifyCertificate)
    try verify(config, client)
    finally client.close()
  }

  private[sink] def verify(config: SinkConfig, client: StreamMetadataClient): Unit = {
    val where = s"stream ${config.streamName} in region ${config.client.region} at ${config.client.endpointUrl}"
    try client.describeStream(config.streamName)
    catch {
      case e: ShardNotFound =>
        throw KinesisErrors.streamNotFound(
          config.streamName,
          config.client.region,
          config.client.endpointUrl,
          "DescribeStreamSummary",
          e
        )
      case e: AwsServiceException if isAccessDenied(e) =>
        val key = (config.streamName, config.client.region, config.client.endpointUrl)
        if (warnedNoPermission.add(key))
          log.warn(
            s"Could not check that $where exists: DescribeStreamSummary is not allowed for these credentials " +
              s"(${e.awsErrorDetails().errorCode()}). Writing anyway; if the stream is missing, rows fail after " +
              "kinesis.sink.recordTtl."
          )
      case NonFatal(e) =>
        log.warn(s"Could not check that $where exists (${e.getClass.getSimpleName}: ${e.getMessage}); writing anyway")
    }
  }

  private def isAccessDenied(e: AwsServiceException): Boolean =
    e.statusCode() == 403 || Option(e.awsErrorDetails()).exists { d =>
      val code = Option(d.errorCode()).getOrElse("")
      code == "AccessDeniedException" || code == "AccessDenied" || code == "UnauthorizedOperation"
    }
}
