package io.sparkkinesis.client

import io.sparkkinesis.reader.{ChildShard, HashKeyRange}

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

  /** Every shard Kinesis still lists, open and closed. */
  def listShards(streamName: String): Seq[ShardDescription]
}

final case class StreamSummary(streamName: String, streamArn: String, status: String, retentionHours: Int)
