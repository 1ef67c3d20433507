package io.sparkkinesis.source

import io.sparkkinesis.reader.{ShardEnd, ShardPosition}
import io.sparkkinesis.source.StreamFakes.FullRange
import org.apache.spark.sql.connector.read.streaming.PartitionOffset
import org.scalatest.funsuite.AnyFunSuite

/** The real-time batch state: the batch whose tasks run, the check of their reported ends, and of task slots. */
class RealTimeBatchesSuite extends AnyFunSuite {
  private val a = ShardKey("orders", "shardId-000000000000")
  private val b = ShardKey("orders", "shardId-000000000001")

  private def batch(id: Long, read: ShardKey*) = KinesisOffset(
    id,
    "run",
    read.map(k => k -> ShardEntry(ShardPosition.TrimHorizon, ShardStatus.Read, Nil, FullRange)).toMap
  )

  private def end(seq: String) =
    RecordedEnd(
      ShardEnd(ShardPosition.After(seq, ShardPosition.WholeRecord), false, Nil, 1L, Some(0L), true, false)
    )

  private def reported(key: ShardKey, seq: String, neverAsked: Boolean = false): PartitionOffset =
    KinesisShardOffset(key.streamName, key.shardId, RecordedEndJson.writeEnd(end(seq)), neverAsked)

  test("real-time mode is off until enabled") {
    val rt = new RealTimeBatches
    assert(!rt.enabled)
    rt.enable(StreamFakes.config("kinesis.maxRecordsPerTrigger" -> "5"))
    assert(rt.enabled)
  }

  test("the ended batch is the running one, with the end each shard reported") {
    val rt = new RealTimeBatches
    rt.started(batch(0, a))
    rt.started(batch(1, a, b))
    val (ended, ends) = rt.ended(Seq(reported(a, "7"), reported(b, "9")))
    assert(ended == batch(1, a, b))
    assert(ends == Map(a -> end("7"), b -> end("9")))
  }

  test("ends of a batch never planned, a shard without an end, or another source's offset fail") {
    val rt = new RealTimeBatches
    val unplanned = intercept[IllegalStateException](rt.ended(Seq(reported(a, "1"))))
    assert(unplanned.getMessage.contains("did not plan"))
    rt.started(batch(4, a, b))
    val missing = intercept[IllegalStateException](rt.ended(Seq(reported(a, "1"))))
    assert(missing.getMessage.endsWith(s"real-time batch 4: no end was reported for $b"))
    val foreign = new PartitionOffset {}
    intercept[IllegalStateException](rt.ended(Seq(reported(a, "1"), reported(b, "1"), foreign)))
  }

  test("a shard whose task was never asked warns once; twice in a row it fails the query") {
    val rt = new RealTimeBatches
    rt.started(batch(0, a, b))
    rt.ended(Seq(reported(a, "1"), reported(b, "1", neverAsked = true)))
    rt.started(batch(1, a, b))
    rt.ended(Seq(reported(a, "2", neverAsked = true), reported(b, "2"))) // another shard: a warning again
    rt.started(batch(2, a, b))
    val e =
      intercept[IllegalStateException](rt.ended(Seq(reported(a, "3", neverAsked = true), reported(b, "3"))))
    assert(e.getMessage.contains(s"the tasks of $a started only after the batch had ended"))
    assert(e.getMessage.contains("at least one task slot per shard"))
  }
}
