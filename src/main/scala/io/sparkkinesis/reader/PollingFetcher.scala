package io.sparkkinesis.reader

import io.sparkkinesis.client._
import io.sparkkinesis.errors.KinesisErrors
import org.slf4j.LoggerFactory

/**
 * Fetches with GetShardIterator and GetRecords. Keeps one iterator per read; calls GetRecords no more often than
 * `fetchIntervalMs` (and, with `maxBytesPerSecond`, no sooner than the bytes of the previous call allow, the first
 * call too after `carriedPacing`, see [[ShardIteratorCache]]); on throttling waits a jittered, growing delay; renews
 * an expired iterator from the last record it returned. Inside an aggregate it resumes AT that record.
 */
private[sparkkinesis] final class PollingFetcher(
    shardRecords: ShardRecordsClient,
    val spec: ShardReadSpec,
    fetchIntervalMs: Long,
    maxBackoffMs: Long,
    sleep: Long => Unit = Thread.sleep,
    nanoTime: () => Long = () => System.nanoTime(),
    reusedIterator: Option[String] = None,
    maxBytesPerSecond: Option[Double] = None,
    carriedPacing: Option[FetchPacing] = None
) extends RecordFetcher {
  private val log = LoggerFactory.getLogger(classOf[PollingFetcher])
  private val counted = new ApiCallCounter
  private val client = CountingClients.records(shardRecords, counted)
  private var iterator: Option[String] = reusedIterator
  private var lastSequence: Option[String] = None
  // The previous task's last call on this shard counts for the rate (not for fetchIntervalMs) until this task calls.
  private var lastCallNanos: Option[Long] = carriedPacing.map(_.lastCallNanos)
  private var calledThisTask = false
  // The least time until the next call that keeps the bytes read under maxBytesPerSecond.
  private var rateWaitMs = carriedPacing.map(_.waitMs).getOrElse(0L)
  private var throttledInARow = 0
  private val backoff = PollingFetcher.throttleBackoff(fetchIntervalMs, maxBackoffMs)

  private def iteratorStart: IteratorStart =
    lastSequence.fold(ShardPosition.iteratorStart(spec.start))(IteratorStart.AfterSequence)

  def fetch(limit: Int): FetchOutcome = {
    var expiredInARow = 0
    while (true)
      try {
        if (iterator.isEmpty)
          iterator = Some(client.getShardIterator(spec.streamName, spec.shardId, iteratorStart))
        pace()
        val page = client.getRecords(iterator.get, limit)
        throttledInARow = 0
        iterator = page.nextIterator
        page.records.lastOption.foreach(r => lastSequence = Some(r.sequenceNumber))
        maxBytesPerSecond.foreach { rate =>
          val bytes = page.records.iterator.map(_.data.length.toLong).sum
          rateWaitMs = math.ceil(bytes * 1000.0 / rate).toLong
        }
        return FetchOutcome.Fetched(page.records, page.millisBehindLatest, iterator.isEmpty, page.childShards)
      } catch {
        case _: ThroughputExceeded =>
          throttledInARow += 1
          sleep(backoff.delayMs(throttledInARow))
          return FetchOutcome.Throttled
        case e: IteratorExpired =>
          expiredInARow += 1
          if (expiredInARow > 3) throw e
          log.info(s"Iterator of ${spec.describe} expired; renewing it from $iteratorStart")
          iterator = None
        case e: ShardNotFound => return FetchOutcome.Gone(e.getMessage)
      }
    throw KinesisErrors.internal("unreachable")
  }

  /** The iterator that continues right after the last record returned (or at the start, before any fetch). */
  def continuation: Option[String] = iterator

  def calls(api: String): Long = counted.get(api)

  /** The run-bound probe: a GetRecords call on this fetcher's client, within the same pacing as its fetches. */
  val probe: TipProbe = {
    val direct = TipProbe(client)
    iterator => {
      pace()
      direct.poll(iterator)
    }
  }

  override def tipProbe: Option[TipProbe] = Some(probe)

  /** Where this shard's reads stand against the rate, for the next task on this executor. */
  def pacing: Option[FetchPacing] = lastCallNanos.map(FetchPacing(_, rateWaitMs))

  private def pace(): Unit = {
    lastCallNanos.foreach { last =>
      val interval = if (calledThisTask) fetchIntervalMs else 0L
      val waitMs = math.max(interval, rateWaitMs) - (nanoTime() - last) / 1000000L
      if (waitMs > 0) sleep(waitMs)
    }
    // The wait the previous call's bytes owed is paid; this call owes what it returns (a probe's record: nothing).
    rateWaitMs = 0L
    calledThisTask = true
    lastCallNanos = Some(nanoTime())
  }

  def close(): Unit = ()
}

private[sparkkinesis] object PollingFetcher {

  /** The wait after a throttled call: from twice the fetch interval (at least 200 ms), doubling up to `maxMs`. */
  def throttleBackoff(fetchIntervalMs: Long, maxMs: Long): Backoff =
    Backoff(2 * math.max(fetchIntervalMs, 100L), maxMs)
}

/**
 * Opens a [[PollingFetcher]] per shard read, on a task's shared `client`. A read that starts where the previous read
 * of the shard on this executor ended takes over its shard iterator; with `maxBytesPerSecond`, each read of a shard
 * keeps to the pacing the previous one left (both kept in [[ShardIteratorCache]] under `endpoint`).
 */
private[sparkkinesis] final class PollingFetchers(
    client: ShardRecordsClient,
    endpoint: String,
    fetchIntervalMs: Long,
    maxBackoffMs: Long,
    maxBytesPerSecond: Option[Double]
) extends FetcherFactory {
  type Fetcher = PollingFetcher

  private def shard(spec: ShardReadSpec) =
    ShardIteratorCache.ShardRef(endpoint, spec.streamName, spec.shardId)

  private def key(spec: ShardReadSpec, position: ShardPosition) =
    ShardIteratorCache.Key(endpoint, spec.streamName, spec.shardId, position)

  def open(read: ShardRead): PollingFetcher = {
    val spec = read.spec
    new PollingFetcher(
      client,
      spec,
      fetchIntervalMs,
      maxBackoffMs,
      reusedIterator = ShardIteratorCache.take(key(spec, spec.start)),
      maxBytesPerSecond = maxBytesPerSecond,
      carriedPacing = maxBytesPerSecond.flatMap(_ => ShardIteratorCache.takePacing(shard(spec)))
    )
  }

  def release(fetcher: PollingFetcher, end: Option[ShardPosition]): Unit =
    try {
      for (position <- end; iterator <- fetcher.continuation)
        ShardIteratorCache.put(key(fetcher.spec, position), iterator)
      // However the read ended, the next read of this shard here keeps to kinesis.maxFetchRate.
      if (maxBytesPerSecond.isDefined)
        fetcher.pacing.foreach(ShardIteratorCache.putPacing(shard(fetcher.spec), _))
    } finally fetcher.close()
}
