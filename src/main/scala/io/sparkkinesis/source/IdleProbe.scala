package io.sparkkinesis.source

import java.util.concurrent.atomic.AtomicBoolean

import scala.util.control.NonFatal

import io.sparkkinesis.client.{AccessDenied, ShardRecordsClient}
import io.sparkkinesis.reader.{ShardPosition, TipProbe}
import io.sparkkinesis.source.BatchPacing.Outcome
import org.slf4j.LoggerFactory

/**
 * `kinesis.avoidEmptyBatches`: after a batch that found every shard at its tip with nothing new, the driver plans no
 * batch until a probe finds one worth running. At most every `intervalMs` (at least 100 ms) it asks each shard the
 * next batch would read, up to [[DriverThreads.Max]] at once, for one record after where that batch starts
 * (GetRecords with Limit 1, on an iterator kept from probe to probe). A record, a shard behind its tip or closed, a
 * changed shard or a failed probe releases the batch, whose tasks still read from the recorded ends: no record is
 * skipped. A probe refused for want of permission (a fan-out reader's role need not grant GetShardIterator and
 * GetRecords) turns the probe off for the query's life, with one warning: idle batches are then paced as without it.
 */
private[sparkkinesis] final class IdleProbe(
    records: ShardRecordsClient,
    streamId: String => String,
    intervalMs: Long,
    nowMillis: () => Long
) {
  private val log = LoggerFactory.getLogger(classOf[IdleProbe])
  private val everyMs = math.max(intervalMs, BatchPacing.MinIdleStepMs)
  private val probe = TipProbe(records)
  // Each shard's next iterator, with the position the batch would read it from.
  private var iterators = Map.empty[ShardKey, (ShardPosition, String)]
  private var probedAt: Option[Long] = None
  private val warned = new AtomicBoolean(false)
  private val denied = new AtomicBoolean(false)

  /** Whether the batch `next`, planned after one that ended with `outcome`, waits for a record. */
  def holdsBack(outcome: Outcome, next: KinesisOffset): Boolean =
    if (outcome != Outcome.Idle || denied.get) { reset(); false }
    else if (probedAt.exists(nowMillis() - _ < everyMs)) true
    else {
      probedAt = Some(nowMillis())
      val kept = iterators
      val probed = DriverThreads.inParallel(next.readShards) { case (key, entry) =>
        val at = entry.position
        quietFrom(key, at, kept.get(key).collect { case (`at`, it) => it }).map(it => key -> (at -> it))
      }
      val due = probed.contains(None)
      if (due) reset() else iterators = probed.flatten.toMap
      !due
    }

  private def reset(): Unit = { iterators = Map.empty; probedAt = None }

  /**
   * The iterator to probe shard `key` with next time when it has no record after `at`; None when it has one, or the
   * probe cannot tell. Runs on the pool's threads, so it changes no field but `warned` and `denied`.
   */
  private def quietFrom(key: ShardKey, at: ShardPosition, kept: Option[String]): Option[String] =
    try {
      val iterator = kept.getOrElse {
        records.getShardIterator(streamId(key.streamName), key.shardId, ShardPosition.iteratorStart(at))
      }
      probe.poll(iterator) match {
        case TipProbe.NothingYet(next) => Some(next)
        case _ => None
      }
    } catch {
      case AccessDenied(code) =>
        if (!denied.getAndSet(true)) {
          log.warn(
            s"kinesis.avoidEmptyBatches: Kinesis refused the idle probe of stream ${key.streamName} ($code): the " +
              "query's credentials lack kinesis:GetShardIterator or kinesis:GetRecords on it, which the probe needs " +
              "with enhanced fan-out too. The query goes on with paced idle batches (at most one per " +
              "kinesis.idleProbeIntervalMs, each writing to the checkpoint); grant both actions to run none, or set " +
              "kinesis.avoidEmptyBatches=false."
          )
        }
        None
      case NonFatal(e) =>
        val message = s"kinesis.avoidEmptyBatches: the idle probe of shard ${key.shardId} of stream " +
          s"${key.streamName} failed (${e.getMessage}); the next batch runs and reads it"
        if (warned.getAndSet(true)) log.debug(message) else log.warn(message)
        None
    }
}
