package io.sparkkinesis.reader.efo

import io.sparkkinesis.client.{KinesisApi, KinesisRecord, ShardSubscriptionClient, SubscriptionEvent}
import io.sparkkinesis.reader.{FetchOutcome, FetcherFactory, RecordFetcher, ShardPosition, ShardRead}
import io.sparkkinesis.resources.Lease

/**
 * Fetches with an enhanced fan-out subscription ([[ShardSubscription]]); never calls GetRecords or GetShardIterator.
 *
 * An event's records are handed out at most `limit` at a time; the rest wait for the next fetch, so a batch can end
 * between two records of one event and the next batch (taking this fetcher from [[SubscriptionCache]]) goes on
 * exactly there. Lag is reported with an event's last records only, and "at the tip" only when no further event
 * is buffered.
 *
 * `subscribedKnowingClosed`: the subscription was opened for a task that already knew the shard closed. Only such a
 * subscription reads a closed shard (see [[EfoFetcher.usableFor]]). `release` hands back the subscription's client
 * when the fetcher closes, so a fetcher cached between batches keeps its client open.
 *
 * When the last event said the shard is caught up, a fetch does not wait for the next push: it returns what is
 * buffered, or nothing at the tip, so a task at the tip ends at once. A replay (`beginTask(replaying = true)`)
 * instead waits for records, up to the subscription timeout, since the recorded batch had them.
 */
private[sparkkinesis] final class EfoFetcher(
    val subscription: ShardSubscription,
    replayWaitMs: Long,
    nanoTime: () => Long = () => System.nanoTime(),
    val subscribedKnowingClosed: Boolean = false,
    release: () => Unit = () => ()
) extends RecordFetcher {
  private var event: Option[SubscriptionEvent] = None
  private var remainder: Seq[KinesisRecord] = Nil
  private var replaying = false
  private var shardClosed = false
  private var eventsThisTask = 0
  private var deadlineNanos: Option[Long] = None
  private var followTip = false
  private var waitEnded = false
  private var subscribeCallsBefore = 0L

  /** SubscribeToShard calls made since the current task began. */
  def subscribeCallsThisTask: Long = subscription.subscribeCalls - subscribeCallsBefore

  def calls(api: String): Long = if (api == KinesisApi.SubscribeToShard) subscribeCallsThisTask else 0L

  /**
   * Called by each task that uses this fetcher (a cached fetcher serves several tasks, one after the other).
   *
   * @param shardClosed
   *   ListShards reported the shard closed before the batch was planned. Kinesis ends the subscription of a closed
   *   shard with an event listing the children; should that event not come (kinesis-local 0.6.2 never sends it),
   *   a closed shard whose subscription is caught up (0 ms behind, nothing buffered) is read to its end all the
   *   same. This is right for AWS too, not only for the emulator: no record can arrive in a shard after it closed,
   *   so a subscription that reports it is caught up, in an event this task received, has delivered every record
   *   (see [[EfoFetcher.usableFor]]); the children come from ListShards, as for a polled shard.
   * @param deadlineNanos
   *   the task's time limit (`kinesis.maxFetchTimePerShardSec`): a first run waits for a push no longer than this
   * @param followTip
   *   a real-time task: when caught up, a fetch waits for the next push until the deadline instead of returning
   *   nothing at once (an open shard only; a closed one is read to its end as in a micro-batch)
   */
  def beginTask(
      replaying: Boolean,
      shardClosed: Boolean = false,
      deadlineNanos: Option[Long] = None,
      followTip: Boolean = false
  ): this.type = {
    this.replaying = replaying
    this.shardClosed = shardClosed
    this.deadlineNanos = deadlineNanos
    this.followTip = followTip && !shardClosed
    eventsThisTask = 0
    subscribeCallsBefore = subscription.subscribeCalls
    this
  }

  def fetch(limit: Int): FetchOutcome = {
    if (remainder.isEmpty) {
      val next =
        try nextEvent()
        catch { case e: SubscribedShardGone => return FetchOutcome.Gone(e.getMessage) }
      next match {
        case None if waitEnded => return FetchOutcome.Fetched(Nil, None, shardEnded = false, Nil)
        case None =>
          val ended = shardClosed && !replaying
          if (ended) subscription.close()
          return FetchOutcome.Fetched(Nil, Some(0L), shardEnded = ended, Nil)
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
    // "0 ms behind" held when the event was sent: with more events already buffered, the reader is not at the tip
    // (it would otherwise end the batch and leave each of them to a later batch).
    val behind =
      if (!last) None
      else if (subscription.buffered > 0) e.millisBehindLatest.filter(_ > 0)
      else e.millisBehindLatest
    FetchOutcome.Fetched(now, behind, ended, if (ended) e.childShards else Nil)
  }

  /** Moves the deadline of a real-time task: the engine gives each call for the next record its own timeout. */
  override def waitUntil(deadlineNanos: Long): Unit = this.deadlineNanos = Some(deadlineNanos)

  /** The next event with records, or the shard's last event; None when caught up with nothing buffered. */
  private def nextEvent(): Option[SubscriptionEvent] = {
    val MsToNanos = 1000000L
    var replayDeadline = nanoTime() + replayWaitMs * MsToNanos
    waitEnded = false
    while (true) {
      // For a closed shard, only an event received by this task proves it is caught up (a buffered one could
      // predate records written just before the shard closed).
      val caughtUp = !replaying && subscription.caughtUp && (!shardClosed || eventsThisTask > 0)
      val waitMs =
        if (replaying) math.max(1L, (replayDeadline - nanoTime()) / MsToNanos)
        else if (caughtUp && !followTip) 0L
        else
          deadlineNanos
            .map(d => math.max(0L, (d - nanoTime()) / MsToNanos))
            .getOrElse(Long.MaxValue / MsToNanos)
      waitEnded = !caughtUp || followTip
      val next = subscription.poll(waitMs)
      if (next.isDefined) eventsThisTask += 1
      next match {
        case Some(e) if e.records.nonEmpty || e.endsShard =>
          waitEnded = false
          return Some(e)
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

  def close(): Unit =
    try subscription.close()
    finally release()
}

private[sparkkinesis] object EfoFetcher {

  /**
   * Whether a fetcher left by an earlier batch may read on. A closed shard is read on a subscription opened after
   * the task knew it closed: one opened before may have pushed "0 ms behind" without the records written just
   * before the close (kinesis-local 0.6.2 does, and then never sends the end event), which would make the shard
   * look read to its end. A fresh subscription delivers everything after the position, so this costs one
   * SubscribeToShard per closed shard. Kept for AWS as well: there too an event buffered before the close may say
   * "0 ms behind" while records written just before the close still follow.
   */
  def usableFor(fetcher: EfoFetcher, shardClosed: Boolean): Boolean =
    !shardClosed || fetcher.subscribedKnowingClosed
}

/**
 * Opens an [[EfoFetcher]] per shard read, for one consumer. A read that starts where the previous read of the shard
 * on this executor ended takes over its live subscription (kept in [[SubscriptionCache]] under `endpoint`); otherwise
 * it subscribes anew, on a lease of the JVM's subscription client (`subscriptionClient`) held for as long as the
 * fetcher lives.
 */
private[sparkkinesis] final class EfoFetchers(
    endpoint: String,
    consumerArn: String,
    settings: SubscriptionSettings,
    subscriptionClient: () => Lease[ShardSubscriptionClient]
) extends FetcherFactory {
  type Fetcher = EfoFetcher

  private def key(shardId: String) = SubscriptionCache.Key(endpoint, consumerArn, shardId)

  def open(read: ShardRead): EfoFetcher = {
    val spec = read.spec
    val cached = SubscriptionCache.take(key(spec.shardId), spec.start).filter { f =>
      val usable = EfoFetcher.usableFor(f, read.shardClosed)
      if (!usable) f.close()
      usable
    }
    val fetcher = cached.getOrElse {
      val subscriptions = subscriptionClient()
      subscriptions.closeIfFails { client =>
        new EfoFetcher(
          new ShardSubscription(
            client,
            consumerArn,
            spec.shardId,
            ShardPosition.iteratorStart(spec.start),
            settings
          ),
          settings.timeoutMs,
          subscribedKnowingClosed = read.shardClosed,
          release = () => subscriptions.close()
        )
      }
    }
    fetcher.beginTask(
      replaying = read.replaying,
      shardClosed = read.shardClosed,
      deadlineNanos =
        spec.maxTimeMs.map(ms => System.nanoTime() + math.min(ms, Long.MaxValue / 2000000L) * 1000000L),
      followTip = read.followTip
    )
  }

  def release(fetcher: EfoFetcher, end: Option[ShardPosition]): Unit = end match {
    case Some(position) => SubscriptionCache.put(key(fetcher.subscription.shardId), position, fetcher)
    case None => fetcher.close()
  }
}
