package io.sparkkinesis.client

import java.time.ZonedDateTime
import java.time.format.{DateTimeFormatter, DateTimeParseException}

/** `serviceTimeMillis`: when Kinesis answered, by the `Date` of its answer (whole seconds), when it had one. */
private[sparkkinesis] final case class StreamSummary(
    streamName: String,
    streamArn: String,
    status: String,
    retentionHours: Int,
    serviceTimeMillis: Option[Long] = None,
    recordDistribution: Option[String] = None,
    // StreamCreationTimestamp: with the ARN, tells a stream from one deleted and re-created under its name.
    createdAt: Option[java.time.Instant] = None,
    // MaxRecordSizeInKiB: the largest record (data and partition key) the stream takes; absent means 1,024.
    maxRecordSizeKiB: Option[Int] = None
) {

  /**
   * True when the stream's `RecordDistributionStrategy` is `AUTO` (service-managed record distribution): Kinesis
   * places each record itself, ignoring `PartitionKey` and `ExplicitHashKey`, and a record may have no partition key.
   * False for `USER_PARTITION_KEY` and for an answer without the field (a service or emulator that predates it).
   */
  def serviceManagedDistribution: Boolean = recordDistribution.contains(StreamSummary.AutoDistribution)

  /** The largest record the stream takes, in bytes: its MaxRecordSizeInKiB, or Kinesis' default of 1 MiB. */
  def maxRecordBytes: Long = maxRecordSizeKiB.fold(StreamSummary.DefaultMaxRecordBytes)(_.toLong * 1024L)
}

private[sparkkinesis] object StreamSummary {

  /** The `RecordDistributionStrategy` of a stream whose records Kinesis places itself. */
  val AutoDistribution = "AUTO"

  /** The record size limit of a stream created without MaxRecordSizeInKiB: 1 MiB of data and partition key. */
  val DefaultMaxRecordBytes: Long = 1024L * 1024L

  /** An HTTP `Date` header (RFC 1123) in epoch milliseconds; None when it does not parse. */
  def httpDateMillis(header: String): Option[Long] =
    try Some(ZonedDateTime.parse(header.trim, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant.toEpochMilli)
    catch { case _: DateTimeParseException => None }
}
