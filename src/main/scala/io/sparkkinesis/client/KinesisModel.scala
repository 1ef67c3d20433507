package io.sparkkinesis.client

/** A shard's hash-key range, inclusive at both ends. */
private[sparkkinesis] final case class HashKeyRange(start: BigInt, end: BigInt) {
  def contains(key: BigInt): Boolean = key >= start && key <= end
}

/** A child shard announced by Kinesis at the end of a closed shard. */
private[sparkkinesis] final case class ChildShard(
    shardId: String,
    parentShardIds: Seq[String],
    hashKeyRange: HashKeyRange
)

/** One record as Kinesis returned it (possibly a KPL aggregate). */
private[sparkkinesis] final case class KinesisRecord(
    data: Array[Byte],
    partitionKey: String,
    sequenceNumber: String,
    approximateArrivalMillis: Long
)

/** The answer to one GetRecords call. `nextIterator` is None when the shard is closed and fully read. */
private[sparkkinesis] final case class RecordsResponse(
    records: Seq[KinesisRecord],
    nextIterator: Option[String],
    millisBehindLatest: Option[Long],
    childShards: Seq[ChildShard]
)

/**
 * One entry of ListShards. `endingSequenceNumber` is set once the shard is closed; `childListed`: a later listing,
 * which returned only newer shards, showed a child of it, so it is closed too (see ShardListing).
 */
private[sparkkinesis] final case class ShardDescription(
    shardId: String,
    parentShardId: Option[String],
    adjacentParentShardId: Option[String],
    hashKeyRange: HashKeyRange,
    endingSequenceNumber: Option[String],
    childListed: Boolean = false
) {
  def parents: Seq[String] = parentShardId.toSeq ++ adjacentParentShardId.toSeq
  def isClosed: Boolean = endingSequenceNumber.isDefined || childListed
}

/** Where a shard iterator starts. */
private[sparkkinesis] sealed trait IteratorStart

private[sparkkinesis] object IteratorStart {
  case object TrimHorizon extends IteratorStart
  case object Latest extends IteratorStart
  final case class AtTimestamp(epochMillis: Long) extends IteratorStart
  final case class AtSequence(sequenceNumber: String) extends IteratorStart
  final case class AfterSequence(sequenceNumber: String) extends IteratorStart
}
