package io.sparkkinesis.reader.efo

import java.nio.charset.StandardCharsets.UTF_8

import io.sparkkinesis.client._
import io.sparkkinesis.reader._
import io.sparkkinesis.reader.ShardPosition.TrimHorizon
import org.scalatest.funsuite.AnyFunSuite

/**
 * A fan-out read of a `Trigger.AvailableNow` run ([[PolledChecks]]): subscription events are the pages, the run's
 * pinned LATEST iterator confirms them, and "caught up" counts as the tip only when a GetRecords call right after the
 * delivered records finds none. The shard is a [[FakeShard]] (GetShardIterator, GetRecords); the subscription serves
 * events built from its records, pushed when each test says.
 */
class EfoAvailableNowSuite extends AnyFunSuite {
  private val Full = HashKeyRange(0, BigInt(2).pow(128) - 1)

  private def texts(prefix: String, n: Int) = (0 until n).map(i => s"$prefix$i")

  private def event(records: Seq[KinesisRecord], behind: Long = 0L) =
    SubscriptionEvent(records, Some(records.lastOption.fold("0")(_.sequenceNumber)), Some(behind), Nil)

  /** One shard, one subscription to it (accepted, pushing only what `push` offers), one fetcher on it. */
  private final class Setup {
    val shard = new FakeShard
    // Events pushed before the first subscription are served as soon as it is accepted.
    private var early = Vector.empty[SubscriptionEvent]
    val service = new FakeSubscriptionClient(0, script = call => { call.accept(); call.offer(early: _*) })

    val fetcher = new EfoFetcher(
      new ShardSubscription(
        service,
        "arn:c",
        shard.shardId,
        IteratorStart.TrimHorizon,
        SubscriptionSettings(5000, 1)
      ),
      1000
    )

    def push(events: SubscriptionEvent*): Unit =
      if (service.calls.isEmpty) early ++= events else service.calls.last.offer(events: _*)

    def pin(): String = shard.getShardIterator(shard.streamName, shard.shardId, IteratorStart.Latest)

    /** Reads one task from `start` under `bound` with the checks of an AvailableNow task. */
    def task(bound: RunBound, start: ShardPosition = TrimHorizon): (Seq[String], ShardReader) = {
      val s =
        ShardReadSpec(shard.streamName, shard.shardId, start, Full, 1000L, None, 100, true, 3, bound = bound)
      val checks = Some(new PolledChecks(shard, shard.streamName, shard.shardId))
      val reader = new ShardReader(
        s,
        fetcher.beginTask(replaying = false, checks = checks),
        None,
        probe = fetcher.tipProbe
      )
      val out = Vector.newBuilder[String]
      while (reader.next()) out += new String(reader.current._2.data, UTF_8)
      (out.result(), reader)
    }
  }

  test(
    "a subscription caught up before the start is not the end: the check finds what it has not pushed yet"
  ) {
    val t = new Setup
    val a = t.shard.putText(texts("a", 5): _*)
    t.push(event(a)) // 0 ms behind, written before the records below were put
    val b = t.shard.putText(texts("b", 3): _*)
    val tip = t.pin()
    val (first, r1) = t.task(RunBound.Pending(tip))
    assert(first == texts("a", 5))
    assert(!r1.runOutcome.get.reached, "records with zero lag may be followed by more")
    // The old rule: a caught-up subscription with nothing buffered is at the tip, though b0..b2 were never pushed.
    val unchecked = t.fetcher.beginTask(replaying = false)
    assert(unchecked.fetch(100) == FetchOutcome.Fetched(Nil, Some(0L), shardEnded = false, Nil))
    // With the check: it finds b0 after a4, so the task waits for the subscription, which pushes b0..b2 (and later
    // records put after the start, which the pinned probe cuts off).
    val c = t.shard.putText(texts("c", 2): _*)
    t.shard.onGetRecords = () => if (t.shard.getRecordsCalls == 2) t.push(event(b ++ c))
    val (second, r2) = t.task(r1.runOutcome.get.bound, r1.result.end)
    assert(second == texts("b", 3))
    assert(r2.runOutcome.get == RunOutcome(RunBound.Before(c.head.sequenceNumber), reached = true))
    // The probe after a0..a4, then the check (GetShardIterator + GetRecords) and the probe after b0..c1.
    assert(t.shard.getRecordsCalls == 3 && t.shard.iteratorStarts.count(_ != IteratorStart.Latest) == 1)
    assert(t.fetcher.calls(KinesisApi.GetRecords) == 2 && t.fetcher.calls(KinesisApi.GetShardIterator) == 1)
  }

  test(
    "with nothing put after the start, a check that finds nothing after the delivered records ends the shard"
  ) {
    val t = new Setup
    val a = t.shard.putText(texts("a", 4): _*)
    val tip = t.pin()
    t.push(event(a.take(2), behind = 10L), event(a.drop(2)))
    val (first, r1) = t.task(RunBound.Pending(tip))
    assert(first == texts("a", 4))
    val (second, r2) = t.task(r1.runOutcome.get.bound, r1.result.end)
    assert(second.isEmpty)
    assert(r2.runOutcome.get.reached && r2.result.reachedTip)
    assert(t.shard.iteratorStarts.last == IteratorStart.AfterSequence(a.last.sequenceNumber))
  }

  test("a shard whose subscription delivers no record still reaches its bound") {
    val t = new Setup
    val tip = t.pin()
    t.push(event(Nil))
    val (read, r) = t.task(RunBound.Pending(tip))
    assert(read.isEmpty && r.runOutcome.get.reached)
    assert(t.fetcher.calls(KinesisApi.GetRecords) == 1, "one check, no probe: nothing was held")
  }

  test("a shard closed after the start, whose subscription never sends its last event, ends at the check") {
    val t = new Setup
    val a = t.shard.putText(texts("a", 3): _*)
    val tip = t.pin()
    t.push(event(a))
    val (first, r1) = t.task(RunBound.Pending(tip))
    assert(first == texts("a", 3))
    t.shard.closed = true
    val (second, r2) = t.task(r1.runOutcome.get.bound, r1.result.end)
    assert(second.isEmpty && r2.result.finished && r2.runOutcome.get.reached)
  }

  test("a throttled check is no tip: the task waits for the next event and checks again") {
    val t = new Setup
    val a = t.shard.putText(texts("a", 2): _*)
    val tip = t.pin()
    t.push(event(a))
    val (_, r1) = t.task(RunBound.Pending(tip))
    t.shard.throttleNext = 1
    t.shard.onGetRecords = () => if (t.shard.getRecordsCalls == 2) t.push(event(Nil))
    val (second, r2) = t.task(r1.runOutcome.get.bound, r1.result.end)
    assert(second.isEmpty && r2.runOutcome.get.reached)
    assert(t.shard.getRecordsCalls == 3, "the probe, the throttled check, the check after the next event")
  }
}
