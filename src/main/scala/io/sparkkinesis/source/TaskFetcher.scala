package io.sparkkinesis.source

import io.sparkkinesis.client.{SdkSubscriptionClient, ShardRecordsClient}
import io.sparkkinesis.reader._
import io.sparkkinesis.reader.efo._

/**
 * The fetcher a task reads its shard with: the one the previous task on this executor left when it starts exactly
 * where that task ended (a live subscription, or a shard iterator), otherwise a new one.
 *
 * @param handOff
 *   leaves the fetcher for the next task on this executor, positioned at the given end
 * @param probe
 *   the tip probe of a bounded (AvailableNow) run; enhanced fan-out has none (the source refuses AvailableNow with it)
 * @param subscribeCalls
 *   SubscribeToShard calls made for the current task
 * @param keepPacing
 *   leaves where the shard's reads stand against `kinesis.maxFetchRate` for the next task on this executor
 * @param waitUntil
 *   moves the deadline up to which a real-time task's fetch waits at the tip (fan-out; polling paces itself)
 */
private[source] final case class TaskFetcher(
    fetcher: RecordFetcher,
    handOff: ShardPosition => Unit,
    probe: Option[TipProbe],
    subscribeCalls: () => Long,
    keepPacing: () => Unit,
    waitUntil: Long => Unit
)

private[source] object TaskFetcher {

  /**
   * @param followTip
   *   a real-time task: a caught-up fan-out fetch waits for the next push until the deadline the task sets with
   *   `EfoFetcher.waitUntil`, instead of returning nothing at once
   */
  def open(
      p: KinesisInputPartition,
      spec: ShardReadSpec,
      client: ShardRecordsClient,
      replaying: Boolean,
      followTip: Boolean = false
  ): TaskFetcher = p.efo match {
    case Some(efo) =>
      val key = SubscriptionCache.Key(p.client.endpointUrl, efo.consumerArn, p.shardId)
      val cached = SubscriptionCache.take(key, p.start).filter { f =>
        val usable = EfoFetcher.usableFor(f, p.shardClosed)
        if (!usable) f.close()
        usable
      }
      val f = cached.getOrElse {
        val settings = SubscriptionSettings(efo.timeoutMs, efo.maxRetries)
        // Leased for as long as the fetcher lives (cached between batches included).
        val subscriptions = SdkSubscriptionClient.acquire(p.client, efo.httpProtocol)
        new EfoFetcher(
          new ShardSubscription(
            subscriptions.value,
            efo.consumerArn,
            p.shardId,
            ShardPosition.iteratorStart(p.start),
            settings
          ),
          efo.timeoutMs,
          subscribedKnowingClosed = p.shardClosed,
          release = () => subscriptions.close()
        )
      }
      f.beginTask(
        replaying = replaying,
        shardClosed = p.shardClosed,
        deadlineNanos =
          p.maxTimeMs.map(ms => System.nanoTime() + math.min(ms, Long.MaxValue / 2000000L) * 1000000L),
        followTip = followTip
      )
      TaskFetcher(
        f,
        end => SubscriptionCache.put(key, end, f),
        None,
        () => f.subscribeCallsThisTask,
        () => (),
        f.waitUntil
      )
    case None =>
      def cacheKey(position: ShardPosition) =
        ShardIteratorCache.Key(p.client.endpointUrl, p.streamName, p.shardId, position)
      val shardRef = ShardIteratorCache.ShardRef(p.client.endpointUrl, p.streamName, p.shardId)
      val f = new PollingFetcher(
        client,
        spec,
        p.fetchIntervalMs,
        p.client.retryMaxDelayMs,
        reusedIterator = ShardIteratorCache.take(cacheKey(p.start)),
        maxBytesPerSecond = p.maxFetchRateMBps.map(_ * 1000000.0),
        carriedPacing = p.maxFetchRateMBps.flatMap(_ => ShardIteratorCache.takePacing(shardRef))
      )
      val direct = TipProbe(client)
      val paced: TipProbe = iterator => f.paced(direct.poll(iterator))
      TaskFetcher(
        f,
        end => f.continuation.foreach(ShardIteratorCache.put(cacheKey(end), _)),
        Some(paced),
        () => 0L,
        // However the task ended, the next task on this shard here keeps to kinesis.maxFetchRate.
        () => if (p.maxFetchRateMBps.isDefined) f.pacing.foreach(ShardIteratorCache.putPacing(shardRef, _)),
        _ => ()
      )
  }
}
