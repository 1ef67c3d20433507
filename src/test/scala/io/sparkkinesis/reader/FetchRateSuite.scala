package io.sparkkinesis.reader

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
}
