package io.sparkkinesis.reader

import java.nio.charset.StandardCharsets.UTF_8
import java.util.concurrent.{ConcurrentLinkedQueue, Executors, LinkedBlockingQueue}

import scala.jdk.CollectionConverters._

import io.sparkkinesis.client.{HashKeyRange, IteratorStart}
import io.sparkkinesis.reader.ShardPosition.{After, TrimHorizon}
import org.scalatest.funsuite.AnyFunSuite

/** The shard reader's Trigger.AvailableNow bounds and byte limit, against a fake shard speaking GetRecords. */
class RunBoundReaderSuite extends AnyFunSuite {
  private val Full = HashKeyRange(0, BigInt(2).pow(128) - 1)

  private def spec(
      shard: FakeShard,
      start: ShardPosition = TrimHorizon,
      maxRecords: Long = 1000L,
      recordsPerFetch: Int = 4,
      maxBytes: Option[Long] = None,
      bound: RunBound = RunBound.Unbounded
  ) = ShardReadSpec(
    shard.streamName,
    shard.shardId,
    start,
    Full,
    maxRecords,
    None,
    recordsPerFetch,
    failOnDataLoss = true,
    maxConsecutiveThrottles = 3,
    maxBytes = maxBytes,
    bound = bound
  )

  private def reader(shard: FakeShard, s: ShardReadSpec, replay: Option[ShardEnd] = None) = {
    val clock = new FakeClock
    val fetcher = new PollingFetcher(shard, s, 0L, 1000L, clock.sleep, () => clock.nanoTime())
    new ShardReader(s, fetcher, replay, () => clock.nanoTime(), probe = Some(TipProbe(shard)))
  }

  private def drain(r: ShardReader): Vector[String] = {
    val out = Vector.newBuilder[String]
    while (r.next()) out += new String(r.current._2.data, UTF_8)
    out.result()
  }

  private def texts(prefix: String, n: Int) = (0 until n).map(i => s"$prefix$i")

  private def latest(shard: FakeShard) =
    shard.getShardIterator(shard.streamName, shard.shardId, IteratorStart.Latest)

  test("a pending bound stops exactly before the first record put after the start, and resolves it") {
    val shard = new FakeShard
    shard.putText(texts("before-", 10): _*)
    val tip = latest(shard)
    val after = shard.putText(texts("after-", 5): _*)
    val r = reader(shard, spec(shard, bound = RunBound.Pending(tip)))
    assert(drain(r) == texts("before-", 10))
    assert(r.runOutcome.contains(RunOutcome(RunBound.Before(after.head.sequenceNumber), reached = true)))
    assert(!r.endsOnFetchBoundary, "the page holding later records was cut")
  }

  test(
    "with fetches on a thread of their own, the probe confirming the held pages runs there after the last fetch"
  ) {
    val shard = new FakeShard
    shard.putText(texts("before-", 10): _*)
    val tip = latest(shard)
    val after = shard.putText(texts("after-", 5): _*)
    val s = spec(shard, bound = RunBound.Pending(tip))
    val clock = new FakeClock
    val pool = Executors.newSingleThreadExecutor((r: Runnable) => new Thread(r, "test-fetch"))
    val callers = new ConcurrentLinkedQueue[String]()
    shard.onGetRecords = () => callers.add(Thread.currentThread().getName)
    try {
      val done = new LinkedBlockingQueue[Unit]()
      val polling = new PollingFetcher(shard, s, 0L, 1000L, clock.sleep, () => clock.nanoTime())
      val async = new AsyncFetcher(polling, pool, () => done.put(()))
      val r = new ShardReader(s, async, None, () => clock.nanoTime(), probe = async.tipProbe)
      async.confirmAfterFetch(r.probeAfter)
      val out = Vector.newBuilder[String]
      var step = r.advance()
      while (step != ReadStep.Exhausted) {
        if (step == ReadStep.Record) out += new String(r.current._2.data, UTF_8) else done.take()
        step = r.advance()
      }
      assert(out.result() == texts("before-", 10))
      assert(r.runOutcome.contains(RunOutcome(RunBound.Before(after.head.sequenceNumber), reached = true)))
      // 4 pages of 4 up to the tip (held: none is confirmed yet), then one probe, which finds the first record put
      // since the start; the third page is cut at it: all on the fetching thread.
      assert(callers.size == 5)
      assert(callers.asScala.forall(_ == "test-fetch"), callers)
    } finally pool.shutdownNow()
  }

  test("a pending bound with nothing put since the start is reached by an empty fetch at the tip") {
    val shard = new FakeShard
    shard.putText(texts("r", 10): _*)
    val r = reader(shard, spec(shard, bound = RunBound.Pending(latest(shard))))
    assert(drain(r) == texts("r", 10))
    val outcome = r.runOutcome.get
    assert(!outcome.reached, "a page with zero lag may still be followed by records of the same millisecond")
    assert(outcome.bound.isInstanceOf[RunBound.Pending], "still unknown, with a fresh iterator")
    val next = reader(shard, spec(shard, start = r.result.end, bound = outcome.bound))
    assert(drain(next).isEmpty)
    assert(next.runOutcome.get.reached)
  }

  test("records put while a task reads are not read when its probe sees them first") {
    val shard = new FakeShard
    shard.putText(texts("before-", 8): _*)
    val tip = latest(shard)
    // Records arrive after the first page was fetched, before its probe.
    var calls = 0
    shard.onGetRecords = () => {
      calls += 1
      if (calls == 2) shard.putText(texts("late-", 3): _*)
    }
    val r = reader(shard, spec(shard, bound = RunBound.Pending(tip)))
    assert(drain(r) == texts("before-", 8))
    assert(r.runOutcome.get == RunOutcome(RunBound.Before(shard.all(8).sequenceNumber), reached = true))
  }

  test("a limited batch keeps the bound pending and not reached; the next batch goes on to it") {
    val shard = new FakeShard
    shard.putText(texts("before-", 10): _*)
    val tip = latest(shard)
    val first = reader(shard, spec(shard, maxRecords = 6, bound = RunBound.Pending(tip)))
    assert(drain(first) == texts("before-", 6))
    val outcome = first.runOutcome.get
    assert(!outcome.reached)
    shard.putText(texts("after-", 2): _*)
    val second = reader(shard, spec(shard, start = first.result.end, bound = outcome.bound))
    assert(drain(second) == texts("before-", 10).drop(6))
    assert(second.runOutcome.get == RunOutcome(RunBound.Before(shard.all(10).sequenceNumber), reached = true))
  }

  test("a known bound reads nothing at or after it, even inside one page") {
    val shard = new FakeShard
    val rs = shard.putText(texts("r", 10): _*)
    val r = reader(shard, spec(shard, recordsPerFetch = 100, bound = RunBound.Before(rs(7).sequenceNumber)))
    assert(drain(r) == texts("r", 7))
    assert(r.result.end == After(rs(6).sequenceNumber, ShardPosition.WholeRecord))
    assert(r.runOutcome.get.reached)
    assert(shard.getRecordsCalls == 1, "no probe once the bound is known")
  }

  test(
    "a throttled probe ends the batch before the unconfirmed page, so nothing after the start can slip in"
  ) {
    val shard = new FakeShard
    shard.putText(texts("r", 5): _*)
    val tip = latest(shard)
    shard.throttleCalls = Set(3) // the probe after the two pages up to the tip
    val r = reader(shard, spec(shard, bound = RunBound.Pending(tip)))
    assert(drain(r).isEmpty)
    assert(r.result.end == TrimHorizon)
    assert(!r.runOutcome.get.reached)
    assert(!r.endsOnFetchBoundary)
  }

  test("a closed shard with nothing after the start is read to its end") {
    val shard = new FakeShard
    shard.putText(texts("r", 5): _*)
    val tip = latest(shard)
    shard.closed = true
    val r = reader(shard, spec(shard, bound = RunBound.Pending(tip)))
    assert(drain(r) == texts("r", 5))
    assert(r.result.finished)
    assert(r.runOutcome.get.reached)
  }

  test("a replay ignores the run bound and reads to its recorded end") {
    val shard = new FakeShard
    val rs = shard.putText(texts("r", 6): _*)
    val recorded = ShardEnd(After(rs(4).sequenceNumber, -1), false, Nil, 5, Some(0L), false, false)
    val r = reader(shard, spec(shard, bound = RunBound.Before(rs(1).sequenceNumber)), Some(recorded))
    assert(drain(r) == texts("r", 5))
    assert(r.runOutcome.isEmpty)
  }

  test("the byte limit stops before the record that would pass it, but never before the first record") {
    val shard = new FakeShard
    shard.putText(texts("r", 10): _*) // two bytes each
    val r = reader(shard, spec(shard, maxBytes = Some(5L)))
    assert(drain(r) == Seq("r0", "r1"))
    assert(r.bytes == 4)
    val next = reader(shard, spec(shard, start = r.result.end, maxBytes = Some(5L)))
    assert(drain(next) == Seq("r2", "r3"))
    val big = reader(shard, spec(shard, start = next.result.end, maxBytes = Some(1L)))
    assert(drain(big) == Seq("r4"), "a record larger than the share is still read alone")
  }

  test("the byte limit can stop inside a KPL aggregate and the next batch resumes at the next sub-record") {
    val shard = new FakeShard
    shard.putAggregate("a", 5) // sub-records "a.0" .. "a.4", three bytes each
    val r = reader(shard, spec(shard, maxBytes = Some(7L)))
    assert(drain(r) == Seq("a.0", "a.1"))
    val next = reader(shard, spec(shard, start = r.result.end))
    assert(drain(next) == Seq("a.2", "a.3", "a.4"))
  }

  // ---------------------------------------------------------------- user-given places (batch reads, per-shard starts)

  test("a start AT a sequence number includes that record; an AT_SEQUENCE_NUMBER iterator is asked for") {
    val shard = new FakeShard
    val rs = shard.putText(texts("r", 5): _*)
    val r = reader(shard, spec(shard, start = ShardPosition.At(rs(2).sequenceNumber)))
    assert(drain(r) == Seq("r2", "r3", "r4"))
    assert(shard.iteratorStarts.head == IteratorStart.AtSequence(rs(2).sequenceNumber))
  }

  test(
    "a bound inside an aggregate admits exactly its first sub-records; a whole-record bound admits all of it"
  ) {
    val shard = new FakeShard
    shard.putText("r0")
    val agg = shard.putAggregate("a", 5)
    val r2 = shard.putText("r2").head
    val inside = reader(shard, spec(shard, bound = RunBound.Before(agg.sequenceNumber, 3)))
    assert(drain(inside) == Seq("r0", "a.0", "a.1", "a.2"))
    assert(inside.runOutcome.exists(_.reached))
    val whole = reader(shard, spec(shard, bound = RunBound.Before(agg.sequenceNumber, Int.MaxValue)))
    assert(drain(whole) == Seq("r0", "a.0", "a.1", "a.2", "a.3", "a.4"))
    val plain = reader(shard, spec(shard, bound = RunBound.Before(r2.sequenceNumber, 1)))
    assert(drain(plain).last == "r2", "a plain record is one user record")
    // From inside the aggregate (after sub-record 1) to inside it (before sub-record 4).
    val middle = reader(
      shard,
      spec(shard, start = After(agg.sequenceNumber, 1), bound = RunBound.Before(agg.sequenceNumber, 4))
    )
    assert(drain(middle) == Seq("a.2", "a.3"))
  }
}
