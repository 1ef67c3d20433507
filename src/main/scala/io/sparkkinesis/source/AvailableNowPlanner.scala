package io.sparkkinesis.source

import io.sparkkinesis.client._
import io.sparkkinesis.reader.{RunBound, TipProbe}
import org.slf4j.LoggerFactory

/** A shard of a `Trigger.AvailableNow` run: how far the run reads it, and whether it has been read that far. */
private[sparkkinesis] final case class RunShard(bound: RunBound, reached: Boolean)

/**
 * Pure planning of a `Trigger.AvailableNow` run: it reads the shards that exist when it starts and no shard created
 * later, each up to its [[RunBound]], and ends when no shard of the run has anything left to read.
 */
private[sparkkinesis] object AvailableNowPlanner {

  /**
   * The run's shards at its start: closed shards are read to their end; open shards are bounded by a LATEST iterator
   * taken now (`latest`), resolved later into the first sequence number put after the start.
   */
  def start(
      listings: Map[String, Seq[ShardDescription]],
      latest: ShardKey => String
  ): Map[ShardKey, RunShard] =
    (for ((stream, shards) <- listings.toSeq; shard <- shards) yield {
      val key = ShardKey(stream, shard.shardId)
      val bound = if (shard.isClosed) RunBound.Unbounded else RunBound.Pending(latest(key))
      key -> RunShard(bound, reached = false)
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
      key -> ends.get(key).fold(shard) { recorded =>
        val outcome = recorded.run
        // A resolved sequence number is final; otherwise the task's view is the newer one.
        val bound = shard.bound match {
          case before: RunBound.Before => before
          case current => outcome.map(_.bound).getOrElse(current)
        }
        RunShard(bound, shard.reached || recorded.end.finished || outcome.exists(_.reached))
      }
    }

  /** `next` with only the run's unfinished shards read: shards created after the start, or read to their bound, wait. */
  def restrict(next: KinesisOffset, run: Map[ShardKey, RunShard]): KinesisOffset =
    ShardPlanner.readOnly(next)(key => run.get(key).exists(!_.reached))

  /** Shards whose bound is still pending and that are not read to it: the driver keeps their iterators fresh. */
  def pending(run: Map[ShardKey, RunShard]): Seq[(ShardKey, RunBound.Pending)] =
    run.toSeq
      .collect { case (key, RunShard(p: RunBound.Pending, false)) => key -> p }
      .sortBy(_._1.metadataKey)
}

/**
 * A `Trigger.AvailableNow` run on the driver, from its shards at the start ([[AvailableNowRun.start]]). Each batch
 * folds in the ends of the batch before, polls the tip of each shard whose bound is unknown (one GetRecords call of
 * one record), and is kept to the run's unfinished shards ([[AvailableNowPlanner]]).
 */
private[source] final class AvailableNowRun private (
    records: ShardRecordsClient,
    streamId: String => String,
    private var run: Map[ShardKey, RunShard]
) {
  private val log = LoggerFactory.getLogger(classOf[AvailableNowRun])
  private var tracked = false

  def shards: Map[ShardKey, RunShard] = run

  /**
   * `planned` reading only the run's unfinished shards. The first `previous` was planned before the run: of it, only
   * the shards it tracks are taken, not its tasks' outcomes.
   */
  def restrict(
      planned: KinesisOffset,
      previous: KinesisOffset,
      ends: Map[ShardKey, RecordedEnd]
  ): KinesisOffset = {
    val folded =
      if (tracked) AvailableNowPlanner.update(run, ends) else AvailableNowPlanner.withTracked(run, previous)
    tracked = true
    run = folded ++ AvailableNowPlanner.pending(folded).flatMap { case (key, pending) =>
      probe(key, pending.tipIterator).map(bound => key -> RunShard(bound, reached = false))
    }
    AvailableNowPlanner.restrict(planned, run)
  }

  /** A pending shard's bound after one poll: resolved, or pending on a fresh iterator (they expire after 5 minutes). */
  private def probe(key: ShardKey, iterator: String): Option[RunBound] =
    try Some(RunBound.of(TipProbe(records).poll(iterator)))
    catch {
      case _: ThroughputExceeded => None
      case e: IteratorExpired =>
        // Only when no batch touched the shard for 5 minutes; the run then also takes what was put since.
        log.warn(
          s"Trigger.AvailableNow: the tip iterator of $key expired ($e); the run now reads the shard up to its tip " +
            "as of now"
        )
        Some(RunBound.Pending(AvailableNowRun.latest(records, streamId)(key)))
      case _: ShardNotFound => Some(RunBound.Unbounded)
    }
}

private[source] object AvailableNowRun {

  /** A run on the shards of `listings`, taking a LATEST iterator of each open shard now. */
  def start(
      records: ShardRecordsClient,
      streamId: String => String,
      listings: Map[String, Seq[ShardDescription]]
  ): AvailableNowRun =
    new AvailableNowRun(records, streamId, AvailableNowPlanner.start(listings, latest(records, streamId)))

  private def latest(records: ShardRecordsClient, streamId: String => String)(key: ShardKey): String =
    records.getShardIterator(streamId(key.streamName), key.shardId, IteratorStart.Latest)
}
