package io.sparkkinesis.source

import java.nio.charset.StandardCharsets.UTF_8
import java.util.concurrent.{CountDownLatch, TimeUnit}

import scala.collection.mutable

import io.sparkkinesis.client.{IteratorStart, RecordsResponse, ShardRecordsClient}
import io.sparkkinesis.reader.FakeShard
import io.sparkkinesis.source.StreamFakes._
import org.apache.spark.sql.connector.read.InputPartition
import org.apache.spark.sql.connector.read.streaming.ReadLimit
import org.scalatest.funsuite.AnyFunSuite

/**
 * Read tasks of several shards (`kinesis.shardsPerTask`): one metadata entry per task, every record exactly once,
 * each shard in order, shards of a task read at once, and checkpoints that change the grouping.
 */
class GroupedTasksSuite extends AnyFunSuite {
  private def id(i: Int) = f"shardId-$i%012d"

  /** Fake shards behind one client, as an executor's shared Kinesis client serves every shard of a task. */
  private final class Shards(count: Int) extends ShardRecordsClient {
    val byId: Map[String, FakeShard] = (0 until count).map(i => id(i) -> new FakeShard("orders", id(i))).toMap
    def apply(i: Int): FakeShard = byId(id(i))

    def getShardIterator(streamName: String, shardId: String, start: IteratorStart): String =
      byId(shardId).getShardIterator(streamName, shardId, start)

    def getRecords(iterator: String, limit: Int): RecordsResponse =
      byId(iterator.takeWhile(_ != '|')).getRecords(iterator, limit)
    def close(): Unit = ()
  }

  private def stream(count: Int, entries: Entries, options: (String, String)*) = {
    val c = config(options: _*)
    new KinesisMicroBatchStream(
      c,
      new Listing(open((0 until count).map(id): _*)),
      noRecords,
      noConsumers,
      StreamFakes.StoreOf(_ => entries),
      template(c),
      10
    )
  }

  private def plan(s: KinesisMicroBatchStream, start: KinesisOffset): (KinesisOffset, Seq[InputPartition]) = {
    val end = s.latestOffset(start, ReadLimit.allAvailable()).asInstanceOf[KinesisOffset]
    assert(end.batchId == start.batchId + 1, "a batch was planned")
    (end, s.planInputPartitions(start, end).toSeq)
  }

  private def reader(p: InputPartition, shards: Shards, entries: Entries): KinesisPartitionReader =
    new KinesisPartitionReader(template(config()), task(p), shards, Some(entries))

  /** (shard, data) of every row a task delivers, in delivery order. */
  private def drain(r: KinesisPartitionReader): Seq[(String, String)] = {
    val out = mutable.ArrayBuffer[(String, String)]()
    try
      while (r.next()) {
        val row = r.get()
        out += (row.getUTF8String(5).toString -> new String(row.getBinary(0), UTF_8))
      }
    finally r.close()
    out.toSeq
  }

  /** Each task's index and shards. */
  private def tasksOf(parts: Seq[InputPartition]): Seq[(Int, Seq[ShardKey])] =
    parts.map(task).map(t => t.index.get -> t.shards.map(_.key))

  private def readBatch(parts: Seq[InputPartition], shards: Shards, entries: Entries): Seq[(String, String)] =
    parts.flatMap(p => drain(reader(p, shards, entries)))

  private def put(shards: Shards, count: Int, round: String): Unit =
    (0 until count).foreach(i => shards(i).putText(s"$round-$i-a", s"$round-$i-b"))

  private def inShardOrder(rows: Seq[(String, String)]): Map[String, Seq[String]] =
    rows.groupBy(_._1).map { case (shard, r) => shard -> r.map(_._2) }

  test("5 shards at 2 per task: 3 tasks, one metadata entry each, every record once and in shard order") {
    val shards = new Shards(5)
    val entries = new Entries
    val s = stream(5, entries, "kinesis.shardsPerTask" -> "2")
    put(shards, 5, "r0")
    val (b0, parts0) = plan(s, s.initialOffset().asInstanceOf[KinesisOffset])
    assert(parts0.size == 3 && parts0.forall(task(_).index.isDefined))
    assert(parts0.map(task(_).shards.size).sorted == Seq(1, 2, 2))
    val rows0 = readBatch(parts0, shards, entries)
    assert(entries.entries.keySet.filter(_._1 == 0L).map(_._2) == Set("tasks/0", "tasks/1", "tasks/2"))

    put(shards, 5, "r1")
    val (_, parts1) = plan(s, b0)
    assert(
      tasksOf(parts1) == tasksOf(parts0),
      "the same groups batch after batch"
    )
    val rows1 = readBatch(parts1, shards, entries)
    val all = inShardOrder(rows0 ++ rows1)
    assert(all == (0 until 5).map(i => id(i) -> Seq(s"r0-$i-a", s"r0-$i-b", s"r1-$i-a", s"r1-$i-b")).toMap)
    s.stop()
  }

  test("a shard whose fetch waits holds up no other shard of its task") {
    val shards = new Shards(3)
    val entries = new Entries
    val s = stream(3, entries, "kinesis.shardsPerTask" -> "3")
    put(shards, 3, "r0")
    val release = new CountDownLatch(1)
    var held = 0
    shards(0).onGetRecords = () => if (held == 0) { held += 1; release.await(20, TimeUnit.SECONDS) }
    val (_, Seq(task)) = plan(s, s.initialOffset().asInstanceOf[KinesisOffset])
    val r = reader(task, shards, entries)
    val first = mutable.ArrayBuffer[String]()
    // Shards 1 and 2 deliver all their rows while shard 0's first fetch waits.
    while (first.size < 4 && r.next()) first += r.get().getUTF8String(5).toString
    val waited = release.getCount == 1
    release.countDown()
    assert(waited && first.toSet == Set(id(1), id(2)), first)
    val rest = mutable.ArrayBuffer[String]()
    while (r.next()) rest += new String(r.get().getBinary(0), UTF_8)
    r.close()
    assert(rest == Seq("r0-0-a", "r0-0-b"))
    s.stop()
  }

  test("a retried task replays exactly to the ends its first attempt recorded, in every shard") {
    val shards = new Shards(4)
    val entries = new Entries
    val s = stream(4, entries, "kinesis.shardsPerTask" -> "4")
    put(shards, 4, "r0")
    val (_, Seq(task)) = plan(s, s.initialOffset().asInstanceOf[KinesisOffset])
    val firstAttempt = drain(reader(task, shards, entries))
    put(shards, 4, "r1")
    val retry = drain(reader(task, shards, entries))
    assert(inShardOrder(retry) == inShardOrder(firstAttempt))
    assert(retry.size == 8)
    s.stop()
  }

  test("an attempt that read other ends than the one recorded first fails, naming the shard") {
    val shards = new Shards(2)
    val entries = new Entries
    val s = stream(2, entries, "kinesis.shardsPerTask" -> "2")
    put(shards, 2, "r0")
    val (_, Seq(task)) = plan(s, s.initialOffset().asInstanceOf[KinesisOffset])
    val late = reader(task, shards, entries) // starts before the other attempt records
    drain(reader(task, shards, entries))
    put(shards, 2, "r1")
    val e = intercept[EndRecording.LostToOtherAttempt](while (late.next()) {})
    late.close()
    assert(e.getMessage.contains("recorded a different end first"))
  }

  test("a task closed early records where each shard got to; the next batch goes on from there") {
    val shards = new Shards(3)
    val entries = new Entries
    val s = stream(3, entries, "kinesis.shardsPerTask" -> "3")
    put(shards, 3, "r0")
    val (b0, Seq(task)) = plan(s, s.initialOffset().asInstanceOf[KinesisOffset])
    val r = reader(task, shards, entries)
    val delivered = mutable.ArrayBuffer[(String, String)]()
    while (delivered.size < 3 && r.next())
      delivered += (r.get().getUTF8String(5).toString -> new String(r.get().getBinary(0), UTF_8))
    r.close()
    val (_, parts1) = plan(s, b0)
    val after = readBatch(parts1, shards, entries)
    val all = inShardOrder(delivered.toSeq ++ after)
    assert(all == (0 until 3).map(i => id(i) -> Seq(s"r0-$i-a", s"r0-$i-b")).toMap)
  }

  test("a checkpoint of one shard per task goes on grouped, and back, reading every record once") {
    val shards = new Shards(4)
    val entries = new Entries
    put(shards, 4, "r0")
    val ungrouped = stream(4, entries, "kinesis.shardsPerTask" -> "1")
    val (b0, parts0) = plan(ungrouped, ungrouped.initialOffset().asInstanceOf[KinesisOffset])
    assert(parts0.size == 4 && parts0.forall(task(_).index.isEmpty))
    val rows0 = readBatch(parts0, shards, entries)
    assert(entries.entries.keySet.map(_._2) == (0 until 4).map(i => s"orders/${id(i)}").toSet)
    // The offset as the checkpoint holds it: written and read back.
    assert(b0.json().contains("\"version\":1"))
    val restored0 = OffsetJson.readOffset(b0.json())
    ungrouped.stop()

    put(shards, 4, "r1")
    val grouped = stream(4, entries, "kinesis.shardsPerTask" -> "2")
    val (b1, parts1) = plan(grouped, restored0)
    assert(parts1.size == 2 && parts1.forall(task(_).index.isDefined))
    val rows1 = readBatch(parts1, shards, entries)
    assert(b1.json().contains("\"version\":2"))
    val restored1 = OffsetJson.readOffset(b1.json())
    grouped.stop()

    put(shards, 4, "r2")
    val again = stream(4, entries, "kinesis.shardsPerTask" -> "1")
    val (_, parts2) = plan(again, restored1)
    assert(parts2.size == 4 && parts2.forall(task(_).index.isEmpty))
    val rows2 = readBatch(parts2, shards, entries)
    val all = inShardOrder(rows0 ++ rows1 ++ rows2)
    assert(
      all == (0 until 4)
        .map(i => id(i) -> Seq("r0", "r1", "r2").flatMap(r => Seq(s"$r-$i-a", s"$r-$i-b")))
        .toMap
    )
    again.stop()
  }

  test("the automatic size keeps a batch at 2 tasks per core, and one shard per task below that") {
    assert(ShardGrouping.shardsPerTask(None, Some(2), 4) == 1)
    assert(ShardGrouping.shardsPerTask(None, Some(2), 16) == 4)
    assert(ShardGrouping.shardsPerTask(None, Some(2), 1024) == 256)
    assert(ShardGrouping.shardsPerTask(None, Some(200), 1024) == 3)
    assert(ShardGrouping.shardsPerTask(None, Some(0), 0) == 1)
  }

  test(
    "shards per task: the option first, then the automatic size (a batch read's at 1 task per core), else 1"
  ) {
    assert(ShardGrouping.shardsPerTask(Some(3), Some(2), 4) == 3)
    assert(ShardGrouping.shardsPerTask(None, Some(2), 4) == 1)
    assert(ShardGrouping.shardsPerTask(None, Some(2), 4, tasksPerCore = 1) == 2)
    assert(ShardGrouping.shardsPerTask(None, None, 4) == 1)
  }
}
