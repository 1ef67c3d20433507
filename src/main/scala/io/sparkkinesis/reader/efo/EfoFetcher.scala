package io.sparkkinesis.reader.efo

import io.sparkkinesis.client._
import io.sparkkinesis.reader._
import io.sparkkinesis.resources.Lease

/**
 * Fetches with an enhanced fan-out subscription ([[ShardSubscription]]); calls GetRecords and GetShardIterator only
 * in a `Trigger.AvailableNow` run ([[PolledChecks]]). An event's records are handed out at most `limit` at a time;
 * the rest wait for the next fetch, so a batch can end inside an event and the next batch (taking this fetcher from
 * [[SubscriptionCache]]) goes on exactly there. Lag is reported with an event's last records only, and "at the tip"
 * only when no further event is buffered. `subscribedKnowingClosed`: the subscription was opened for a task that
 * already knew the shard closed. Only such a subscription reads a closed shard (see [[EfoFetcher.usableFor]]).
 * `release` hands back the subscription's client when the fetcher closes, so a fetcher cached between batches keeps
 * its client open. When the last event said the shard is caught up, a fetch does not wait for the next push: it
 * returns what is buffered, or nothing at the tip, so a task at the tip ends at once. A replay instead waits for
 * records, up to the subscription timeout, since the recorded batch had them.
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
  private var checks: Option[PolledChecks] = None
  // After the last record handed out (or the subscription's start), for the checks of an AvailableNow run.
  private var delivered: IteratorStart = subscription.position
  private var closedSeen = false
  // A check found a record after `delivered`: no other check until the subscription delivers an event.
  private var tipUnconfirmed = false

  /** SubscribeToShard calls made since the current task began. */
  def subscribeCallsThisTask: Long = subscription.subscribeCalls - subscribeCallsBefore

  def calls(api: String): Long =
    (if (api == KinesisApi.SubscribeToShard) subscribeCallsThisTask else 0L) + checks.fold(0L)(_.calls(api))

  /** The pinned-iterator probe of an AvailableNow run ([[PolledChecks]]); None otherwise. */
  override def tipProbe: Option[TipProbe] = checks.map(_.probe)

  /**
   * Called by each task that uses this fetcher (a cached fetcher serves several tasks, one after the other).
   * `shardClosed`: ListShards reported the shard closed before the batch was planned. Should the event listing the
   * children not come (kinesis-local 0.6.2 never sends it), a closed shard whose subscription is caught up (0 ms
   * behind, in an event this task received, nothing buffered) is read to its end all the same: no record can arrive
   * after the close (see [[EfoFetcher.usableFor]]). The children then come from ListShards, as for a polled shard.
   * `deadlineNanos`: the task's time limit (`kinesis.maxFetchTimePerShardSec`), the longest a first run waits for a
   * push. `followTip`: a real-time task, whose fetch when caught up waits for the next push until the deadline (an
   * open shard only). `checks`: a task of a `Trigger.AvailableNow` run, where GetRecords confirms "caught up".
   */
  def beginTask(
      replaying: Boolean,
      shardClosed: Boolean = false,
      deadlineNanos: Option[Long] = None,
      followTip: Boolean = false,
      checks: Option[PolledChecks] = None
  ): this.type = {
    this.checks = checks
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
        // Not at a confirmed tip in an AvailableNow run: some lag, so the reader does not count it as the tip.
        case None if waitEnded =>
          return FetchOutcome.Fetched(Nil, checks.map(_ => 1L), shardEnded = false, Nil)
        case None =>
          val ended = (shardClosed || closedSeen) && !replaying
          if (ended) subscription.close()
          return FetchOutcome.Fetched(Nil, Some(0L), shardEnded = ended, Nil)
        case Some(e) =>
          event = Some(e)
          remainder = e.records
          e.records.lastOption.foreach(r => delivered = IteratorStart.AfterSequence(r.sequenceNumber))
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
      val caughtUp = !replaying && subscription.caughtUp && (!shardClosed || eventsThisTask > 0) &&
        checks.forall(confirmedAtTip)
      val waitMs =
        if (replaying) math.max(1L, (replayDeadline - nanoTime()) / MsToNanos)
        else if (caughtUp && !followTip) 0L
        else
          deadlineNanos
            .map(d => math.max(0L, (d - nanoTime()) / MsToNanos))
            .getOrElse(Long.MaxValue / MsToNanos)
      waitEnded = !caughtUp || followTip
      val next = subscription.poll(waitMs)
      if (next.isDefined) {
        eventsThisTask += 1
        tipUnconfirmed = false
      }
      next match {
        case Some(e) if e.records.nonEmpty || e.endsShard =>
          waitEnded = false
          return Some(e)
        case Some(e) => // an empty event (a heartbeat, or the continuation moving on): take the next one
          if (replaying && e.millisBehindLatest.exists(_ > 0))
            replayDeadline = nanoTime() + replayWaitMs * MsToNanos
        case None => return None
      }
    }
    None
  }

  /**
   * Whether a GetRecords call of one record right after the delivered records, made now, finds none (see
   * [[PolledChecks]]). A shard found closed and read to its end is at its tip too.
   */
  private def confirmedAtTip(c: PolledChecks): Boolean = !tipUnconfirmed && {
    val found =
      try c.after(delivered)
      catch { case _: ThroughputExceeded => TipProbe.Unknown("") }
    found match {
      case TipProbe.NothingYet(_) => true
      case TipProbe.ClosedWithoutMore => closedSeen = true; true
      case _ => tipUnconfirmed = true; false
    }
  }

  /**
   * Whether this fetcher, left by an earlier batch, may read on. A closed shard is read only on a subscription opened
   * after the task knew it closed: on one opened before, an event buffered before the close may say "0 ms behind"
   * while records written just before the close still follow (on AWS and kinesis-local alike), which would make the
   * shard look read to its end. This costs one SubscribeToShard per closed shard.
   */
  def usableFor(shardClosed: Boolean): Boolean = !shardClosed || subscribedKnowingClosed

  def close(): Unit =
    try subscription.close()
    finally release()
}

/**
 * The GetRecords calls (with the task's polling client) that make a fan-out read of a `Trigger.AvailableNow` run
 * exact: the run pins each open shard's end with a LATEST iterator taken when it starts ([[RunBound]]), and confirms
 * it as a polling run does.
 *   - '''Held pages:''' event records are held, as polled pages are, until `probe` polls the pinned iterator. A
 *     record in hand when a probe finds nothing was put before the start; a probe that finds a record gives the
 *     bound. Which subscription delivered a record does not matter, only that it was in hand before the probe.
 *   - '''The end:''' `MillisBehindLatest` 0 does not prove that every record put before the start was delivered (it
 *     is a time difference; an event may be written before the start and arrive after it; a cut event can report 0
 *     with records after it). So a caught-up subscription is at the tip only when `after` (one record right after
 *     the last delivered one, asked for after the start) finds none; otherwise the task waits for the subscription
 *     to deliver it. A silent subscription thus still reaches its bound, and a closed shard read to its end ends.
 *
 * Arrival timestamps (another clock, milliseconds) and continuation sequence numbers (they advance over empty
 * events) cannot pin the start exactly. The cost: the LATEST iterator and the driver's probes as in a polling run,
 * one probe per held stretch of events and at most one check per event received; the role needs
 * `kinesis:GetShardIterator` and `kinesis:GetRecords` on the stream.
 */
private[efo] final class PolledChecks(records: ShardRecordsClient, streamName: String, shardId: String) {
  private val counted = new ApiCallCounter
  private val client = CountingClients.records(records, counted)

  /** Polls the run's pinned iterator. */
  val probe: TipProbe = TipProbe(client)

  def calls(api: String): Long = counted.get(api)

  /** What one GetRecords call of one record from `start`, made now, finds. */
  def after(start: IteratorStart): TipProbe.Result =
    probe.poll(client.getShardIterator(streamName, shardId, start))
}

/**
 * Opens an [[EfoFetcher]] per shard read, with the consumer of the read's stream. A read that starts where the
 * previous read of the shard on this executor ended takes over its live subscription (kept in [[SubscriptionCache]]
 * under `endpoint`); otherwise it subscribes anew, on a lease of the JVM's subscription client
 * (`subscriptionClient`) held for as long as the fetcher lives.
 */
private[sparkkinesis] final class EfoFetchers(
    endpoint: String,
    consumerArnOf: String => String, // of the stream a read names (ShardReadSpec.streamName)
    settings: SubscriptionSettings,
    subscriptionClient: () => Lease[ShardSubscriptionClient],
    records: ShardRecordsClient // GetRecords checks of AvailableNow runs (PolledChecks)
) extends FetcherFactory {
  type Fetcher = EfoFetcher

  def open(read: ShardRead): EfoFetcher = {
    val spec = read.spec
    val consumerArn = consumerArnOf(spec.streamName)
    val cached =
      SubscriptionCache.take(SubscriptionCache.Key(endpoint, consumerArn, spec.shardId), spec.start).filter {
        f =>
          val usable = f.usableFor(read.shardClosed)
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
      followTip = read.followTip,
      checks =
        if (read.replaying || spec.bound == RunBound.Unbounded) None
        else Some(new PolledChecks(records, spec.streamName, spec.shardId))
    )
  }

  def release(fetcher: EfoFetcher, end: Option[ShardPosition]): Unit = end match {
    case Some(position) =>
      val s = fetcher.subscription
      SubscriptionCache.put(SubscriptionCache.Key(endpoint, s.consumerArn, s.shardId), position, fetcher)
    case None => fetcher.close()
  }
}
