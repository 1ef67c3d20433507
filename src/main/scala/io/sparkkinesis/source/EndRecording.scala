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
   * Writes `mine` as the end of `p`'s shard in its batch unless an end is recorded already; when one is, fails
   * unless it ends where `mine` does. `what` names the kind of task, for the message.
   */
  def record(committer: MetadataCommitter, p: KinesisInputPartition, mine: RecordedEnd, what: String): Unit =
    if (!committer.putIfAbsent(p.batchId, p.key.metadataKey, OffsetJson.writeEnd(mine))) {
      val stored = committer.get(p.batchId, p.key.metadataKey).map(OffsetJson.readEnd)
      if (!stored.map(_.end).contains(mine.end.end)) {
        throw new LostToOtherAttempt(
          s"Another attempt of the $what reading shard ${p.shardId} of stream ${p.streamName} in batch " +
            s"${p.batchId} recorded a different end first (${stored.map(_.end).getOrElse("none")}; this attempt: " +
            s"${mine.end.end}). This attempt's rows are not the batch's, so it fails; the batch reads exactly to " +
            "the recorded end."
        )
      }
    }
}
