package io.sparkkinesis.reader.efo

import java.util.concurrent.{LinkedBlockingQueue, TimeUnit}

import io.sparkkinesis.client._
import io.sparkkinesis.client.SubscriptionErrors.{Fatal, InUse, ShardGone, Transient}
import io.sparkkinesis.errors.KinesisErrors
import org.slf4j.LoggerFactory

/**
 * `timeoutMs`: the longest silence (no response, no event) of a subscription while a task waits on it, before it is
 * renewed. `maxRetries`: renewals after recoverable errors in a row (no event between) before the task fails.
 * `bufferedEvents`: events requested ahead of the reader, what a subscription may hold in memory per shard.
 * `inUseGapMs`: how long after a successful subscription Kinesis refuses another of the same consumer and shard.
 */
private[sparkkinesis] final case class SubscriptionSettings(
    timeoutMs: Long,
    maxRetries: Int,
    bufferedEvents: Int = 4,
    inUseGapMs: Long = 5000L,
    retryBaseMs: Long = 200L,
    retryMaxMs: Long = 5000L
)

/** A subscription failed in a way renewing cannot fix, or too often in a row. */
private[sparkkinesis] final class SubscriptionFailed(message: String, cause: Throwable)
    extends RuntimeException(message, cause)

/** The shard no longer exists. */
private[sparkkinesis] final class SubscribedShardGone(message: String, cause: Throwable)
    extends RuntimeException(message, cause)

/**
 * One consumer's subscription to one shard, renewed as often as needed: the reader sees one gap-free sequence of
 * events. The state machine, driven by the reading thread only (callbacks just queue signals):
 *   - idle: no live subscription; the next `poll` subscribes at `resumeFrom` (the start, then AFTER the last
 *     delivered event's continuation sequence number);
 *   - subscribed: waiting for the service to accept; once it has, `bufferedEvents` events are requested, and one
 *     more each time the reader takes one, so memory stays bounded however slow the reader is;
 *   - the service ends the subscription (its 5-minute limit): back to idle, renewed on the next poll;
 *   - it fails: [[SubscriptionErrors.classify]] decides. `InUse` and `Transient` go back to idle after a wait, and
 *     count as a retry; `ShardGone` and `Fatal` end the reader with an exception saying what happened. A silent
 *     subscription (nothing for `timeoutMs`) fails as `Transient`;
 *   - the last event of a closed shard: finished.
 * A renewal never comes sooner than `inUseGapMs` after the last accepted subscription (Kinesis' 5-second rule).
 */
private[sparkkinesis] final class ShardSubscription(
    client: ShardSubscriptionClient,
    val consumerArn: String,
    val shardId: String,
    start: IteratorStart,
    settings: SubscriptionSettings,
    sleep: Long => Unit = Thread.sleep,
    nanoTime: () => Long = () => System.nanoTime()
) {
  import ShardSubscription._

  private val log = LoggerFactory.getLogger(classOf[ShardSubscription])
  private val signals = new LinkedBlockingQueue[Signal]()

  private var generation = 0L
  private var live = false
  private var cancelLive: () => Unit = () => ()
  private var handle: Option[SubscriptionHandle] = None
  private var resumeFrom: IteratorStart = start
  private var lastActivityNanos = nanoTime()
  private var lastAcceptedNanos: Option[Long] = None
  private var failuresInARow = 0
  private var lastDelivered: Option[SubscriptionEvent] = None
  private var finished = false

  var subscribeCalls = 0

  /** Renewals: after the service ended a subscription, or after a recoverable error. */
  var renewals = 0

  /** The last delivered event said the reader is at the tip (0 ms behind). */
  def caughtUp: Boolean = lastDelivered.exists(_.millisBehindLatest.contains(0L))

  /** Where a renewal would start. */
  def position: IteratorStart = resumeFrom

  private def describe = s"the subscription of consumer $consumerArn to shard $shardId"

  /**
   * The next event, waiting at most `waitMs` for it (0: only what is already buffered). None when nothing came.
   * Throws [[SubscriptionFailed]] or [[SubscribedShardGone]].
   */
  def poll(waitMs: Long): Option[SubscriptionEvent] = {
    require(!finished, s"$describe: the shard was read to its end")
    val deadline = nanoTime() + math.max(0L, waitMs) * Million
    while (true) {
      if (!live) subscribe()
      val now = nanoTime()
      val silentMs = (now - lastActivityNanos) / Million
      val waitNow = math.max(0L, math.min((deadline - now) / Million, settings.timeoutMs - silentMs))
      val signal = if (waitNow == 0) signals.poll() else signals.poll(waitNow, TimeUnit.MILLISECONDS)
      if (signal == null) {
        if ((nanoTime() - lastActivityNanos) / Million >= settings.timeoutMs)
          failed(
            new SubscriptionTimedOut(
              s"$describe delivered nothing for ${settings.timeoutMs} ms (kinesis.subscribeToShard.timeoutSec)"
            )
          )
        else if (nanoTime() - deadline >= 0) return None
      } else if (signal.generation == generation) {
        signal match {
          case Started(_, h) =>
            handle = Some(h)
            lastActivityNanos = nanoTime()
            lastAcceptedNanos = Some(lastActivityNanos)
            h.request(settings.bufferedEvents.toLong)
          case Delivered(_, event) =>
            lastActivityNanos = nanoTime()
            failuresInARow = 0
            lastDelivered = Some(event)
            event.continuationSequenceNumber.foreach(seq => resumeFrom = IteratorStart.AfterSequence(seq))
            if (event.endsShard) {
              finished = true
              close()
            } else handle.foreach(_.request(1))
            return Some(event)
          case Ended(_) =>
            log.info(s"The service ended $describe; renewing it from $resumeFrom")
            drop()
            renewals += 1
            waitForGap(0L)
          case Failed(_, error) => failed(error)
        }
      }
    }
    throw KinesisErrors.internal("unreachable")
  }

  /** Buffered events not yet taken (of the live subscription). */
  def buffered: Int = signals.toArray.count {
    case Delivered(g, _) => g == generation
    case _ => false
  }

  /** Cancels the live subscription, if any. */
  def close(): Unit = {
    drop()
    signals.clear()
  }

  private def subscribe(): Unit = {
    generation += 1
    val mine = generation
    live = true
    handle = None
    subscribeCalls += 1
    lastActivityNanos = nanoTime()
    cancelLive = client.subscribe(
      consumerArn,
      shardId,
      resumeFrom,
      new SubscriptionListener {
        def onStart(h: SubscriptionHandle): Unit = signals.put(Started(mine, h))
        def onEvent(event: SubscriptionEvent): Unit = signals.put(Delivered(mine, event))
        def onEnd(): Unit = signals.put(Ended(mine))
        def onError(error: Throwable): Unit = signals.put(Failed(mine, error))
      }
    )
  }

  /** Forgets the live subscription: later signals of it are ignored. */
  private def drop(): Unit = if (live) {
    live = false
    generation += 1
    handle = None
    try cancelLive()
    catch { case e: Exception => log.debug(s"Cancelling $describe: $e") }
  }

  private def failed(error: Throwable): Unit = {
    drop()
    val cause = SubscriptionErrors.unwrap(error)
    SubscriptionErrors.classify(cause, shardId) match {
      case Fatal =>
        SubscriptionErrors.consumerFailure(cause, consumerArn, shardId).foreach(e => throw e)
        throw new SubscriptionFailed(
          s"SubscribeToShard failed for $describe at $resumeFrom: $cause. This error is not one a renewed " +
            "subscription can fix (see SubscriptionErrors for the recoverable ones).",
          cause
        )
      case ShardGone => throw new SubscribedShardGone(s"$describe: ${cause.getMessage}", cause)
      case verdict @ (InUse | Transient) =>
        failuresInARow += 1
        if (failuresInARow > settings.maxRetries) {
          SubscriptionErrors.consumerFailure(cause, consumerArn, shardId).foreach(e => throw e)
          throw new SubscriptionFailed(
            s"SubscribeToShard failed $failuresInARow times in a row for $describe at $resumeFrom; last error: " +
              s"$cause. Renewals are limited by kinesis.subscribeToShard.maxRetries (${settings.maxRetries}).",
            cause
          )
        }
        renewals += 1
        val backoff = verdict match {
          // The subscription in use may be someone else's (an earlier task's, on another executor) whose start is
          // unknown: wait one more second per attempt, up to the full gap (and at least the gap after our own).
          case InUse => math.min(settings.inUseGapMs, 1000L * failuresInARow)
          case _ => Backoff(settings.retryBaseMs, settings.retryMaxMs).delayMs(failuresInARow)
        }
        log.warn(s"$describe failed ($cause); renewing it from $resumeFrom (attempt $failuresInARow)")
        waitForGap(backoff)
    }
  }

  /** Waits at least `minMs`, and until `inUseGapMs` has passed since the last accepted subscription. */
  private def waitForGap(minMs: Long): Unit = {
    val sinceAccepted = lastAcceptedNanos.map(at => (nanoTime() - at) / Million).getOrElse(Long.MaxValue)
    val waitMs = math.max(minMs, settings.inUseGapMs - sinceAccepted)
    if (waitMs > 0) sleep(waitMs)
  }
}

private[sparkkinesis] object ShardSubscription {
  private val Million = 1000000L

  private sealed trait Signal { def generation: Long }
  private final case class Started(generation: Long, handle: SubscriptionHandle) extends Signal
  private final case class Delivered(generation: Long, event: SubscriptionEvent) extends Signal
  private final case class Ended(generation: Long) extends Signal
  private final case class Failed(generation: Long, error: Throwable) extends Signal
}
