package io.sparkkinesis.source

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicInteger

import org.scalatest.funsuite.AnyFunSuite

/** The planning helpers of grouped batch reads: ends pinned in parallel, task metrics over several shards. */
class BatchReadTasksSuite extends AnyFunSuite {

  test("ends are pinned in parallel, at most PinningThreads at once, in the order of the shards") {
    val running = new AtomicInteger()
    val most = new AtomicInteger()
    val threads = ConcurrentHashMap.newKeySet[String]()
    val out = KinesisBatch.inParallel(0 until 64) { i =>
      val now = running.incrementAndGet()
      most.accumulateAndGet(now, math.max)
      threads.add(Thread.currentThread().getName)
      Thread.sleep(5)
      running.decrementAndGet()
      i * 2
    }
    assert(out == (0 until 64).map(_ * 2))
    assert(most.get() > 1 && most.get() <= KinesisBatch.PinningThreads, most.get())
    assert(!threads.contains(Thread.currentThread().getName))
    assert(
      KinesisBatch.inParallel(Seq(7))(_ + 1) == Seq(8),
      "a single shard is pinned on the caller's thread"
    )
  }

  test("a failure to pin one end is thrown as it was, not wrapped") {
    val e = intercept[IllegalStateException] {
      KinesisBatch.inParallel(0 until 8)(i => if (i == 5) throw new IllegalStateException("shard 5") else i)
    }
    assert(e.getMessage == "shard 5")
  }

  test("a task's metrics over several shards: records, bytes and throttles add up; the lag is the largest") {
    def values(records: Long, bytes: Long, throttles: Long, lag: Long) = Array(
      KinesisTaskMetrics.task(KinesisTaskMetrics.RecordsRead, records),
      KinesisTaskMetrics.task(KinesisTaskMetrics.BytesRead, bytes),
      KinesisTaskMetrics.task(KinesisTaskMetrics.ThrottledCalls, throttles),
      KinesisTaskMetrics.task(KinesisTaskMetrics.MillisBehindLatest, lag)
    )
    val first = KinesisTaskMetrics.addUp(Map.empty, values(10, 100, 1, 500))
    val both = KinesisTaskMetrics.addUp(first, values(5, 50, 0, 200))
    assert(
      both == Map(
        KinesisTaskMetrics.RecordsRead -> 15L,
        KinesisTaskMetrics.BytesRead -> 150L,
        KinesisTaskMetrics.ThrottledCalls -> 1L,
        KinesisTaskMetrics.MillisBehindLatest -> 500L
      )
    )
  }
}
