package io.sparkkinesis.source

import java.nio.charset.StandardCharsets.UTF_8

import scala.collection.mutable

import io.sparkkinesis.reader.{FakeShard, ShardPosition}
import io.sparkkinesis.source.StreamFakes._
import io.sparkkinesis.testutil.ErrorChecks.assertCondition
import org.apache.spark.sql.connector.read.streaming.ReadLimit
import org.scalatest.funsuite.AnyFunSuite

/**
 * Two attempts of one micro-batch read task running at once (speculation, or an executor that lost contact with the
 * driver and goes on while Spark retries its task): whichever attempt Spark keeps, the batch and the batches after
 * it hold every record exactly once.
 */
class ConcurrentAttemptsSuite extends AnyFunSuite {
  private val ShardId = "shardId-000000000000"

  private val settings = template(config())

  private def stream(entries: Entries) = {
    val c = config()
    new KinesisMicroBatchStream(
      c,
      new Listing(open(ShardId)),
      noRecords,
      noConsumers,
      StreamFakes.StoreOf(_ => entries),
      template(c),
      10
    )
  }

  /** Plans the batch after `start` and returns its one partition. */
  private def nextBatch(
      s: KinesisMicroBatchStream,
      start: KinesisOffset
  ): (KinesisOffset, KinesisReadTask) = {
    val end = s.latestOffset(start, ReadLimit.allAvailable()).asInstanceOf[KinesisOffset]
    assert(end.batchId == start.batchId + 1, "a batch was planned")
    val Array(p) = s.planInputPartitions(start, end)
    (end, task(p))
  }

  /** Every row an attempt delivers until it ends (or fails, which ends it too). */
  private def drain(reader: KinesisPartitionReader): Either[Throwable, Seq[String]] = {
    val out = mutable.ArrayBuffer[String]()
    try {
      while (reader.next()) out += new String(reader.get().getBinary(0), UTF_8)
      Right(out.toSeq)
    } catch {
      case e: EndRecording.LostToOtherAttempt => assertCondition(e, "KINESIS_RECORDED_END_MISMATCH"); Left(e)
    } finally reader.close()
  }

  test(
    "an attempt that read past the end another attempt recorded first fails; the next batch goes on exactly"
  ) {
    val shard = new FakeShard("orders", ShardId)
    val entries = new Entries
    val s = stream(entries)
    shard.putText("a", "b", "c")
    val (batch0, p0) = nextBatch(s, s.initialOffset().asInstanceOf[KinesisOffset])

    // Both attempts start before either recorded an end; the second one goes on reading after more records came.
    val first = new KinesisPartitionReader(settings, p0, shard, Some(entries))
    val second = new KinesisPartitionReader(settings, p0, shard, Some(entries))
    assert(drain(first) == Right(Seq("a", "b", "c")))
    shard.putText("d", "e")
    val lost = drain(second)
    assert(lost.isLeft, s"the attempt whose end differs must not stand, but it delivered $lost")
    assert(lost.left.exists(_.getMessage.contains("recorded a different end first")))

    // Spark keeps the first attempt's rows; the next batch starts at its recorded end.
    val (_, p1) = nextBatch(s, batch0)
    assert(
      p1.shards.head.start == ShardPosition.After(shard.all(2).sequenceNumber, ShardPosition.WholeRecord)
    )
    assert(drain(new KinesisPartitionReader(settings, p1, shard, Some(entries))) == Right(Seq("d", "e")))
  }

  test("an attempt that stopped before the end another attempt recorded first fails too") {
    val shard = new FakeShard("orders", ShardId)
    val entries = new Entries
    val s = stream(entries)
    shard.putText("a")
    val (batch0, p0) = nextBatch(s, s.initialOffset().asInstanceOf[KinesisOffset])
    val early = new KinesisPartitionReader(settings, p0, shard, Some(entries))
    val late = new KinesisPartitionReader(settings, p0, shard, Some(entries))
    // The early attempt has read everything there is, but has not recorded yet (its next fetch finds the tip).
    assert(early.next())
    shard.putText("b")
    assert(drain(late) == Right(Seq("a", "b")))
    val lost = drain(early)
    assert(lost.isLeft, s"the attempt whose end differs must not stand, but it delivered $lost")

    val (_, p1) = nextBatch(s, batch0)
    shard.putText("c")
    assert(drain(new KinesisPartitionReader(settings, p1, shard, Some(entries))) == Right(Seq("c")))
  }

  test("attempts that agree on the end both stand, and a retry after a recorded end reads exactly to it") {
    val shard = new FakeShard("orders", ShardId)
    val entries = new Entries
    val s = stream(entries)
    shard.putText("a", "b")
    val (_, p0) = nextBatch(s, s.initialOffset().asInstanceOf[KinesisOffset])
    val one = new KinesisPartitionReader(settings, p0, shard, Some(entries))
    val two = new KinesisPartitionReader(settings, p0, shard, Some(entries))
    assert(drain(one) == Right(Seq("a", "b")))
    assert(drain(two) == Right(Seq("a", "b")))
    shard.putText("c")
    assert(
      drain(new KinesisPartitionReader(settings, p0, shard, Some(entries))) == Right(Seq("a", "b")),
      "a retry replays"
    )
  }
}
