package io.sparkkinesis.client

import java.time.Instant

import scala.jdk.CollectionConverters._

import software.amazon.awssdk.services.kinesis.model.{
  ChildShard => SdkChildShard,
  HashKeyRange => SdkHashKeyRange,
  Record => SdkRecord,
  Shard => SdkShard,
  ShardIteratorType
}

/**
 * The one translation between the SDK's Kinesis model and the connector's, for ListShards, GetRecords and
 * SubscribeToShard.
 */
private[client] object SdkModel {

  /** Where an iterator or a subscription starts, as the SDK's three fields: type, sequence number, timestamp. */
  final case class Start(kind: ShardIteratorType, sequenceNumber: Option[String], timestamp: Option[Instant])

  def start(start: IteratorStart): Start = start match {
    case IteratorStart.TrimHorizon => Start(ShardIteratorType.TRIM_HORIZON, None, None)
    case IteratorStart.Latest => Start(ShardIteratorType.LATEST, None, None)
    case IteratorStart.AtTimestamp(ms) =>
      Start(ShardIteratorType.AT_TIMESTAMP, None, Some(Instant.ofEpochMilli(ms)))
    case IteratorStart.AtSequence(seq) => Start(ShardIteratorType.AT_SEQUENCE_NUMBER, Some(seq), None)
    case IteratorStart.AfterSequence(seq) => Start(ShardIteratorType.AFTER_SEQUENCE_NUMBER, Some(seq), None)
  }

  def records(records: java.util.List[SdkRecord]): Vector[KinesisRecord] =
    records.asScala.iterator.map { r =>
      val arrival = Option(r.approximateArrivalTimestamp()).map(_.toEpochMilli).getOrElse(0L)
      KinesisRecord(r.data().asByteArrayUnsafe(), r.partitionKey(), r.sequenceNumber(), arrival)
    }.toVector

  /** `present`: the response's `hasChildShards` (the SDK's lists are never null, but may be absent). */
  def childShards(present: Boolean, children: java.util.List[SdkChildShard]): List[ChildShard] =
    if (present) children.asScala.iterator.map(childShard).toList else Nil

  def hashKeyRange(r: SdkHashKeyRange): HashKeyRange =
    HashKeyRange(BigInt(r.startingHashKey()), BigInt(r.endingHashKey()))

  def shard(s: SdkShard): ShardDescription =
    ShardDescription(
      s.shardId(),
      Option(s.parentShardId()),
      Option(s.adjacentParentShardId()),
      hashKeyRange(s.hashKeyRange()),
      Option(s.sequenceNumberRange()).flatMap(r => Option(r.endingSequenceNumber()))
    )

  private def childShard(c: SdkChildShard): ChildShard =
    ChildShard(c.shardId(), c.parentShards().asScala.toList, hashKeyRange(c.hashKeyRange()))
}
