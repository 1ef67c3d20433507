package io.sparkkinesis.source

import io.sparkkinesis.errors.KinesisIllegalStateException
import io.sparkkinesis.metadata.MetadataCommitter

/**
 * Records where a task stopped reading its shards in a batch. The first attempt to record wins (put-if-absent); the
 * next batch starts every shard at the winner's end, and a replay reads exactly to it. Of two attempts of one task
 * at once (speculation, an executor cut off from the driver), the loser stands only when its end is the winner's;
 * otherwise it fails, so Spark keeps none of its rows.
 */
private[sparkkinesis] object EndRecording {

  /** Thrown by an attempt whose end differs from the one another attempt of its task recorded first. */
  final class LostToOtherAttempt(
      task: String,
      shard: ShardKey,
      batch: Long,
      recordedEnd: String,
      attemptEnd: String
  ) extends KinesisIllegalStateException(
        "KINESIS_RECORDED_END_MISMATCH",
        Seq(task, shard.shardId, shard.streamName, batch, recordedEnd, attemptEnd)
      )

  /** Writes `mine` unless the task's entry exists; then fails unless every shard ends where `mine` says. */
  def record(
      committer: MetadataCommitter,
      batchId: Long,
      task: ReadTask,
      mine: Map[ShardKey, RecordedEnd],
      what: String
  ): Unit = {
    val json = task.index match {
      case Some(_) => RecordedEndJson.writeTaskEnds(mine)
      case None => RecordedEndJson.writeEnd(mine(task.shards.head))
    }
    if (!committer.putIfAbsent(batchId, task.metadataKey, json)) {
      val stored =
        committer.get(batchId, task.metadataKey).map(RecordedEndJson.readEndsOf(task, _)).getOrElse(Map.empty)
      task.shards.find(k => stored.get(k).map(_.end.end) != mine.get(k).map(_.end.end)).foreach { shard =>
        def endOf(ends: Map[ShardKey, RecordedEnd]) = ends.get(shard).fold("none")(_.end.end.toString)
        throw new LostToOtherAttempt(what, shard, batchId, endOf(stored), endOf(mine))
      }
    }
  }
}
