package io.sparkkinesis.client

import java.time.ZonedDateTime
import java.time.format.{DateTimeFormatter, DateTimeParseException}

/** A shard's hash-key range, inclusive at both ends. */
final case class HashKeyRange(start: BigInt, end: BigInt) {
  def contains(key: BigInt): Boolean = key >= start && key <= end
}

/** A child shard announced by Kinesis at the end of a closed shard. */
final case class ChildShard(shardId: String, parentShardIds: Seq[String], hashKeyRange: HashKeyRange)

/** One record as Kinesis returned it (possibly a KPL aggregate). */
final case class KinesisRecord(
    data: Array[Byte],
    partitionKey: String,
    sequenceNumber: String,
    approximateArrivalMillis: Long
)

/** The answer to one GetRecords call. `nextIterator` is None when the shard is closed and fully read. */
final case class RecordsResponse(
    records: Seq[KinesisRecord],
    nextIterator: Option[String],
    millisBehindLatest: Option[Long],
    childShards: Seq[ChildShard]
)

/** One entry of ListShards. `endingSequenceNumber` is set once the shard is closed. */
final case class ShardDescription(
    shardId: String,
    parentShardId: Option[String],
    adjacentParentShardId: Option[String],
    hashKeyRange: HashKeyRange,
    endingSequenceNumber: Option[String]
) {
  def parents: Seq[String] = parentShardId.toSeq ++ adjacentParentShardId.toSeq
  def isClosed: Boolean = endingSequenceNumber.isDefined
}

/** Where a shard iterator starts. */
sealed trait IteratorStart

object IteratorStart {
  case object TrimHorizon extends IteratorStart
  case object Latest extends IteratorStart
  final case class AtTimestamp(epochMillis: Long) extends IteratorStart
  final case class AtSequence(sequenceNumber: String) extends IteratorStart
  final case class AfterSequence(sequenceNumber: String) extends IteratorStart
}

/** Failures the readers react to; anything else propagates as is. */
sealed abstract class KinesisReadException(message: String, cause: Throwable)
    extends RuntimeException(message, cause)
final class ThroughputExceeded(message: String, cause: Throwable) extends KinesisReadException(message, cause)
final class IteratorExpired(message: String, cause: Throwable) extends KinesisReadException(message, cause)
final class ShardNotFound(message: String, cause: Throwable) extends KinesisReadException(message, cause)

/** Executor-side reads of one shard. A `streamName` parameter may also be a stream ARN. */
trait ShardRecordsClient extends AutoCloseable {
  def getShardIterator(streamName: String, shardId: String, start: IteratorStart): String
  def getRecords(iterator: String, limit: Int): RecordsResponse
}

/** Driver-side stream metadata. */
trait StreamMetadataClient extends AutoCloseable {

  /** Fails with a clear message when the stream does not exist. */
  def describeStream(streamName: String): StreamSummary

  /** One ListShards request: the first page of the stream's shards, or the page after `nextToken`. */
  def listShardsPage(streamName: String, nextToken: Option[String]): ShardPage

  /** Every shard Kinesis still lists, open and closed (all pages). */
  final def listShards(streamName: String): Seq[ShardDescription] = {
    val shards = Vector.newBuilder[ShardDescription]
    var page = listShardsPage(streamName, None)
    shards ++= page.shards
    while (page.nextToken.isDefined) {
      page = listShardsPage(streamName, page.nextToken)
      shards ++= page.shards
    }
    shards.result()
  }
}

/** One page of ListShards; `nextToken` is set when more pages follow. */
final case class ShardPage(shards: Seq[ShardDescription], nextToken: Option[String])

/**
 * @param serviceTimeMillis
 *   when Kinesis answered, by its own clock: the `Date` of the answer (whole seconds, rounded down), when it had one
 */
final case class StreamSummary(
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

object StreamSummary {

  /** The `RecordDistributionStrategy` of a stream whose records Kinesis places itself. */
  val AutoDistribution = "AUTO"

  /** The record size limit of a stream created without MaxRecordSizeInKiB: 1 MiB of data and partition key. */
  val DefaultMaxRecordBytes: Long = 1024L * 1024L

  /** An HTTP `Date` header (RFC 1123) in epoch milliseconds; None when it does not parse. */
  def httpDateMillis(header: String): Option[Long] =
    try Some(ZonedDateTime.parse(header.trim, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant.toEpochMilli)
    catch { case _: DateTimeParseException => None }
}

/**
 * One event pushed by an enhanced fan-out subscription. `continuationSequenceNumber` is where a renewed
 * subscription continues (AFTER it); it is absent in the last event of a closed shard, which lists the children.
 */
final case class SubscriptionEvent(
    records: Seq[KinesisRecord],
    continuationSequenceNumber: Option[String],
    millisBehindLatest: Option[Long],
    childShards: Seq[ChildShard]
) {
  def endsShard: Boolean = continuationSequenceNumber.isEmpty || childShards.nonEmpty
}

/** Flow control of one live subscription: events arrive only as they are requested. */
trait SubscriptionHandle {
  def request(events: Long): Unit
  def cancel(): Unit
}

/**
 * Receives one subscription's callbacks, on client threads. After `onStart`, events arrive in shard order, each one
 * requested through the handle; then at most one of `onEnd` (the service ended the subscription, e.g. after its
 * five minutes) or `onError`.
 */
trait SubscriptionListener {
  def onStart(handle: SubscriptionHandle): Unit
  def onEvent(event: SubscriptionEvent): Unit
  def onEnd(): Unit
  def onError(error: Throwable): Unit
}

/** Executor-side enhanced fan-out reads (SubscribeToShard). No other call is made on this path. */
trait ShardSubscriptionClient {

  /** Starts a subscription; returns at once. The returned function cancels it, whether it has started or not. */
  def subscribe(
      consumerArn: String,
      shardId: String,
      start: IteratorStart,
      listener: SubscriptionListener
  ): () => Unit
}

/** A registered enhanced fan-out consumer of a stream. */
final case class StreamConsumer(name: String, arn: String, status: String)

/** The consumer life cycle calls the driver makes for enhanced fan-out. */
trait StreamConsumerClient {

  /** The consumer of that name on the stream, or None when there is none. */
  def describeConsumer(streamArn: String, consumerName: String): Option[StreamConsumer]

  /**
   * Registers a consumer (status CREATING). Fails with [[ConsumerLimitExceeded]] when Kinesis refuses for now, without
   * retrying: the caller retries a refused registration.
   */
  def registerConsumer(streamArn: String, consumerName: String): StreamConsumer

  /** Deregisters a consumer; a consumer that no longer exists is fine. */
  def deregisterConsumer(streamArn: String, consumerName: String): Unit

  /** Every consumer registered on the stream (all pages). */
  def listConsumers(streamArn: String): Seq[StreamConsumer]
}

/** Kinesis refused a consumer call for now: too many consumers CREATING, or the call rate was passed. */
final class ConsumerLimitExceeded(message: String, cause: Throwable) extends RuntimeException(message, cause)

/** A consumer of that name exists already (a register call lost a race). */
final class ConsumerAlreadyExists(message: String, cause: Throwable) extends RuntimeException(message, cause)
