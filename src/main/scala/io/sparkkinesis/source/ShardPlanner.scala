package io.sparkkinesis.source

import io.sparkkinesis.client.{HashKeyRange, ShardDescription}
import io.sparkkinesis.config.StartingPositionSpec
import io.sparkkinesis.errors.KinesisErrors
import io.sparkkinesis.reader.{ShardEnd, ShardPosition}

/**
 * Pure planning of which shards each batch reads and from where, from the shard listing and the previous batch's
 * recorded ends. Lineage rule: a shard is read only once every tracked parent is finished, and never in the batch that
 * finishes a parent, so records of one partition key reach Spark in order across splits and merges.
 */
private[sparkkinesis] object ShardPlanner {

  /** The offset before any batch: every shard the query starts with, positioned per the starting position. */
  def initial(
      streamName: String,
      listing: Seq[ShardDescription],
      start: StartingPositionSpec,
      latestAtMillis: Long,
      runId: String
  ): KinesisOffset = {
    val starts = StartPositions.resolve(streamName, listing, start, latestAtMillis)
    val entries = listing.map { s =>
      val position = starts.positions(s.shardId)
      ShardKey(streamName, s.shardId) -> ShardEntry(
        position.getOrElse(ShardPosition.TrimHorizon),
        if (position.isEmpty) ShardStatus.Finished else ShardStatus.Waiting,
        s.parents,
        s.hashKeyRange
      )
    }.toMap
    KinesisOffset(-1L, runId, withStatuses(entries))
  }

  /** `offset` with each shard it reads that `keep` refuses left waiting where it is, for a later batch. */
  def readOnly(offset: KinesisOffset)(keep: ShardKey => Boolean): KinesisOffset =
    offset.copy(shards = offset.shards.map { case (key, e) =>
      key -> (if (e.status == ShardStatus.Read && !keep(key)) e.copy(status = ShardStatus.Waiting) else e)
    })

  /**
   * The offset of the batch after `previous`, whose tasks recorded `ends` (none for the initial offset), from the
   * latest listings; children announced at a shard's end are added even before a listing shows them.
   */
  def next(
      previous: KinesisOffset,
      ends: Map[ShardKey, ShardEnd],
      listings: Map[String, Seq[ShardDescription]]
  ): KinesisOffset = {
    val advanced = previous.shards.map { case (key, entry) =>
      if (entry.status != ShardStatus.Read || previous.batchId < 0) key -> entry
      else {
        val end = ends.getOrElse(
          key,
          throw KinesisErrors.recordedEndMissing(s"$key", previous.batchId, "planning the next batch")
        )
        val status = if (end.finished) ShardStatus.Finished else ShardStatus.Waiting
        key -> entry.copy(position = end.end, status = status)
      }
    }
    val announced = for {
      (key, end) <- ends.toSeq if previous.shards.get(key).exists(_.status == ShardStatus.Read)
      child <- end.childShards
    } yield ShardKey(key.streamName, child.shardId) -> unread(child.parentShardIds, child.hashKeyRange)
    val listed =
      for ((stream, shards) <- listings.toSeq; s <- shards)
        yield ShardKey(stream, s.shardId) -> unread(s.parents, s.hashKeyRange)
    val listedKeys = listed.map(_._1).toSet
    // A parent of a tracked shard is done as far as the query goes (children are read only after their parents, and
    // a parent absent at the start predates it). Should a listing leave out a finished parent, which is then
    // forgotten below, and a later one list it again, it is not new: it must not be read again from TRIM_HORIZON.
    val parentsOfTracked = advanced.toSeq.flatMap { case (key, entry) =>
      entry.parents.map(ShardKey(key.streamName, _))
    }.toSet
    val discovered = (announced ++ listed).filterNot { case (key, _) =>
      advanced.contains(key) || parentsOfTracked.contains(key)
    }.toMap
    // A finished shard that Kinesis no longer lists has expired: forget it. Unfinished shards stay even when not
    // listed; their reader reports the loss per kinesis.failOnDataLoss.
    val kept = advanced.filter { case (key, entry) =>
      entry.status != ShardStatus.Finished || listedKeys.contains(key) || !listings.contains(key.streamName)
    }
    KinesisOffset(previous.batchId + 1, previous.runId, withStatuses(kept ++ discovered), previous.identities)
  }

  private def unread(parents: Seq[String], range: HashKeyRange) =
    ShardEntry(ShardPosition.TrimHorizon, ShardStatus.Waiting, parents, range)

  /** Marks every unfinished shard whose tracked parents are all finished as read, the others as waiting. */
  private def withStatuses(entries: Map[ShardKey, ShardEntry]): Map[ShardKey, ShardEntry] =
    entries.map { case (key, entry) =>
      if (entry.status == ShardStatus.Finished) key -> entry
      else {
        val parentsDone = entry.parents.forall { parent =>
          entries.get(ShardKey(key.streamName, parent)).forall(_.status == ShardStatus.Finished)
        }
        key -> entry.copy(status = if (parentsDone) ShardStatus.Read else ShardStatus.Waiting)
      }
    }

  /** True when `next` changes nothing but positions: no shard appeared, finished, or became readable. */
  def sameShape(a: KinesisOffset, b: KinesisOffset): Boolean =
    a.shards.keySet == b.shards.keySet && a.shards.forall { case (k, e) => b.shards(k).status == e.status }
}
