package io.sparkkinesis.config

import java.time.Instant

import com.fasterxml.jackson.databind.node.ObjectNode
import io.sparkkinesis.errors.KinesisErrors

/**
 * Which Kinesis stream a name stood for, as DescribeStreamSummary gives it: its ARN, which tells apart streams of one
 * name in other accounts or regions, and its creation time (`StreamCreationTimestamp`), which tells a stream from one
 * deleted and created again under its name (same ARN and shard ids, but the old sequence numbers mean nothing in it).
 * Either part may be unknown (a positions document may give one; a service may not report the creation time); two
 * identities differ only in a part both know.
 */
private[sparkkinesis] final case class StreamIdentity(arn: Option[String], createdAt: Option[Instant]) {

  def isEmpty: Boolean = arn.isEmpty && createdAt.isEmpty

  /** True when both know a part and it differs: not the same stream. */
  def differsFrom(other: StreamIdentity): Boolean =
    arn.zip(other.arn).exists { case (a, b) => a != b } ||
      createdAt.zip(other.createdAt).exists { case (a, b) => a != b }

  /** The known parts as fields of `node` (offsets, positions documents). */
  def writeTo(node: ObjectNode): ObjectNode = {
    arn.foreach(node.put(StreamIdentity.ArnField, _))
    createdAt.foreach(t => node.put(StreamIdentity.CreatedField, t.toString))
    node
  }

  /** "created 2026-11-26T17:13:22.126Z, ARN arn:aws:kinesis:..." (the parts known). */
  def describe: String = {
    val parts = createdAt.map(t => s"created $t").toSeq ++ arn.map(a => s"ARN $a")
    if (parts.isEmpty) "identity unknown" else parts.mkString(", ")
  }
}

private[sparkkinesis] object StreamIdentity {

  /** The names of the identity's fields in offsets and in positions documents. */
  val ArnField = "streamArn"
  val CreatedField = "streamCreationTimestamp"

  /** The identity DescribeStreamSummary reported (its `StreamARN`, and `StreamCreationTimestamp` when given). */
  def of(streamArn: String, createdAt: Option[Instant]): StreamIdentity =
    StreamIdentity(Option(streamArn), createdAt)

  /** An ISO-8601 instant with an offset (`2026-11-26T17:13:22.126Z`), as the documents write it. */
  def parseInstant(text: String): Option[Instant] = PositionText.parseInstant(text)

  /**
   * Pure decision for one stream: `recorded` is the identity a checkpoint (or a document) holds for it, `current`
   * what Kinesis says now. False for the same stream (or nothing to compare with). A re-created stream fails with
   * [[KinesisErrors.streamRecreated]] when `failOnDataLoss` is true (the caller passes true unless the option was set
   * to false explicitly); otherwise `warn` gets a message naming both identities and the result is true: the new
   * stream is to be read from TRIM_HORIZON. For the messages: `recordedIn` holds the recorded identity ("the
   * checkpoint"), `fixes` are the ways out besides `kinesis.failOnDataLoss=false`, `instead` what the caller does then.
   */
  def restarts(
      stream: String,
      recorded: Option[StreamIdentity],
      current: StreamIdentity,
      failOnDataLoss: Boolean,
      recordedIn: String,
      fixes: String,
      warn: String => Unit,
      instead: String = "Reading the new stream from TRIM_HORIZON"
  ): Boolean = recorded match {
    case Some(old) if old.differsFrom(current) =>
      val error = KinesisErrors.streamRecreated(stream, recordedIn, old.describe, current.describe, fixes)
      if (failOnDataLoss) throw error
      warn(s"$instead, as kinesis.failOnDataLoss is set to false: ${error.getMessage}")
      true
    case _ => false
  }
}
