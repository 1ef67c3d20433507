package io.sparkkinesis.reader

import io.sparkkinesis.client.{ChildShard, IteratorStart}

/**
 * A place in one shard, between records; reading "from" a position yields the records after it. `TrimHorizon`:
 * before the oldest record retained. `AtTimestamp`: before the first record that arrived at or after the instant.
 * `At(seq)`: before record `seq` (a start given by the user). `After(seq, subIndex)`: after record `seq`, or, when it
 * is a KPL aggregate consumed in part, after its sub-record `subIndex` (-1: the whole record was consumed).
 */
private[sparkkinesis] sealed trait ShardPosition extends Serializable

private[sparkkinesis] object ShardPosition {
  case object TrimHorizon extends ShardPosition
  final case class AtTimestamp(epochMillis: Long) extends ShardPosition
  final case class At(sequenceNumber: String) extends ShardPosition

  final case class After(sequenceNumber: String, subIndex: Int) extends ShardPosition {
    def wholeRecord: Boolean = subIndex < 0
  }

  val WholeRecord: Int = -1

  /**
   * Where a shard iterator or a subscription starts to read the records after `position`. Inside an aggregate: AT
   * its record (the reader skips the sub-records already consumed).
   */
  def iteratorStart(position: ShardPosition): IteratorStart = position match {
    case TrimHorizon => IteratorStart.TrimHorizon
    case AtTimestamp(ms) => IteratorStart.AtTimestamp(ms)
    case At(seq) => IteratorStart.AtSequence(seq)
    case a: After if a.wholeRecord => IteratorStart.AfterSequence(a.sequenceNumber)
    case a: After => IteratorStart.AtSequence(a.sequenceNumber)
  }

  /** Orders two `After` positions; sequence numbers are decimal integers of up to 128 bits. */
  def compareAfter(a: After, b: After): Int = {
    val bySeq = BigInt(a.sequenceNumber).compare(BigInt(b.sequenceNumber))
    if (bySeq != 0) bySeq
    else if (a.subIndex == b.subIndex) 0
    else if (a.wholeRecord) 1
    else if (b.wholeRecord) -1
    else Integer.compare(a.subIndex, b.subIndex)
  }
}

/**
 * What one task did to one shard in one batch. Recorded in the metadata store so a replay of the batch reads exactly
 * the same records, and so the driver can plan the next batch. `end`: after the last record the batch consumed (its
 * start when it consumed none). `finished`: the shard is closed and was read to its end, or it is gone and its loss
 * was accepted. `childShards`: those announced at the end of a closed shard. `millisBehindLatest`: the lag the last
 * read reported. `deliveredOutsideRange`: whether the batch delivered the KPL sub-records whose hash key lies outside
 * the shard's range (service-managed record distribution) or dropped them; a replay decides as the recorded run did.
 */
private[sparkkinesis] final case class ShardEnd(
    end: ShardPosition,
    finished: Boolean,
    childShards: Seq[ChildShard],
    recordCount: Long,
    millisBehindLatest: Option[Long],
    reachedTip: Boolean,
    lost: Boolean,
    deliveredOutsideRange: Boolean = false
)
