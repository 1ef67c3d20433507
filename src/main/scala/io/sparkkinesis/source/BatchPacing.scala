package io.sparkkinesis.source

import io.sparkkinesis.reader.ShardEnd

/**
 * How long after planning a batch the driver waits before it plans the next one (triggers that fire sooner find no
 * new batch), so that the wait costs latency only while the stream is really idle. From how the previous batch ended:
 *   - a shard stopped before its tip (a batch limit), or the next batch reads other shards: no wait;
 *   - every shard at its tip, records found: polling waits `getRecords.fetchIntervalMs`, so that a shard read in
 *     consecutive batches gets no more GetRecords calls than within one task (Kinesis allows 5 per second per shard);
 *     enhanced fan-out does not wait;
 *   - every shard at its tip, nothing found, the n-th such batch in a row: `max(fetchIntervalMs, 100 ms) * 2^n`, so
 *     an idle stream settles at one batch per `idleProbeIntervalMs` after a few shorter waits.
 * Every wait is at most `idleProbeIntervalMs` (0: never wait). With `kinesis.avoidEmptyBatches`, an [[IdleProbe]]
 * holds back the batch after an idle one until a record arrives.
 */
private[sparkkinesis] object BatchPacing {

  /** How a batch ended, for pacing. */
  sealed trait Outcome

  object Outcome {

    /** Some shard stopped before its tip, or the batch is not comparable (the first one, a new set of shards). */
    case object Behind extends Outcome

    /** Every shard ended at its tip, with records. */
    case object Found extends Outcome

    /** Every shard ended at its tip, without a record. */
    case object Idle extends Outcome
  }

  /** The shortest wait that doubles: `fetchIntervalMs`, but at least this. */
  val MinIdleStepMs: Long = 100L

  /** The outcome of a batch from the ends its tasks recorded. */
  def outcome(ends: Iterable[ShardEnd]): Outcome =
    if (!ends.forall(_.reachedTip)) Outcome.Behind
    else if (ends.exists(_.recordCount > 0)) Outcome.Found
    else Outcome.Idle

  /** `idleInARow`: the batches in a row, up to and including `batchId`, whose outcome was [[Outcome.Idle]]. */
  final case class Streak(batchId: Long, idleInARow: Int) {

    /** The streak once batch `id` ended with `outcome`; unchanged when `id` is already counted. */
    def after(id: Long, outcome: Outcome): Streak =
      if (id == batchId) this
      else if (outcome != Outcome.Idle) Streak(id, 0)
      else Streak(id, if (id == batchId + 1) idleInARow + 1 else 1)
  }

  val NoBatch: Streak = Streak(-1L, 0)

  /** `spacesFoundBatches`: the read mode's ([[io.sparkkinesis.config.ReadMode.spacesFoundBatches]]). */
  final case class Settings(spacesFoundBatches: Boolean, fetchIntervalMs: Long, idleProbeIntervalMs: Long)

  /** The wait before the batch after one that ended with `outcome`, `idleInARow` idle batches in a row. */
  def waitMs(settings: Settings, outcome: Outcome, idleInARow: Int): Long =
    math.min(
      outcome match {
        case Outcome.Behind => 0L
        case Outcome.Found => if (settings.spacesFoundBatches) settings.fetchIntervalMs else 0L
        case Outcome.Idle =>
          val step = math.max(settings.fetchIntervalMs, MinIdleStepMs)
          // 2^20 steps of 100 ms already exceed a day: doubling further would only risk overflow.
          val doublings = math.min(math.max(idleInARow, 1), 20)
          if (step > (Long.MaxValue >> doublings)) Long.MaxValue else step << doublings
      },
      settings.idleProbeIntervalMs
    )
}

/** The pacing of one query's batches ([[BatchPacing]]), and its [[IdleProbe]] with `kinesis.avoidEmptyBatches`. */
private[source] final class BatchPacer(
    settings: BatchPacing.Settings,
    idleProbe: Option[IdleProbe],
    nowMillis: () => Long
) {
  private var streak = BatchPacing.NoBatch
  private var lastPlannedAt = 0L

  /** `next`, the batch after `previous` (whose tasks ended at `ends`), when it is due now; None to hold it. */
  def next(previous: KinesisOffset, next: KinesisOffset, ends: Iterable[ShardEnd]): Option[KinesisOffset] = {
    val outcome =
      if (previous.batchId < 0 || !ShardPlanner.sameShape(previous, next)) BatchPacing.Outcome.Behind
      else BatchPacing.outcome(ends)
    streak = streak.after(previous.batchId, outcome)
    val now = nowMillis()
    val waiting = now - lastPlannedAt < BatchPacing.waitMs(settings, outcome, streak.idleInARow)
    if (waiting || idleProbe.exists(_.holdsBack(outcome, next))) None
    else {
      lastPlannedAt = now
      Some(next)
    }
  }
}
