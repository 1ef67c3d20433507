package io.sparkkinesis.source

import io.sparkkinesis.errors.{ErrorConditions, KinesisIllegalStateException}
import io.sparkkinesis.metadata.MetadataCommitter

/**
 * Records where a task stopped reading its shard in a batch. The first attempt to record wins (put-if-absent); the
 * next batch starts every shard at the winner's end, and a replay reads exactly to it.
 *
 * Two attempts of one task can run at once (speculation, or an executor that lost contact with the driver but goes
 * on running while Spark retries its task). An attempt that began before the winner recorded reads on its own and
 * may stop elsewhere. Such an attempt stands only when its end is the winner's: then its rows are exactly the
 * winner's. Otherwise it fails, so Spark keeps no rows of it (a retry, or the other attempt, delivers the batch).
 */
private[source] object EndRecording {

  /** Thrown by an attempt whose end differs from the one another attempt of its task recorded first. */
  final class LostToOtherAttempt(message: String)
      extends KinesisIllegalStateException(
        ErrorConditions("KINESIS_RECORDED_END_MISMATCH"),
        Map("reason" -> message)
      )

  /**
   * Writes `mine` as the ends of `task`'s shards in `batchId` unless the task's entry is recorded already; when it
   * is, fails unless every shard ends where `mine` says. `what` names the kind of task, for the message.
   */
  def record(
      committer: MetadataCommitter,
      batchId: Long,
      task: ReadTask,
      mine: Map[ShardKey, RecordedEnd],
      what: String
  ): Unit = {
    val json = task.index match {
      case Some(_) => OffsetJson.writeTaskEnds(mine)
      case None => OffsetJson.writeEnd(mine(task.shards.head))
    }
    if (!committer.putIfAbsent(batchId, task.metadataKey, json)) {
      val stored =
        committer.get(batchId, task.metadataKey).map(OffsetJson.readEndsOf(task, _)).getOrElse(Map.empty)
      val differing = task.shards.filterNot(k => stored.get(k).map(_.end.end) == mine.get(k).map(_.end.end))
      if (differing.nonEmpty) {
        val shard = differing.head
        throw new LostToOtherAttempt(
          s"Another attempt of the $what reading shard ${shard.shardId} of stream ${shard.streamName} in batch " +
            s"$batchId recorded a different end first (${stored.get(shard).map(_.end.end).getOrElse("none")}; " +
            s"this attempt: ${mine.get(shard).map(_.end.end).getOrElse("none")}). This attempt's rows are not the " +
            "batch's, so it fails; the batch reads exactly to the recorded end."
        )
      }
    }
  }

  /** The end of one shard read by a task of its own. */
  def record(committer: MetadataCommitter, p: KinesisInputPartition, mine: RecordedEnd, what: String): Unit =
    record(committer, p.batchId, ReadTask.single(p.key), Map(p.key -> mine), what)
}
