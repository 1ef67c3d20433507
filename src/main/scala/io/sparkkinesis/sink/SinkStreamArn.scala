package io.sparkkinesis.sink

import scala.util.control.NonFatal

import io.sparkkinesis.client.{ShardNotFound, StreamMetadataClient}
import io.sparkkinesis.config.{SinkConfig, StreamArns}
import io.sparkkinesis.errors.KinesisErrors

/**
 * A write given `kinesis.streamArn`. The driver's check of the stream asks for it by ARN; the KPL (1.1.1), however,
 * addresses a stream by name only, in the account of its credentials (it builds the ARN of its PutRecords from
 * DescribeStreamSummary of that name). So a write may name its stream by ARN when that ARN is the stream the KPL will
 * find by name, and fails at once, before any row, when it is another account's stream (writing through the stream's
 * resource policy): the KPL would write to a same-named stream of the caller's account, or to none.
 */
private[sparkkinesis] object SinkStreamArn {

  /** Fails with KINESIS_UNSUPPORTED_OPTION when the ARN is not the stream the KPL finds by name; else returns. */
  def check(config: SinkConfig, client: StreamMetadataClient): Unit = config.streamArn.foreach { arn =>
    val found =
      try Some(client.describeStream(config.streamName).streamArn)
      catch {
        case _: ShardNotFound => None
        // Denied or unreachable: the driver's check of the stream by ARN reports it; nothing to compare with.
        case NonFatal(_) => return
      }
    if (!found.contains(arn)) {
      val account = StreamArns.parse("kinesis.streamArn", arn).head.account
      val there = found.fold(s"has no stream named ${config.streamName}")(other =>
        s"has its own ${config.streamName}: $other"
      )
      throw KinesisErrors.crossAccountSink(arn, account, there)
    }
  }
}
