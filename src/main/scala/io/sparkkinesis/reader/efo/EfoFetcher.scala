package io.sparkkinesis.reader.efo

import io.sparkkinesis.client.{IteratorStart, KinesisRecord, SubscriptionEvent}
import io.sparkkinesis.reader.{FetchOutcome, RecordFetcher, ShardPosition}

/**
 * Fetches with an enhanced fan-out subscription ([[ShardSubscription]]); never calls GetRecords or GetShardIterator.
 *
 * An event's records are handed out at most `limit` at a time; the rest wait for the next fetch, so a batch can end
 * between two records of one event and the next batch (taking this fetcher from [[SubscriptionCache]]) goes on
 * exactly there. Lag is reported with an event's last records only.
 *
 * When the last event said the shard is caught up, a fetch does not wait for the next push: it returns what is
 * buffered, or nothing at the tip, so a task at the tip ends at once. A replay (`beginTask(replaying = true)`)
 * instead waits for records, up to the subscription timeout, since the recorded batch had them.
 */
final class EfoFetcher(
    val subscription: ShardSubscription,
    replayWaitMs: Long,
    nanoTime: () => Long = () => System.nanoTime()
) extends RecordFetcher {
  private var event: Option[SubscriptionEvent] = None
  private var remainder: Seq[KinesisRecord] = Nil
  private var replaying = false

  /** Called by each task that uses this fetcher (a cached fetcher serves several tasks, one after the other). */
  def beginTask(replaying: Boolean): this.type = {
    this.replaying = replaying
    this
  }

  def fetch(limit: Int): FetchOutcome = {
    if (remainder.isEmpty) {
      val next =
        try nextEvent()
        catch { case e: SubscribedShardGone => return FetchOutcome.Gone(e.getMessage) }
      next match {
        case None => return FetchOutcome.Fetched(Nil, Some(0L), shardEnded = false, Nil)
        case Some(e) =>
          event = Some(e)
          remainder = e.records
      }
    }
    val (now, rest) = remainder.splitAt(math.max(1, limit))
    remainder = rest
    val e = event.get
    val last = rest.isEmpty
    val ended = last && e.endsShard
    FetchOutcome.Fetched(
      now,
      if (last) e.millisBehindLatest else None,
      ended,
      if (ended) e.childShards else Nil
    )
  }

  /** The next event with records, or the shard's last event; None when caught up with nothing buffered. */
  private def nextEvent(): Option[SubscriptionEvent] = {
    val MsToNanos = 1000000L
    var replayDeadline = nanoTime() + replayWaitMs * MsToNanos
    while (true) {
      val waitMs =
        if (replaying) math.max(1L, (replayDeadline - nanoTime()) / MsToNanos)
        else if (subscription.caughtUp) 0L
        else Long.MaxValue / MsToNanos
      subscription.poll(waitMs) match {
        case Some(e) if e.records.nonEmpty || e.endsShard => return Some(e)
        case Some(e) =>
          // An empty event: a heartbeat, or the continuation moving on. Take the next one, not waiting when
          // caught up.
          if (replaying && e.millisBehindLatest.exists(_ > 0))
            replayDeadline = nanoTime() + replayWaitMs * MsToNanos
        case None => return None
      }
    }
    None
  }

  def close(): Unit = subscription.close()
}

object EfoFetcher {

  /** Where a subscription for a batch starting at `position` starts. Inside an aggregate: AT its record. */
  def startOf(position: ShardPosition): IteratorStart = position match {
    case ShardPosition.TrimHorizon => IteratorStart.TrimHorizon
    case ShardPosition.AtTimestamp(ms) => IteratorStart.AtTimestamp(ms)
    case a: ShardPosition.After if a.wholeRecord => IteratorStart.AfterSequence(a.sequenceNumber)
    case a: ShardPosition.After => IteratorStart.AtSequence(a.sequenceNumber)
  }
}
