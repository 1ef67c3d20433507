package io.sparkkinesis.reader

import java.util.concurrent.ThreadLocalRandom

import io.sparkkinesis.client._
import org.slf4j.LoggerFactory

/**
 * Fetches with GetShardIterator and GetRecords. Keeps one iterator per task; calls GetRecords no more often than
 * `fetchIntervalMs` (and, with `maxBytesPerSecond`, no sooner than the bytes of the previous call allow); on throttling waits a jittered, growing delay; renews an expired iterator from the last record it
 * returned. With `maxBytesPerSecond`, `carriedPacing` (what the previous task on
 * this executor left, see [[ShardIteratorCache]]) delays this task's first call too. Resuming inside an aggregate starts AT that record's sequence number (the reader skips what it had).
 */
final class PollingFetcher(
    client: ShardRecordsClient,
    spec: ShardReadSpec,
    fetchIntervalMs: Long,
    maxBackoffMs: Long,
    sleep: Long => Unit = Thread.sleep,
    nanoTime: () => Long = () => System.nanoTime(),
    reusedIterator: Option[String] = None,
    maxBytesPerSecond: Option[Double] = None,
    carriedPacing: Option[FetchPacing] = None
) extends RecordFetcher {
  private val log = LoggerFactory.getLogger(classOf[PollingFetcher])
  private var iterator: Option[String] = reusedIterator
  private var lastSequence: Option[String] = None
  // The previous task's last call on this shard counts for the rate (not for fetchIntervalMs) until this task calls.
  private var lastCallNanos: Option[Long] = carriedPacing.map(_.lastCallNanos)
  private var calledThisTask = false
  // The least time until the next call that keeps the bytes read under maxBytesPerSecond.
  private var rateWaitMs = carriedPacing.map(_.waitMs).getOrElse(0L)
  private var throttledInARow = 0

  private def iteratorStart: IteratorStart = lastSequence match {
    case Some(seq) => IteratorStart.AfterSequence(seq)
    case None => ShardPosition.iteratorStart(spec.start)
  }

  def fetch(limit: Int): FetchOutcome = {
    var expiredInARow = 0
    while (true)
      try {
        val current = iterator.getOrElse {
          val fresh = client.getShardIterator(spec.streamName, spec.shardId, iteratorStart)
          iterator = Some(fresh)
          fresh
        }
        pace()
        val response = client.getRecords(current, limit)
        throttledInARow = 0
        iterator = response.nextIterator
        response.records.lastOption.foreach(r => lastSequence = Some(r.sequenceNumber))
        maxBytesPerSecond.foreach { rate =>
          val bytes = response.records.iterator.map(_.data.length.toLong).sum
          rateWaitMs = math.ceil(bytes * 1000.0 / rate).toLong
        }
        return FetchOutcome.Fetched(
          response.records,
          response.millisBehindLatest,
          response.nextIterator.isEmpty,
          response.childShards
        )
      } catch {
        case _: ThroughputExceeded =>
          throttledInARow += 1
          val ceiling =
            math.min(maxBackoffMs, math.max(fetchIntervalMs, 100L) << math.min(throttledInARow, 16))
          sleep(ThreadLocalRandom.current().nextLong(ceiling / 2, ceiling + 1))
          return FetchOutcome.Throttled
        case e: IteratorExpired =>
          expiredInARow += 1
          if (expiredInARow > 3) throw e
          log.info(s"Iterator of ${spec.describe} expired; renewing it from $iteratorStart")
          iterator = None
        case e: ShardNotFound =>
          return FetchOutcome.Gone(e.getMessage)
      }
    throw new IllegalStateException("unreachable")
  }

  /** The iterator that continues right after the last record returned (or at the start, before any fetch). */
  def continuation: Option[String] = iterator

  /** Runs another read call on the same shard (the run-bound probe) within the same pacing as GetRecords. */
  def paced[T](call: => T): T = {
    pace()
    call
  }

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
