package io.sparkkinesis.reader

import java.nio.charset.StandardCharsets.UTF_8

import scala.collection.mutable

import io.sparkkinesis.client._
import io.sparkkinesis.reader.KplAggregates.Entry
import io.sparkkinesis.reader.ShardPosition.{After, TrimHorizon, WholeRecord}
import io.sparkkinesis.testutil.ErrorChecks.assertCondition
import org.scalatest.funsuite.AnyFunSuite

class ShardReaderSuite extends AnyFunSuite {
  private val Max = BigInt(2).pow(128) - 1
  private val Full = HashKeyRange(0, Max)

  private def spec(
      shard: FakeShard,
      start: ShardPosition = TrimHorizon,
      maxRecords: Long = 1000L,
      maxTimeMs: Option[Long] = None,
      recordsPerFetch: Int = 100,
      failOnDataLoss: Boolean = true,
      range: HashKeyRange = Full,
      maxThrottles: Int = 3
  ) = ShardReadSpec(
    shard.streamName,
    shard.shardId,
    start,
    range,
    maxRecords,
    maxTimeMs,
    recordsPerFetch,
    failOnDataLoss,
    maxThrottles
  )

  private final class Run(val reader: ShardReader, val fetcher: PollingFetcher, val clock: FakeClock) {

    /** Reads to the end of the batch; the data of every record emitted, as text. */
    def drain(): Vector[String] = {
      val out = Vector.newBuilder[String]
      while (reader.next()) out += new String(reader.current._2.data, UTF_8)
      out.result()
    }
    def result: ShardEnd = reader.result
  }

  private def run(
      shard: FakeShard,
      s: ShardReadSpec,
      replay: Option[ShardEnd] = None,
      fetchIntervalMs: Long = 0L,
      maxBackoffMs: Long = 10000L,
      clock: FakeClock = new FakeClock,
      reuse: Option[String] = None
  ): Run = {
    val fetcher =
      new PollingFetcher(shard, s, fetchIntervalMs, maxBackoffMs, clock.sleep, () => clock.nanoTime(), reuse)
    new Run(new ShardReader(s, fetcher, replay, () => clock.nanoTime()), fetcher, clock)
  }

  private def texts(prefix: String, n: Int) = (0 until n).map(i => s"$prefix$i")
  private def after(r: KinesisRecord, sub: Int = WholeRecord) = After(r.sequenceNumber, sub)

  // ---------------------------------------------------------------- the tip

  test("caught up: one GetRecords reads everything, reports zero lag, and ends the batch at the tip") {
    val shard = new FakeShard
    val rs = shard.putText(texts("r", 5): _*)
    val r = run(shard, spec(shard))
    assert(r.drain() == texts("r", 5))
    assert(shard.getRecordsCalls == 1)
    assert(shard.iteratorStarts == Seq(IteratorStart.TrimHorizon))
    assert(r.result == ShardEnd(after(rs.last), false, Nil, 5L, Some(0L), reachedTip = true, lost = false))
    assert(r.reader.current._1 == rs.last)
  }

  test("nothing new: one GetRecords, no record, and the end is the start") {
    val shard = new FakeShard
    val rs = shard.putText("a", "b")
    val r = run(shard, spec(shard, start = after(rs.last)))
    assert(r.drain().isEmpty)
    assert(shard.getRecordsCalls == 1)
    assert(shard.iteratorStarts == Seq(IteratorStart.AfterSequence(rs.last.sequenceNumber)))
    assert(
      r.result.end == after(rs.last) && r.result.reachedTip && r.result.recordCount == 0 && !r.result.finished
    )
  }

  test("behind the tip, the reader keeps fetching until it reaches it") {
    val shard = new FakeShard
    shard.putText(texts("r", 10): _*)
    val r = run(shard, spec(shard, recordsPerFetch = 3))
    assert(r.drain() == texts("r", 10))
    assert(shard.getRecordsCalls == 4)
    assert(shard.limits == Seq(3, 3, 3, 3))
    assert(r.result.reachedTip && r.result.millisBehindLatest.contains(0L))
  }

  test("the AT_TIMESTAMP start is passed to Kinesis") {
    val shard = new FakeShard
    val rs = shard.putText(texts("r", 4): _*)
    val r = run(shard, spec(shard, start = ShardPosition.AtTimestamp(rs(2).approximateArrivalMillis)))
    assert(r.drain() == Seq("r2", "r3"))
    assert(shard.iteratorStarts == Seq(IteratorStart.AtTimestamp(rs(2).approximateArrivalMillis)))
  }

  // ---------------------------------------------------------------- record limit

  test("stops at maxRecords, never asks for more than remain, and the next batch resumes exactly there") {
    val shard = new FakeShard
    val rs = shard.putText(texts("r", 10): _*)
    val first = run(shard, spec(shard, maxRecords = 4, recordsPerFetch = 3))
    assert(first.drain() == texts("r", 4))
    assert(shard.limits == Seq(3, 1))
    assert(first.result.end == after(rs(3)) && first.result.recordCount == 4 && !first.result.reachedTip)
    val second = run(shard, spec(shard, start = first.result.end))
    assert(second.drain() == texts("r", 10).drop(4))
  }

  test("stops at maxRecords inside an aggregate; resuming emits exactly the rest, no duplicates") {
    val shard = new FakeShard
    shard.putText("r0")
    val agg = shard.putAggregate("a", 5)
    shard.putText("r2")
    val all = Seq("r0", "a.0", "a.1", "a.2", "a.3", "a.4", "r2")

    val first = run(shard, spec(shard, maxRecords = 3))
    assert(first.drain() == all.take(3))
    assert(first.result.end == After(agg.sequenceNumber, 1))

    val second = run(shard, spec(shard, start = first.result.end, maxRecords = 2))
    assert(second.drain() == Seq("a.2", "a.3"))
    assert(shard.iteratorStarts.last == IteratorStart.AtSequence(agg.sequenceNumber))
    assert(second.result.end == After(agg.sequenceNumber, 3))

    val third = run(shard, spec(shard, start = second.result.end))
    assert(third.drain() == Seq("a.4", "r2"))
    assert(third.result.end == after(shard.all.last))
  }

  test("near maxRecords, a fetch asks for as many Kinesis records as the aggregates seen so far make up") {
    val shard = new FakeShard
    (0 until 6).foreach(i => shard.putAggregate(s"a$i", 50))
    val first = run(shard, spec(shard, maxRecords = 120, recordsPerFetch = 2))
    assert(first.drain().size == 120)
    // 2 aggregates (100 user records) first; then the 20 left make 1 aggregate, not 2 fetched for the next batch.
    assert(shard.limits == Seq(2, 1))
    assert(first.result.end == After(shard.all(2).sequenceNumber, 19))
    val second = run(shard, spec(shard, start = first.result.end, maxRecords = 100, recordsPerFetch = 2))
    val rest =
      (20 until 50).map(j => s"a2.$j") ++ (0 until 50).map(j => s"a3.$j") ++ (0 until 20).map(j => s"a4.$j")
    assert(second.drain() == rest)
    assert(shard.limits == Seq(2, 1, 2, 1))
    val unlimited = run(shard, spec(shard, maxRecords = Long.MaxValue, recordsPerFetch = 2))
    assert(unlimited.drain().size == 6 * 50)
    assert(shard.limits.drop(4) == Seq(2, 2, 2), "without a limit: full pages")
  }

  test("a limit reached on the last sub-record of an aggregate ends after the whole record") {
    val shard = new FakeShard
    val agg = shard.putAggregate("a", 3)
    shard.putText("r1")
    val first = run(shard, spec(shard, maxRecords = 3))
    assert(first.drain() == Seq("a.0", "a.1", "a.2"))
    assert(first.result.end == After(agg.sequenceNumber, WholeRecord))
    val second = run(shard, spec(shard, start = first.result.end))
    assert(second.drain() == Seq("r1"))
    assert(shard.iteratorStarts.last == IteratorStart.AfterSequence(agg.sequenceNumber))
  }

  test("batches of any size read a mix of plain and aggregated records exactly once, in order") {
    val shard = new FakeShard
    val expected = Vector.newBuilder[String]
    for (i <- 0 until 12)
      if (i % 3 == 0) {
        shard.putAggregate(s"a$i", 1 + i % 5); expected ++= (0 until 1 + i % 5).map(j => s"a$i.$j")
      } else { shard.putText(s"p$i"); expected += s"p$i" }
    for (limit <- 1 to 7) {
      var start: ShardPosition = TrimHorizon
      val got = Vector.newBuilder[String]
      var tip = false
      while (!tip) {
        val r = run(shard, spec(shard, start = start, maxRecords = limit.toLong, recordsPerFetch = 2))
        got ++= r.drain()
        start = r.result.end
        tip = r.result.reachedTip && r.result.end == after(shard.all.last)
      }
      assert(got.result() == expected.result(), s"batches of $limit")
    }
  }

  // ---------------------------------------------------------------- time limit

  test("stops at maxTimeMs, checked between GetRecords calls") {
    val shard = new FakeShard
    shard.putText(texts("r", 10): _*)
    val clock = new FakeClock
    shard.onGetRecords = () => clock.advanceMs(300)
    val r = run(shard, spec(shard, maxTimeMs = Some(1000L), recordsPerFetch = 1), clock = clock)
    // Calls start at 0, 300, 600 and 900 ms; after the fourth, 1200 ms have passed.
    assert(r.drain() == texts("r", 4))
    assert(shard.getRecordsCalls == 4)
    assert(!r.result.reachedTip && r.result.end == after(shard.all(3)))
  }

  // ---------------------------------------------------------------- closed shards

  private val kids = Seq(
    ChildShard("shardId-000000000001", Seq("shardId-000000000000"), HashKeyRange(0, BigInt(2).pow(127) - 1)),
    ChildShard("shardId-000000000002", Seq("shardId-000000000000"), HashKeyRange(BigInt(2).pow(127), Max))
  )

  test("the end of a closed shard: finished, with its child shards") {
    val shard = new FakeShard
    shard.putText("a", "b", "c")
    shard.closed = true
    shard.children = kids
    val r = run(shard, spec(shard, recordsPerFetch = 2))
    assert(r.drain() == Seq("a", "b", "c"))
    assert(r.result.finished && r.result.childShards == kids && !r.result.lost)
    assert(r.result.end == after(shard.all.last) && r.result.recordCount == 3)
  }

  test("a closed shard whose end comes in a later, empty response: that batch or the next finishes it") {
    val shard = new FakeShard
    shard.putText("a", "b")
    shard.closed = true
    shard.children = kids
    shard.endInSeparateResponse = true
    val first = run(shard, spec(shard))
    assert(first.drain() == Seq("a", "b"))
    assert(!first.result.finished && first.result.reachedTip)
    val second = run(shard, spec(shard, start = first.result.end))
    assert(second.drain().isEmpty)
    assert(
      second.result.finished && second.result.childShards == kids && second.result.end == first.result.end
    )
  }

  test(
    "a closed shard read up to the record limit exactly at its last record is finished; one short is not"
  ) {
    val shard = new FakeShard
    shard.putText("a", "b", "c")
    shard.closed = true
    shard.children = kids
    val exact = run(shard, spec(shard, maxRecords = 3))
    exact.drain()
    assert(exact.result.finished && exact.result.childShards == kids)
    val short = run(shard, spec(shard, maxRecords = 2))
    assert(short.drain() == Seq("a", "b"))
    assert(!short.result.finished)
    val rest = run(shard, spec(shard, start = short.result.end))
    assert(rest.drain() == Seq("c") && rest.result.finished)
  }

  test(
    "before any read, the result is the start, unfinished, with nothing read (what an early close records)"
  ) {
    val shard = new FakeShard
    shard.putText("a")
    val r = run(shard, spec(shard, start = ShardPosition.AtTimestamp(7L)))
    assert(r.result == ShardEnd(ShardPosition.AtTimestamp(7L), false, Nil, 0L, None, false, false))
    assert(shard.getRecordsCalls == 0)
  }

  // ---------------------------------------------------------------- replay

  test("a replay with the recorded end reads exactly the same records, even after more data arrived") {
    val shard = new FakeShard
    shard.putText("r0", "r1")
    shard.putAggregate("a", 4)
    shard.putText("r3")
    val first = run(shard, spec(shard, maxRecords = 4))
    val firstRecords = first.drain()
    assert(firstRecords == Seq("r0", "r1", "a.0", "a.1"))
    shard.putText(texts("late", 5): _*)

    val replay = run(shard, spec(shard, maxRecords = 1000), replay = Some(first.result))
    assert(replay.drain() == firstRecords)
    assert(replay.result.end == first.result.end)

    // A first run that stopped at the tip replays to the same place although the tip has moved on.
    val tipRun = run(shard, spec(shard, start = first.result.end))
    val tipRecords = tipRun.drain()
    assert(tipRun.result.reachedTip)
    shard.putText("later")
    val tipReplay = run(shard, spec(shard, start = first.result.end), replay = Some(tipRun.result))
    assert(tipReplay.drain() == tipRecords)
  }

  test("a replay ignores the record and time limits of the first run") {
    val shard = new FakeShard
    shard.putText(texts("r", 6): _*)
    val first = run(shard, spec(shard, maxRecords = 5))
    assert(first.drain().size == 5)
    val clock = new FakeClock
    shard.onGetRecords = () => clock.advanceMs(5000)
    val replay =
      run(
        shard,
        spec(shard, maxRecords = 2, maxTimeMs = Some(1L), recordsPerFetch = 2),
        Some(first.result),
        clock = clock
      )
    assert(replay.drain() == texts("r", 5))
  }

  test("a replay asks Kinesis for full pages, whatever the record limit is now") {
    val shard = new FakeShard
    shard.putText(texts("r", 9): _*)
    val first = run(shard, spec(shard, maxRecords = 8, recordsPerFetch = 4))
    assert(first.drain().size == 8)
    val before = shard.limits.size
    // The query restarted with a smaller record limit; the replay still reads the recorded 8 records.
    val replay = run(shard, spec(shard, maxRecords = 2, recordsPerFetch = 4), Some(first.result))
    assert(replay.drain() == texts("r", 8))
    assert(shard.limits.drop(before) == Seq(4, 4))
  }

  test("a replay of a batch that read nothing, or lost the shard, makes no call at all") {
    val shard = new FakeShard
    val rs = shard.putText("a")
    val nothing = ShardEnd(after(rs.head), false, Nil, 0, Some(0L), true, false)
    val r = run(shard, spec(shard, start = after(rs.head)), Some(nothing))
    shard.putText("b")
    assert(r.drain().isEmpty && r.result.end == after(rs.head))
    val lost = ShardEnd(TrimHorizon, true, Nil, 0, None, false, lost = true)
    assert(run(shard, spec(shard), Some(lost)).drain().isEmpty)
    assert(shard.getRecordsCalls == 0 && shard.iteratorStarts.isEmpty)
  }

  test("a replay of a closed shard with nothing after the start still reports it finished") {
    val shard = new FakeShard
    val rs = shard.putText("a")
    shard.closed = true
    val first = run(shard, spec(shard, start = after(rs.head)))
    assert(first.drain().isEmpty && first.result.finished)
    val callsBefore = shard.getRecordsCalls
    val replay = run(shard, spec(shard, start = after(rs.head)), Some(first.result))
    assert(replay.drain().isEmpty && replay.result.finished)
    assert(shard.getRecordsCalls == callsBefore, "the recorded end says it all")
  }

  test("a replay whose recorded end can no longer be read fails instead of reading other records") {
    val shard = new FakeShard
    shard.putText(texts("r", 4): _*)
    val first = run(shard, spec(shard, maxRecords = 2))
    first.drain()
    // The shard no longer holds the recorded end: other records, with later sequence numbers, are there instead.
    val trimmed = new FakeShard(firstSequence = FakeShard.FirstSequence + 1000000)
    trimmed.putText(texts("x", 8): _*)
    val e = intercept[IllegalStateException](run(trimmed, spec(trimmed), Some(first.result)).drain())
    assert(e.getMessage.contains("recorded end") && e.getMessage.contains(shard.shardId))
    // The recorded end lies beyond the tip: the replay must not stop early and pretend it is complete.
    val beyond =
      first.result.copy(end = After((BigInt(shard.all.last.sequenceNumber) + 1).toString, WholeRecord))
    val e2 = intercept[IllegalStateException](run(shard, spec(shard), Some(beyond)).drain())
    assert(e2.getMessage.contains("reached the tip"))
  }

  // ---------------------------------------------------------------- hash-key range

  test("sub-records outside the shard's hash-key range are dropped; plain records are always kept") {
    val low = HashKeyRange(0, BigInt(2).pow(127) - 1)
    val keys = (0 until 200).map(i => s"k$i")
    val inKey = keys.find(k => low.contains(KplAggregation.partitionKeyHash(k))).get
    val outKey = keys.find(k => !low.contains(KplAggregation.partitionKeyHash(k))).get
    val shard = new FakeShard
    shard.putAggregate(
      Seq(
        Entry(inKey, None, "in-by-pk".getBytes(UTF_8)),
        Entry(outKey, None, "out-by-pk".getBytes(UTF_8)),
        Entry(outKey, Some("0"), "in-by-ehk".getBytes(UTF_8)),
        Entry(inKey, Some(BigInt(2).pow(127).toString), "out-by-ehk".getBytes(UTF_8)),
        Entry(inKey, Some((BigInt(2).pow(127) - 1).toString), "in-at-edge".getBytes(UTF_8))
      )
    )
    shard.put("plain-out".getBytes(UTF_8), outKey) // Kinesis put it here itself: it belongs to this shard
    val r = run(shard, spec(shard, range = low))
    assert(r.drain() == Seq("in-by-pk", "in-by-ehk", "in-at-edge", "plain-out"))
    assert(r.reader.droppedOutsideRange == 2)
    assert(r.result.recordCount == 4 && r.result.end == after(shard.all.last))
  }

  test("on a stream with service-managed distribution every sub-record is delivered, wherever it hashes") {
    val low = HashKeyRange(0, BigInt(2).pow(127) - 1)
    val shard = new FakeShard
    // Placed the AUTO way: one aggregate of records whose keys hash all over the key space, on this shard.
    val entries = (0 until 100).map(i => Entry(s"key-$i", None, s"u$i".getBytes(UTF_8)))
    shard.putAggregate(entries)
    val inRange = entries.count(e => low.contains(KplAggregation.partitionKeyHash(e.partitionKey)))
    assert(inRange > 0 && inRange < 100, "the keys fall on both halves of the key space")
    val dropping = run(shard, spec(shard, range = low))
    assert(dropping.drain().size == inRange && dropping.reader.droppedOutsideRange == 100 - inRange)
    assert(!dropping.result.deliveredOutsideRange)
    val auto = run(shard, spec(shard, range = low).copy(deliverOutsideRange = true))
    assert(auto.drain() == (0 until 100).map(i => s"u$i"))
    assert(auto.reader.droppedOutsideRange == 0 && auto.result.recordCount == 100)
    assert(auto.result.deliveredOutsideRange, "the decision is recorded with the end")
    assert(dropping.result.end == auto.result.end, "both consume the same records")
  }

  test(
    "a replay delivers or drops out-of-range sub-records as its recorded run did, whatever the spec says now"
  ) {
    val low = HashKeyRange(0, BigInt(2).pow(127) - 1)
    val shard = new FakeShard
    shard.putAggregate((0 until 50).map(i => Entry(s"key-$i", None, s"u$i".getBytes(UTF_8))))
    shard.putText("after")
    val first = run(shard, spec(shard, range = low, maxRecords = 1000).copy(deliverOutsideRange = true))
    val delivered = first.drain()
    val recorded = first.result
    // The stream was switched back to USER_PARTITION_KEY before the replay: the replay still delivers them all.
    val replay = run(shard, spec(shard, range = low), Some(recorded))
    assert(replay.drain() == delivered && delivered.size == 51)
    assert(replay.result.end == recorded.end && replay.result.deliveredOutsideRange)
    // An end recorded before the decision was recorded (or by a run that dropped) replays dropping, as it ran.
    val dropped = run(shard, spec(shard, range = low))
    val droppedRows = dropped.drain()
    val oldEntry = dropped.result
    assert(!oldEntry.deliveredOutsideRange)
    val replayOld = run(shard, spec(shard, range = low).copy(deliverOutsideRange = true), Some(oldEntry))
    assert(
      replayOld
        .drain() == droppedRows && replayOld.reader.droppedOutsideRange == dropped.reader.droppedOutsideRange
    )
  }

  test("a record without a partition key is read with a null key, plain or next to aggregates") {
    val shard = new FakeShard
    shard.put("keyless".getBytes(UTF_8), null)
    shard.putAggregate("agg", 2)
    val r = run(shard, spec(shard))
    val keys = scala.collection.mutable.ArrayBuffer[String]()
    val data = scala.collection.mutable.ArrayBuffer[String]()
    while (r.reader.next()) {
      keys += r.reader.current._2.partitionKey
      data += new String(r.reader.current._2.data, UTF_8)
      val row = new io.sparkkinesis.source.ShardRows("orders", shard.shardId)
        .row(r.reader.current._1, r.reader.current._2)
      assert(row.isNullAt(2) == (r.reader.current._2.partitionKey == null))
    }
    assert(data == Seq("keyless", "agg.0", "agg.1"))
    assert(keys == Seq(null, "pk-agg.0", "pk-agg.1"))
    assert(r.reader.bytes == "keyless".length + "agg.0".length + "agg.1".length)
  }

  test(
    "the warning about dropped sub-records gives the count, the shard and the reason, and only when some were"
  ) {
    val warnings = scala.collection.mutable.ArrayBuffer[String]()
    ShardReader.warnDroppedOutsideRange(0, "orders", "shardId-000000000001", "batch 3", warnings += _)
    assert(warnings.isEmpty)
    ShardReader.warnDroppedOutsideRange(53, "orders", "shardId-000000000001", "batch 3", warnings += _)
    assert(warnings.size == 1)
    assert(
      warnings.head.startsWith(
        "Dropped 53 KPL sub-record(s) of shard shardId-000000000001 of stream orders in batch 3"
      )
    )
    assert(warnings.head.contains("USER_PARTITION_KEY") && warnings.head.contains("droppedOutsideRange"))
  }

  test("dropped sub-records do not count toward maxRecords") {
    val low = HashKeyRange(0, 1000)
    val shard = new FakeShard
    val agg = shard.putAggregate(
      (0 until 6).map(i => Entry("k", Some(if (i % 2 == 0) "5" else "5000"), s"s$i".getBytes(UTF_8)))
    )
    val r = run(shard, spec(shard, range = low, maxRecords = 2))
    assert(r.drain() == Seq("s0", "s2"))
    assert(r.result.end == After(agg.sequenceNumber, 2) && r.reader.droppedOutsideRange == 1)
    val rest = run(shard, spec(shard, start = r.result.end, range = low))
    assert(rest.drain() == Seq("s4"))
  }

  // ---------------------------------------------------------------- throttling

  private def ceiling(base: Long, attempt: Int, cap: Long) = math.min(cap, base << attempt)

  test("throttling: back-off sleeps grow and are jittered within bounds, then reading goes on") {
    val shard = new FakeShard
    shard.putText(texts("r", 3): _*)
    shard.throttleNext = 5
    val r = run(shard, spec(shard, maxThrottles = 10), maxBackoffMs = 1000L)
    assert(r.drain() == texts("r", 3))
    assert(r.reader.throttles == 5 && shard.getRecordsCalls == 6)
    assert(r.clock.sleeps.size == 5)
    r.clock.sleeps.zipWithIndex.foreach { case (s, i) =>
      val c = ceiling(100L, i + 1, 1000L) // 200, 400, 800, 1000, 1000
      assert(s >= c / 2 && s <= c, s"sleep ${i + 1} was $s ms, expected ${c / 2}..$c")
    }
  }

  test("throttling back-off starts from fetchIntervalMs when that is above 100 ms") {
    val shard = new FakeShard
    shard.putText("a")
    shard.throttleNext = 2
    val r = run(shard, spec(shard), fetchIntervalMs = 300L)
    assert(r.drain() == Seq("a"))
    // Only back-off sleeps: each one already exceeds the fetch interval, so pacing adds none.
    assert(r.clock.sleeps.size == 2)
    assert(r.clock.sleeps(0) >= 300 && r.clock.sleeps(0) <= 600)
    assert(r.clock.sleeps(1) >= 600 && r.clock.sleeps(1) <= 1200)
  }

  test("the back-off is jittered (not a fixed wait), capped, and starts over after a success") {
    val shard = new FakeShard
    shard.putText("a")
    val clock = new FakeClock
    val s = spec(shard)
    val fetcher = new PollingFetcher(shard, s, 0L, 800L, clock.sleep, () => clock.nanoTime())
    shard.throttleNext = 200
    (0 until 200).foreach(_ => assert(fetcher.fetch(10) == FetchOutcome.Throttled))
    val capped = clock.sleeps.drop(3)
    assert(capped.forall(v => v >= 400 && v <= 800), capped)
    assert(capped.distinct.size > 10, "the waits are not jittered")
    assert(fetcher.fetch(10).isInstanceOf[FetchOutcome.Fetched])
    shard.throttleNext = 1
    assert(fetcher.fetch(10) == FetchOutcome.Throttled)
    assert(clock.sleeps.last >= 100 && clock.sleeps.last <= 200, "the back-off did not start over")
  }

  test("a batch that already emitted records ends early on throttling; the next batch goes on from there") {
    val shard = new FakeShard
    shard.putText(texts("r", 6): _*)
    shard.throttleCalls = Set(2)
    val first = run(shard, spec(shard, recordsPerFetch = 2, maxThrottles = 5))
    assert(first.drain() == Seq("r0", "r1"))
    assert(shard.getRecordsCalls == 2 && first.reader.throttles == 1)
    assert(first.result.end == after(shard.all(1)) && !first.result.reachedTip && !first.result.finished)
    val second = run(shard, spec(shard, start = first.result.end))
    assert(second.drain() == texts("r", 6).drop(2))
  }

  test(
    "a batch with nothing emitted retries a throttled read, up to maxConsecutiveThrottles, then ends empty"
  ) {
    val shard = new FakeShard
    shard.putText("a")
    shard.throttleNext = 1000
    val r = run(shard, spec(shard, maxThrottles = 3))
    assert(r.drain().isEmpty)
    assert(shard.getRecordsCalls == 4 && r.reader.throttles == 4)
    assert(r.result.end == TrimHorizon && r.result.recordCount == 0 && !r.result.reachedTip)
  }

  test("a replay is not cut short by throttling") {
    val shard = new FakeShard
    shard.putText(texts("r", 4): _*)
    val first = run(shard, spec(shard, maxRecords = 3))
    first.drain()
    shard.throttleNext = 6
    val replay = run(shard, spec(shard, maxThrottles = 2, recordsPerFetch = 1), Some(first.result))
    shard.throttleCalls = Set(shard.getRecordsCalls + 8) // once more in the middle
    assert(replay.drain() == texts("r", 3))
  }

  // ---------------------------------------------------------------- pacing

  test("GetRecords calls on a shard are at least fetchIntervalMs apart") {
    def sleepsWhen(callTakesMs: Long): Seq[Long] = {
      val shard = new FakeShard
      shard.putText(texts("r", 4): _*)
      val clock = new FakeClock
      shard.onGetRecords = () => clock.advanceMs(callTakesMs)
      val r = run(shard, spec(shard, recordsPerFetch = 1), fetchIntervalMs = 200L, clock = clock)
      assert(r.drain() == texts("r", 4))
      assert(shard.getRecordsCalls == 4)
      clock.sleeps.toSeq
    }
    assert(sleepsWhen(0L) == Seq(200L, 200L, 200L))
    assert(sleepsWhen(150L) == Seq(50L, 50L, 50L))
    assert(sleepsWhen(250L).isEmpty)
  }

  // ---------------------------------------------------------------- expired iterators

  test("an expired iterator is renewed after the last record returned; nothing is lost or repeated") {
    val shard = new FakeShard
    val rs = shard.putText(texts("r", 6): _*)
    shard.expireCalls = Set(2, 4)
    val r = run(shard, spec(shard, recordsPerFetch = 2))
    assert(r.drain() == texts("r", 6))
    assert(
      shard.iteratorStarts == Seq(
        IteratorStart.TrimHorizon,
        IteratorStart.AfterSequence(rs(1).sequenceNumber),
        IteratorStart.AfterSequence(rs(3).sequenceNumber)
      )
    )
  }

  test("an iterator that expires before any record is renewed from the original start") {
    val shard = new FakeShard
    val rs = shard.putText(texts("r", 3): _*)
    shard.expireCalls = Set(1)
    val ts = ShardPosition.AtTimestamp(rs(1).approximateArrivalMillis)
    assert(run(shard, spec(shard, start = ts)).drain() == Seq("r1", "r2"))
    assert(shard.iteratorStarts == Seq.fill(2)(IteratorStart.AtTimestamp(rs(1).approximateArrivalMillis)))

    val inside = new FakeShard
    val agg = inside.putAggregate("a", 4)
    inside.putText("z")
    inside.expireCalls = Set(1)
    assert(run(inside, spec(inside, start = After(agg.sequenceNumber, 1))).drain() == Seq("a.2", "a.3", "z"))
    assert(inside.iteratorStarts == Seq.fill(2)(IteratorStart.AtSequence(agg.sequenceNumber)))
  }

  test("an iterator that keeps expiring fails the read") {
    val shard = new FakeShard
    shard.putText("a")
    shard.expireCalls = (1 to 10).toSet
    intercept[IteratorExpired](run(shard, spec(shard)).drain())
    assert(shard.getRecordsCalls == 4)
  }

  // ---------------------------------------------------------------- data loss

  test("a vanished shard with failOnDataLoss=true fails with a message naming the shard and what to do") {
    for (onIterator <- Seq(true, false)) {
      val shard = new FakeShard
      shard.putText("a")
      shard.goneOnIterator = onIterator
      shard.goneOnRecords = !onIterator
      val e = intercept[DataLossException](run(shard, spec(shard, failOnDataLoss = true)).drain())
      assertCondition(e, "KINESIS_DATA_LOSS")
      assert(e.getMessage.contains(s"shard ${shard.shardId} of stream ${shard.streamName}"), e.getMessage)
      assert(e.getMessage.contains("kinesis.failOnDataLoss=false"), e.getMessage)
    }
  }

  test("a vanished shard with failOnDataLoss=false ends the shard as lost and finished") {
    val shard = new FakeShard
    shard.putText("a")
    shard.goneOnIterator = true
    val r = run(shard, spec(shard, failOnDataLoss = false))
    assert(r.drain().isEmpty)
    assert(r.result == ShardEnd(TrimHorizon, true, Nil, 0L, None, false, lost = true))
  }

  test("a shard that vanishes in the middle of a batch keeps what was read and ends as lost") {
    val shard = new FakeShard
    shard.putText(texts("r", 4): _*)
    shard.onGetRecords = () => if (shard.getRecordsCalls == 2) shard.goneOnRecords = true
    val r = run(shard, spec(shard, recordsPerFetch = 2, failOnDataLoss = false))
    assert(r.drain() == Seq("r0", "r1"))
    assert(
      r.result.lost && r.result.finished && r.result.end == after(shard.all(1)) && r.result.recordCount == 2
    )
  }

  // ---------------------------------------------------------------- iterator reuse between batches

  test("the next batch continues on the iterator the previous batch ended on: no GetShardIterator call") {
    val shard = new FakeShard()
    shard.putText(texts("a", 5): _*)
    val first = run(shard, spec(shard))
    assert(first.drain() == texts("a", 5))
    assert(first.reader.endsOnFetchBoundary)
    val iterator = first.fetcher.continuation
    assert(iterator.isDefined)
    shard.putText(texts("b", 3): _*)
    val iteratorCalls = shard.iteratorStarts.size
    val second = run(shard, spec(shard, start = first.result.end), reuse = iterator)
    assert(second.drain() == texts("b", 3))
    assert(shard.iteratorStarts.size == iteratorCalls)
  }

  test("a batch that stopped inside a response does not offer its iterator for the next batch") {
    val shard = new FakeShard()
    shard.putAggregate("x", 5)
    val first = run(shard, spec(shard, maxRecords = 3))
    assert(first.drain().size == 3)
    assert(!first.reader.endsOnFetchBoundary)
    val limited = new FakeShard()
    limited.putText(texts("a", 5): _*)
    val exact = run(limited, spec(limited, maxRecords = 3))
    assert(exact.drain() == texts("a", 3))
    assert(
      exact.reader.endsOnFetchBoundary,
      "GetRecords asked for 3, so its iterator points right after them"
    )
  }

  test("the iterator cache hands an entry out once, and never one older than four minutes") {
    val key = ShardIteratorCache.Key("http://e", "s", "shard-1", After("42", WholeRecord))
    ShardIteratorCache.put(key, "it-1", nowNanos = 0L)
    assert(ShardIteratorCache.take(key, nowNanos = 1000L).contains("it-1"))
    assert(ShardIteratorCache.take(key, nowNanos = 2000L).isEmpty)
    ShardIteratorCache.put(key, "it-2", nowNanos = 0L)
    assert(ShardIteratorCache.take(key, nowNanos = 5L * 60 * 1000 * 1000 * 1000).isEmpty)
  }

  test("a record with the KPL magic that is no valid aggregate is read as one plain record, with a warning") {
    val shard = new FakeShard
    val magic = KplAggregation.Magic
    val broken = shard.put(magic ++ "not protobuf, no digest".getBytes(UTF_8), "pk-broken")
    shard.putText("plain")
    shard.putAggregate("agg", 2)
    val warnings = scala.collection.mutable.Buffer[String]()
    val s = spec(shard)
    val fetcher = new PollingFetcher(shard, s, 0L, 1000L, _ => (), () => 0L)
    val reader = new ShardReader(s, fetcher, None, () => 0L, warn = warnings += _)
    val read = Vector.newBuilder[(KinesisRecord, UserRecord)]
    while (reader.next()) read += reader.current
    val rows = read.result()
    assert(rows.size == 4)
    val (record, user) = rows.head
    assert(user.data sameElements broken.data)
    assert(
      user.partitionKey == "pk-broken" && !user.aggregated && record.sequenceNumber == broken.sequenceNumber
    )
    assert(rows.drop(2).forall(_._2.aggregated), "a valid aggregate is still split")
    assert(reader.malformedAggregates == 1)
    assert(warnings.size == 1)
    val w = warnings.head
    assert(w.contains(broken.sequenceNumber) && w.contains(shard.shardId) && w.contains(shard.streamName), w)
    assert(w.contains("KPL aggregation magic bytes") && w.contains("passed through as one plain record"), w)
    assert(w.contains("MD5"), w)
  }

  test("malformed aggregates are warned about at most a few times per task, and all counted") {
    val shard = new FakeShard
    (0 until 8).foreach(i => shard.put(KplAggregation.Magic ++ Array[Byte](i.toByte), s"k$i"))
    val warnings = scala.collection.mutable.Buffer[String]()
    val s = spec(shard)
    val reader =
      new ShardReader(
        s,
        new PollingFetcher(shard, s, 0L, 1000L, _ => (), () => 0L),
        None,
        () => 0L,
        None,
        warnings += _
      )
    var n = 0
    while (reader.next()) n += 1
    assert(n == 8 && reader.malformedAggregates == 8)
    assert(warnings.size == ShardReader.MaxMalformedWarnings)
    assert(warnings.last.contains("Further such records"), warnings.last)
  }

  // ---------------------------------------------------------------- a pending run bound: pages held until confirmed

  /**
   * Reads `shard` under a pending bound pinned now, logging every GetRecords call (a page, or a probe: the only calls
   * of limit 1 here) and every record delivered; `producer(n)` runs before call n. Checks that each delivered record
   * was confirmed: a probe came after the fetch of its page and before its delivery, or one resolved the bound.
   */
  private def readPinned(shard: FakeShard, budget: Long, clock: FakeClock = new FakeClock)(
      producer: Int => Unit
  ): (Vector[String], ShardReader) = {
    val tip = shard.getShardIterator(shard.streamName, shard.shardId, IteratorStart.Latest)
    val events = mutable.ArrayBuffer[String]()
    val pageOf = mutable.Map[String, Int]()
    val logged = new ShardRecordsClient {
      def getShardIterator(stream: String, shardId: String, start: IteratorStart): String =
        shard.getShardIterator(stream, shardId, start)
      def getRecords(iterator: String, limit: Int): RecordsResponse = {
        producer(events.count(_ != "deliver") + 1)
        val response = shard.getRecords(iterator, limit)
        response.records.foreach(r => pageOf(r.sequenceNumber) = events.size)
        events += (if (limit == 1) "probe" else "page")
        response
      }
      def close(): Unit = ()
    }
    val s = spec(shard, recordsPerFetch = 4).copy(bound = RunBound.Pending(tip))
    val fetcher = new PollingFetcher(logged, s, 0L, 1000L, clock.sleep, () => clock.nanoTime())
    val reader =
      new ShardReader(
        s,
        fetcher,
        None,
        () => clock.nanoTime(),
        Some(TipProbe(logged)),
        heldBytesBudget = budget
      )
    val out = Vector.newBuilder[String]
    while (reader.next()) {
      val seq = reader.current._1.sequenceNumber
      val lastProbe = events.lastIndexOf("probe")
      val resolved =
        reader.runOutcome.exists(_.bound.isInstanceOf[RunBound.Before]) // pages after it need no probe
      assert(
        lastProbe > pageOf(seq) || resolved,
        s"record $seq consumed before a probe confirmed its page: $events"
      )
      events += "deliver"
      out += new String(reader.current._2.data, UTF_8)
    }
    (out.result(), reader)
  }

  test(
    "under a pending bound, one probe after the pages up to the tip confirms them all before any is consumed"
  ) {
    val shard = new FakeShard
    shard.putText(texts("before-", 18): _*)
    val (read, reader) = readPinned(shard, ShardReader.HeldBytesBudget)(_ => ())
    assert(read == texts("before-", 18))
    assert(shard.getRecordsCalls == 5 + 1, "5 pages (4, 4, 4, 4, 2), then one probe; no probe per page")
    assert(reader.runOutcome.exists(o => !o.reached && o.bound.isInstanceOf[RunBound.Pending]))
    assert(reader.endsOnFetchBoundary)
  }

  test("under a pending bound and a live producer, no record put after the start is delivered, held or not") {
    // Pages of 4 up to the tip, then the probe: with no record put, the probe is call 6, so each put precedes it.
    for (putAt <- 1 to 6) {
      val shard = new FakeShard
      shard.putText(texts("before-", 18): _*)
      val firstAfter = mutable.ArrayBuffer[KinesisRecord]()
      val (read, reader) = readPinned(shard, ShardReader.HeldBytesBudget) { call =>
        if (call == putAt || call == putAt + 2) firstAfter ++= shard.putText(texts(s"after-$call-", 3): _*)
      }
      assert(read == texts("before-", 18), s"records put before call $putAt")
      assert(
        reader.runOutcome.map(_.bound).contains(RunBound.Before(firstAfter.head.sequenceNumber)),
        s"records put before call $putAt"
      )
    }
  }

  test("the held bytes are bounded: past the budget the reader confirms what it holds before fetching more") {
    val shard = new FakeShard
    shard.putText(texts("before-", 18): _*) // 8 or 9 bytes each: every page passes a 20-byte budget
    val (read, _) = readPinned(shard, budget = 20L)(_ => ())
    assert(read == texts("before-", 18))
    assert(shard.getRecordsCalls == 5 + 5, "a probe after every page")
    val limited = new FakeShard
    limited.putText(texts("before-", 18): _*)
    val (twoPages, _) = readPinned(limited, budget = 40L)(_ => ())
    assert(twoPages == texts("before-", 18))
    assert(limited.getRecordsCalls == 5 + 3, "a probe after every second page, and after the last")
  }

  test(
    "a reader that never reaches a busy shard's tip probes within the held-time budget, before the pin expires"
  ) {
    // Each call, 4 s pass and the producer puts 4 records: the tiny pages never fill the byte budget and the reader
    // never reaches the tip, so only the time since the last probe makes it confirm its pages (a runaway otherwise).
    val shard = new FakeShard
    shard.putText(texts("before-", 30): _*)
    val clock = new FakeClock
    val after = mutable.ArrayBuffer[KinesisRecord]()
    val (read, reader) = readPinned(shard, ShardReader.HeldBytesBudget, clock) { call =>
      clock.advanceMs(4000)
      after ++= shard.putText(texts(s"after-$call-", 4): _*)
    }
    assert(read == texts("before-", 30))
    assert(reader.runOutcome.map(_.bound).contains(RunBound.Before(after.head.sequenceNumber)))
    assert(ShardReader.HeldNanosBudget == 10000000000L, "the counts below assume a 10-second budget")
    assert(
      shard.getRecordsCalls == 3 + 1 + 5,
      "3 pages held for 12 s, the probe, then 5 pages up to the bound"
    )
  }
}
