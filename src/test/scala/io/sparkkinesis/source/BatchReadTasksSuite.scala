package io.sparkkinesis.source

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicInteger

import org.scalatest.funsuite.AnyFunSuite

/** The planning helper of batch reads: ends pinned in parallel. */
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
}
