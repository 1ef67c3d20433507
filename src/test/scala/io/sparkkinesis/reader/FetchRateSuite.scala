package io.sparkkinesis.reader

import io.sparkkinesis.client.HashKeyRange
import io.sparkkinesis.reader.ShardPosition.TrimHorizon
import org.scalatest.funsuite.AnyFunSuite

/** `kinesis.maxFetchRate`: the polling fetcher spaces its GetRecords calls by the bytes each one returned. */
class FetchRateSuite extends AnyFunSuite {
  private val Full = HashKeyRange(0, BigInt(2).pow(128) - 1)

  private def read(shard: FakeShard, rate: Option[Double], fetchIntervalMs: Long): (Int, FakeClock) = {
    val spec = ShardReadSpec(shard.streamName, shard.shardId, TrimHorizon, Full, 1000L, None, 10, true, 3)
    val clock = new FakeClock
    val fetcher =
      new PollingFetcher(shard, spec, fetchIntervalMs, 1000L, clock.sleep, () => clock.nanoTime(), None, rate)
    val reader = new ShardReader(spec, fetcher, None, () => clock.nanoTime())
    var n = 0
    // Each GetRecords call takes 10 ms of the fake clock.
    shard.onGetRecords = () => clock.advanceMs(10)
    while (reader.next()) n += 1
    (n, clock)
  }

  test("bytes over time stay under the rate: after a call of B bytes the next waits B / rate") {
    val shard = new FakeShard
    (0 until 50).foreach(_ => shard.put(Array.fill[Byte](1000)(1), "k")) // five calls of 10 000 bytes
    val start = new FakeClock().nanoTime()
    val (n, clock) = read(shard, Some(20000.0), 0L)
    assert(n == 50)
    val elapsedMs = (clock.nanoTime() - start) / 1000000L
    // 50 000 bytes at 20 000 B/s: the four calls after the first each wait until 500 ms after the one before.
    assert(clock.sleeps.sum >= 4 * 490)
    assert(50000.0 / (elapsedMs / 1000.0) <= 20000.0 * 5 / 4 + 1e-6, s"$elapsedMs ms")
  }

  test("fetchIntervalMs still applies when it is the longer wait, and no rate means no wait") {
    val shard = new FakeShard
    (0 until 30).foreach(_ => shard.put(Array.fill[Byte](10)(1), "k"))
    val (_, slowClock) = read(shard, Some(1000000.0), 200L)
    assert(slowClock.sleeps.nonEmpty && slowClock.sleeps.forall(_ >= 190))
    val other = new FakeShard
    (0 until 30).foreach(_ => other.put(Array.fill[Byte](10000)(1), "k"))
    val (_, freeClock) = read(other, None, 0L)
    assert(freeClock.sleeps.isEmpty)
  }

  /**
   * Reads `batches` batches of `perBatch` records, one task (one fetcher) each, as the partition reader does: each
   * task takes the iterator and the pacing the previous one left in [[ShardIteratorCache]] (or, with `carry` off,
   * only the iterator). Returns the fake-clock times of the GetRecords calls.
   */
  private def smallBatches(shard: FakeShard, batches: Int, perBatch: Long, rate: Double, carry: Boolean) = {
    val clock = new FakeClock
    val ref = ShardIteratorCache.ShardRef("fake", shard.streamName, shard.shardId)
    ShardIteratorCache.takePacing(ref)
    val calls = scala.collection.mutable.ArrayBuffer[Long]()
    shard.onGetRecords = () => { calls += clock.nanoTime(); clock.advanceMs(10) }
    var position: ShardPosition = TrimHorizon
    var iterator: Option[String] = None
    var read = 0
    for (_ <- 0 until batches) {
      val spec = ShardReadSpec(shard.streamName, shard.shardId, position, Full, perBatch, None, 100, true, 3)
      val pacing = if (carry) ShardIteratorCache.takePacing(ref) else None
      val fetcher = new PollingFetcher(
        shard,
        spec,
        200L,
        1000L,
        clock.sleep,
        () => clock.nanoTime(),
        iterator,
        Some(rate),
        pacing
      )
      val reader = new ShardReader(spec, fetcher, None, () => clock.nanoTime())
      while (reader.next()) read += 1
      position = reader.result.end
      iterator = fetcher.continuation
      fetcher.pacing.foreach(ShardIteratorCache.putPacing(ref, _))
      clock.advanceMs(5) // the driver plans the next batch
    }
    (read, calls.toSeq)
  }

  test("many small batches keep to the rate: each task's first call waits for what the previous task read") {
    val shard = new FakeShard
    (0 until 200).foreach(_ => shard.put(Array.fill[Byte](1000)(1), "k"))
    val rate = 20000.0 // bytes per second: one batch of 10 000 bytes every 500 ms
    val (read, calls) = smallBatches(shard, 20, 10L, rate, carry = true)
    assert(read == 200 && calls.size == 20)
    // Every call but the last returned 10 000 bytes; those must have taken at least bytes / rate.
    val spanMs = (calls.last - calls.head) / 1000000.0
    val measured = 19 * 10000.0 / (spanMs / 1000.0)
    assert(measured <= rate * 1.001, s"$measured B/s over $spanMs ms")
    calls.sliding(2).foreach { case Seq(a, b) => assert((b - a) / 1000000L >= 500L) }
  }

  test(
    "without carrying the pacing between tasks, small batches escape the rate (what the test above guards)"
  ) {
    val shard = new FakeShard
    (0 until 200).foreach(_ => shard.put(Array.fill[Byte](1000)(1), "k"))
    val (_, calls) = smallBatches(shard, 20, 10L, 20000.0, carry = false)
    val spanMs = (calls.last - calls.head) / 1000000.0
    assert(19 * 10000.0 / (spanMs / 1000.0) > 20000.0 * 10)
  }

  test("carried pacing delays only by the rate: fetchIntervalMs starts again with each task") {
    val shard = new FakeShard
    (0 until 20).foreach(_ => shard.put(Array.fill[Byte](10)(1), "k"))
    // 100 bytes per batch at 1 MB/s: 0 ms owed, so each task calls at once despite fetchIntervalMs = 200.
    val (read, calls) = smallBatches(shard, 2, 10L, 1000000.0, carry = true)
    assert(read == 20 && (calls(1) - calls(0)) / 1000000L == 15L)
  }

  test("a paced probe pays the wait the bytes before it owed; the next call does not wait for them again") {
    val shard = new FakeShard
    (0 until 20).foreach(_ => shard.put(Array.fill[Byte](1000)(1), "k"))
    val clock = new FakeClock
    val spec = ShardReadSpec(shard.streamName, shard.shardId, TrimHorizon, Full, 1000L, None, 10, true, 3)
    val fetcher =
      new PollingFetcher(shard, spec, 0L, 1000L, clock.sleep, () => clock.nanoTime(), None, Some(20000.0))
    assert(fetcher.fetch(10).isInstanceOf[FetchOutcome.Fetched]) // 10 000 bytes: the next call waits 500 ms
    fetcher.probe.poll(fetcher.continuation.get)
    assert(clock.sleeps == Seq(500L))
    assert(fetcher.fetch(10).isInstanceOf[FetchOutcome.Fetched])
    assert(clock.sleeps == Seq(500L), "the probe already paid the wait")
    fetcher.probe.poll(fetcher.continuation.get)
    assert(clock.sleeps == Seq(500L, 500L))
  }
}
