package io.sparkkinesis.source

import java.nio.charset.StandardCharsets.UTF_8

import scala.collection.mutable

import io.sparkkinesis.client._
import io.sparkkinesis.reader.{FakeClock, FakeShard, ShardEnd, ShardPosition}
import org.apache.spark.sql.connector.read.streaming.{PartitionOffset, ReadLimit}
import io.sparkkinesis.source.StreamFakes.{noConsumers, noRecords, open, Entries, FullRange, Listing}
import org.scalatest.funsuite.AnyFunSuite

/**
 * Real-time mode without Spark's engine: the driver's planning from a start offset and merging of the tasks' ends,
 * and a real-time task's reading, recording and replay. Shared code, so it runs on every line (the engine itself is
 * exercised end to end by the Python tests on Spark 4.1 and newer).
 */
class RealTimeSuite extends AnyFunSuite {
  private val Full = FullRange
  private val Shards = Seq("shardId-000000000000", "shardId-000000000001")

  private val config =
    StreamFakes.config("kinesis.maxFetchRecordsPerShard" -> "100", "kinesis.maxFetchTimePerShardSec" -> "10")

  private val template = StreamFakes.template(config)

  private def stream(metadata: Listing, entries: Entries) =
    new KinesisMicroBatchStream(
      config,
      metadata,
      noRecords,
      noConsumers,
      StreamFakes.StoreOf(_ => entries),
      template,
      10
    )

  /** The end a task reports (and records) after reading `count` records of `key` up to sequence number `seq`. */
  private def reported(batch: KinesisOffset, key: ShardKey, seq: String, count: Long, entries: Entries) = {
    val end = RecordedEnd(
      ShardEnd(ShardPosition.After(seq, ShardPosition.WholeRecord), false, Nil, count, Some(0L), true, false)
    )
    val json = RecordedEndJson.writeEnd(end)
    entries.putIfAbsent(batch.batchId, key.metadataKey, json)
    KinesisShardOffset(key.streamName, key.shardId, json)
  }

  test("a real-time batch is planned from its start alone, with no record or time limit") {
    val entries = new Entries
    val s = stream(new Listing(open(Shards: _*)), entries)
    try {
      s.enableRealTimeMode()
      val initial = s.initialOffset()
      assert(s.latestOffset(initial, ReadLimit.allAvailable()) == initial, "the engine's ask plans nothing")
      val tasks = s.realTimePartitions(initial).map(StreamFakes.task)
      val parts = tasks.map(_.shards.head)
      assert(parts.map(_.shardId).toSeq.sorted == Shards)
      assert(tasks.forall(t => kind(t).batchId == 0 && t.shards.size == 1))
      assert(parts.forall(p => p.maxRecords == Long.MaxValue && p.maxTimeMs.isEmpty))
      assert(parts.forall(_.start == ShardPosition.TrimHorizon))
    } finally s.stop()
  }

  test(
    "the merged offset is the batch's own; the next batch starts at the reported ends without reading them back"
  ) {
    val entries = new Entries
    val s = stream(new Listing(open(Shards: _*)), entries)
    try {
      s.enableRealTimeMode()
      val t0 = s.realTimePartitions(s.initialOffset()).map(StreamFakes.task)
      val b0 = t0.map(_.shards.head)
      val batch0 = KinesisOffset(0L, kind(t0.head).runId, Map.empty)
      val ends: Array[PartitionOffset] =
        b0.map(p => reported(batch0, p.key, s"${100 + p.shardId.last}", 3, entries))
      val merged = s.mergeRealTimeEnds(ends).asInstanceOf[KinesisOffset]
      assert(merged.batchId == 0 && merged.readShards.size == 2)
      val readsBefore = entries.reads
      // Spark hands the logged offset back as JSON.
      val restored = s.deserializeOffset(merged.json())
      val t1 = s.realTimePartitions(restored).map(StreamFakes.task)
      val b1 = t1.map(_.shards.head)
      assert(entries.reads == readsBefore, "the tasks' reported ends were used, not read from the store")
      assert(t1.forall(kind(_).batchId == 1))
      assert(
        b1.map(p => p.shardId -> p.start).toMap == Shards
          .map(id => id -> ShardPosition.After(s"${100 + id.last}", ShardPosition.WholeRecord))
          .toMap
      )
    } finally s.stop()
  }

  test(
    "a restarted query (or micro-batches after real-time ones) advance a real-time offset by its recorded ends"
  ) {
    val entries = new Entries
    val metadata = new Listing(open(Shards: _*))
    val first = stream(metadata, entries)
    val merged =
      try {
        first.enableRealTimeMode()
        val t0 = first.realTimePartitions(first.initialOffset()).map(StreamFakes.task)
        val b0 = t0.map(_.shards.head)
        val batch0 = KinesisOffset(0L, kind(t0.head).runId, Map.empty)
        first.mergeRealTimeEnds(b0.map(p => reported(batch0, p.key, "7", 1, entries): PartitionOffset))
      } finally first.stop()
    val micro = stream(metadata, entries)
    try {
      val next = micro.latestOffset(micro.deserializeOffset(merged.json()), ReadLimit.allAvailable())
      val offset = next.asInstanceOf[KinesisOffset]
      assert(offset.batchId == 1)
      assert(
        offset.readShards.map(_._2.position).toSet == Set(ShardPosition.After("7", ShardPosition.WholeRecord))
      )
    } finally micro.stop()
  }

  test("a query that ran micro-batches goes on in real-time mode from their recorded ends") {
    val entries = new Entries
    val metadata = new Listing(open(Shards: _*))
    val micro = stream(metadata, entries)
    val b0 =
      try {
        val b0 =
          micro.latestOffset(micro.initialOffset(), ReadLimit.allAvailable()).asInstanceOf[KinesisOffset]
        b0.readShards.foreach { case (key, _) => reported(b0, key, "42", 2, entries) }
        b0
      } finally micro.stop()
    val rt = stream(metadata, entries)
    try {
      rt.enableRealTimeMode()
      val tasks = rt.realTimePartitions(rt.deserializeOffset(b0.json())).map(StreamFakes.task)
      assert(tasks.forall(kind(_).batchId == b0.batchId + 1))
      assert(
        tasks.map(_.shards.head.start).toSet == Set(ShardPosition.After("42", ShardPosition.WholeRecord))
      )
    } finally rt.stop()
  }

  test("a merge without an end for a shard the batch read fails, naming the shard") {
    val entries = new Entries
    val s = stream(new Listing(open(Shards: _*)), entries)
    try {
      s.enableRealTimeMode()
      val t0 = s.realTimePartitions(s.initialOffset()).map(StreamFakes.task)
      val b0 = t0.map(_.shards.head)
      val batch0 = KinesisOffset(0L, kind(t0.head).runId, Map.empty)
      val e = intercept[IllegalStateException](
        s.mergeRealTimeEnds(Array(reported(batch0, b0.head.key, "1", 1, entries)))
      )
      assert(e.getMessage.contains(b0.last.shardId))
    } finally s.stop()
  }

  test(
    "children of a shard that ended in a real-time batch are read from the next batch, after their parent"
  ) {
    val entries = new Entries
    val parent = "shardId-000000000000"
    val kids = Seq("shardId-000000000001", "shardId-000000000002")
    val metadata = new Listing(open(parent))
    val s = stream(metadata, entries)
    try {
      s.enableRealTimeMode()
      val b0 = s.realTimePartitions(s.initialOffset()).map(StreamFakes.slice)
      assert(b0.map(_.shardId).toSeq == Seq(parent))
      val finished = ShardEnd(
        ShardPosition.After("9", ShardPosition.WholeRecord),
        true,
        kids.map(k => ChildShard(k, Seq(parent), Full)),
        4,
        Some(0L),
        true,
        false
      )
      val json = RecordedEndJson.writeEnd(RecordedEnd(finished))
      entries.putIfAbsent(0L, ShardKey("orders", parent).metadataKey, json)
      val merged = s.mergeRealTimeEnds(Array(KinesisShardOffset("orders", parent, json)))
      val b1 = s.realTimePartitions(merged).map(StreamFakes.slice)
      assert(b1.map(_.shardId).toSeq.sorted == kids)
      assert(b1.forall(_.start == ShardPosition.TrimHorizon))
    } finally s.stop()
  }

  test(
    "a shard whose task never ran within its batch (no free slot) is a warning once, and fails the query twice"
  ) {
    val entries = new Entries
    val s = stream(new Listing(open(Shards: _*)), entries)
    try {
      s.enableRealTimeMode()
      def batch(start: org.apache.spark.sql.connector.read.streaming.Offset, starved: Boolean) = {
        val tasks = s.realTimePartitions(start).map(StreamFakes.task)
        val b = KinesisOffset(kind(tasks.head).batchId, kind(tasks.head).runId, Map.empty)
        val ends = tasks.map(_.shards.head).map { p =>
          val o = reported(b, p.key, "5", 0, entries)
          if (starved && p.shardId == Shards.last) o.copy(neverAsked = true) else o
        }
        s.mergeRealTimeEnds(ends.map(o => o: PartitionOffset))
      }
      val b0 = batch(s.initialOffset(), starved = true)
      val b1 = batch(b0, starved = false)
      val b2 = batch(b1, starved = true)
      val e = intercept[IllegalStateException](batch(b2, starved = true))
      assert(e.getMessage.contains(Shards.last) && e.getMessage.contains("task slot per shard"), e.getMessage)
    } finally s.stop()
  }

  // --- the task side ---

  private val shardId = "shardId-000000000000"

  private def partition(batchId: Long, start: ShardPosition = ShardPosition.TrimHorizon) =
    KinesisReadTask(
      TaskKind.RealTime(StreamFakes.StoreOf(_ => new Entries), "run", batchId),
      None,
      Seq(ShardSlice("orders", shardId, start, StreamFakes.FullRange))
    )

  private def realTimeRead(task: KinesisReadTask, shard: FakeShard, entries: Entries, clock: FakeClock) =
    new KinesisPartitionReader(
      StreamFakes.template(config),
      task,
      shard,
      Some(entries),
      () => (),
      () => clock.nanoTime()
    )

  private def kind(t: KinesisReadTask) = t.kind.asInstanceOf[TaskKind.RealTime]

  private def text(read: KinesisPartitionReader): String =
    new String(read.get().getBinary(0), UTF_8)

  /** Records until `next` says none came within the timeout. */
  private def drain(read: KinesisPartitionReader): Seq[String] = {
    val out = mutable.ArrayBuffer[String]()
    while (read.nextWithin(100L)) out += text(read)
    out.toSeq
  }

  test("a real-time task emits records as they arrive, waits at the tip, and records where it stopped") {
    val shard = new FakeShard("orders", shardId)
    val clock = new FakeClock
    shard.onGetRecords = () => clock.advanceMs(30)
    val entries = new Entries
    shard.putText("a", "b")
    val read = realTimeRead(partition(0), shard, entries, clock)
    assert(drain(read) == Seq("a", "b"))
    val callsAtTip = shard.getRecordsCalls
    assert(callsAtTip >= 2, "it polled the tip until the timeout")
    val c = shard.putText("c").head
    shard.putAggregate("agg", 3)
    assert(read.nextWithin(100L) && text(read) == "c", "the same task goes on after the tip")
    assert(read.arrivalMillis == c.approximateArrivalMillis)
    assert(drain(read) == Seq("agg.0", "agg.1", "agg.2"))
    read.close()
    val recorded =
      RecordedEndJson.readRecordedEnd(entries.entries((0L, ShardKey("orders", shardId).metadataKey)))
    assert(recorded.end.end == ShardPosition.After(shard.all.last.sequenceNumber, ShardPosition.WholeRecord))
    assert(recorded.end.recordCount == 6)
    assert(RecordedEndJson.readRecordedEnd(read.offset.recordedEnd).end == recorded.end)

    // The batch run again (a restart before its offset was logged) reads exactly to the recorded end.
    shard.putText("d")
    val replay = realTimeRead(partition(0), shard, entries, clock)
    assert(drain(replay) == Seq("a", "b", "c", "agg.0", "agg.1", "agg.2"))
    assert(!replay.nextWithin(100L), "a replay ends at the recorded end")
    replay.close()
  }

  test("a real-time task stops at the end of a closed shard and reports its children") {
    val shard = new FakeShard("orders", shardId)
    val clock = new FakeClock
    shard.onGetRecords = () => clock.advanceMs(10)
    shard.putText("x", "y")
    shard.closed = true
    shard.children = Seq(ChildShard("shardId-000000000003", Seq(shardId), Full))
    val entries = new Entries
    val read = realTimeRead(partition(4), shard, entries, clock)
    assert(read.nextWithin(60000L) && read.nextWithin(60000L))
    val calls = shard.getRecordsCalls
    assert(!read.nextWithin(60000L), "no waiting after the shard's end")
    assert(shard.getRecordsCalls == calls)
    val end = read.end
    assert(end.finished && end.childShards.map(_.shardId) == Seq("shardId-000000000003"))
    read.close()
  }

  test("an attempt whose end differs from the one another attempt recorded fails instead of standing") {
    val shard = new FakeShard("orders", shardId)
    val clock = new FakeClock
    shard.onGetRecords = () => clock.advanceMs(30)
    shard.putText("a", "b", "c")
    val entries = new Entries
    val other = RecordedEnd(
      ShardEnd(
        ShardPosition.After(shard.all.head.sequenceNumber, ShardPosition.WholeRecord),
        false,
        Nil,
        1,
        None,
        false,
        false
      )
    )
    val read = realTimeRead(partition(2), shard, entries, clock)
    // The other attempt records while this one reads.
    assert(read.nextWithin(100L))
    entries.putIfAbsent(2L, ShardKey("orders", shardId).metadataKey, RecordedEndJson.writeEnd(other))
    while (read.nextWithin(100L)) ()
    val e = intercept[IllegalStateException](read.close())
    assert(e.getMessage.contains("different end"))
  }
}
