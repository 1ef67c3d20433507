package io.sparkkinesis.source

import io.sparkkinesis.client.ShardDescription
import io.sparkkinesis.reader.RunBound

/** A shard of a `Trigger.AvailableNow` run: how far the run reads it, and whether it has been read that far. */
final case class RunShard(bound: RunBound, reached: Boolean)

/**
 * Pure planning of a `Trigger.AvailableNow` run. The run reads the shards that exist when it starts (including
 * children of a reshard before the start, after their parents, as always) and no shard created later, each up to
 * its [[RunBound]]; it ends when no shard of the run has anything left to read.
 */
object AvailableNowPlanner {

  /**
   * The run's shards at its start: closed shards are read to their end; open shards are bounded by a LATEST iterator
   * taken now (`latestIterator`), resolved later into the first sequence number put after the start.
   */
  def start(
      listings: Map[String, Seq[ShardDescription]],
      latestIterator: ShardKey => String
  ): Map[ShardKey, RunShard] =
    (for {
      (stream, shards) <- listings.toSeq
      shard <- shards
    } yield {
      val key = ShardKey(stream, shard.shardId)
      key -> RunShard(
        if (shard.isClosed) RunBound.Unbounded else RunBound.Pending(latestIterator(key)),
        false
      )
    }).toMap

  /**
   * Adds the shards an offset tracks that the start listing lacked (e.g. shards no longer listed but not read to
   * their end): they belong to the run, unbounded (their reader reads to the end or reports them lost).
   */
  def withTracked(run: Map[ShardKey, RunShard], offset: KinesisOffset): Map[ShardKey, RunShard] =
    run ++ offset.shards.collect {
      case (key, entry) if !run.contains(key) =>
        key -> RunShard(RunBound.Unbounded, entry.status == ShardStatus.Finished)
    }

  /** Folds what a batch's tasks recorded into the run. */
  def update(run: Map[ShardKey, RunShard], ends: Map[ShardKey, RecordedEnd]): Map[ShardKey, RunShard] =
    run.map { case (key, shard) =>
      ends.get(key) match {
        case None => key -> shard
        case Some(recorded) =>
          val outcome = recorded.run
          // A resolved sequence number is final; otherwise the task's view is the newer one.
          val bound = shard.bound match {
            case before: RunBound.Before => before
            case current => outcome.map(_.bound).getOrElse(current)
          }
          key -> RunShard(
            bound,
            shard.reached || recorded.end.finished || outcome.exists(_.reached)
          )
      }
    }

  /** `next` with only the run's unfinished shards read: shards created after the start, or read to their bound, wait. */
  def restrict(next: KinesisOffset, run: Map[ShardKey, RunShard]): KinesisOffset =
    next.copy(shards = next.shards.map { case (key, entry) =>
      val skip = entry.status == ShardStatus.Read && run.get(key).forall(_.reached)
      key -> (if (skip) entry.copy(status = ShardStatus.Waiting) else entry)
    })

  /** Shards whose bound is still pending and that are not read to it: the driver keeps their iterators fresh. */
  def pending(run: Map[ShardKey, RunShard]): Seq[(ShardKey, RunBound.Pending)] =
    run.toSeq
      .collect { case (key, RunShard(p: RunBound.Pending, false)) => key -> p }
      .sortBy(_._1.metadataKey)
}
