package io.sparkkinesis.source

import scala.util.control.NonFatal

import io.sparkkinesis.client.ShardRecordsClient
import io.sparkkinesis.reader.{ShardPosition, TipProbe}
import io.sparkkinesis.source.BatchPacing.Outcome
import org.slf4j.LoggerFactory

/**
 * `kinesis.avoidEmptyBatches`: after a batch that found every shard at its tip with nothing new, the driver plans no
 * batch until a probe finds that one is worth running. At most every `intervalMs` (at least 100 ms), it asks each
 * shard the next batch would read for one record after where that batch starts (GetRecords with Limit 1, on an
 * iterator kept from probe to probe: AFTER_SEQUENCE_NUMBER of the recorded end, or the shard's start position, then
 * NextShardIterator). A record, a shard behind its tip or closed, a changed shard or a failed probe releases the
 * batch; after a batch that was not idle nothing waits for a probe. The probe only decides when the batch runs: its
 * tasks still read from the recorded ends, so no record is skipped. Its requests go through the driver's counting
 * client.
 */
private[sparkkinesis] final class IdleProbe(
    records: ShardRecordsClient,
    streamId: String => String,
    intervalMs: Long,
    nowMillis: () => Long
) {
  private val log = LoggerFactory.getLogger(classOf[IdleProbe])
  private val everyMs = math.max(intervalMs, BatchPacing.MinIdleStepMs)
  // A record after the position, a closed shard, or records reported beyond an empty page release the batch.
  private val probe = TipProbe(records)
  // Each shard's next iterator, with the position the batch would read it from.
  private var iterators = Map.empty[ShardKey, (ShardPosition, String)]
  private var probedAt: Option[Long] = None
  private var warned = false

  /** Whether the batch `next`, planned after one that ended with `outcome`, waits for a record. */
  def holdsBack(outcome: Outcome, next: KinesisOffset): Boolean =
    if (outcome != Outcome.Idle) { reset(); false }
    else if (probedAt.exists(nowMillis() - _ < everyMs)) true
    else {
      probedAt = Some(nowMillis())
      val shards = next.readShards.map { case (key, entry) => key -> entry.position }
      iterators = iterators.filter { case (key, (at, _)) => shards.contains(key -> at) }
      val due = shards.exists { case (key, at) => arrived(key, at) }
      if (due) reset()
      !due
    }

  private def reset(): Unit = { iterators = Map.empty; probedAt = None }

  /** Whether shard `key` has a record after `at`, or the probe cannot tell. */
  private def arrived(key: ShardKey, at: ShardPosition): Boolean =
    try {
      val iterator = iterators.get(key).map(_._2).getOrElse {
        records.getShardIterator(streamId(key.streamName), key.shardId, ShardPosition.iteratorStart(at))
      }
      probe.poll(iterator) match {
        case TipProbe.NothingYet(next) => iterators += key -> (at -> next); false
        case TipProbe.Unknown(next) => iterators += key -> (at -> next); true
        case _: TipProbe.FirstAfter | TipProbe.ClosedWithoutMore => true
      }
    } catch {
      case NonFatal(e) =>
        val message = s"kinesis.avoidEmptyBatches: the idle probe of shard ${key.shardId} of stream " +
          s"${key.streamName} failed (${e.getMessage}); the next batch runs and reads it"
        if (warned) log.debug(message) else log.warn(message)
        warned = true
        true
    }
}
