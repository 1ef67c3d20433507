package io.sparkkinesis.source

import scala.collection.mutable

import io.sparkkinesis.metadata.MetadataCommitter
import io.sparkkinesis.reader.{ShardEnd, ShardPosition}
import io.sparkkinesis.source.StreamFakes.{Entries, FullRange}
import org.scalatest.funsuite.AnyFunSuite

/** The driver's reading of recorded ends: once per batch, from the run's own store, never before the first batch. */
class BatchEndsSuite extends AnyFunSuite {
  private val a = ShardKey("orders", "shardId-000000000000")
  private val b = ShardKey("orders", "shardId-000000000001")

  private def end(seq: String) =
    RecordedEnd(
      ShardEnd(ShardPosition.After(seq, ShardPosition.WholeRecord), false, Nil, 1L, Some(0L), true, false)
    )

  private def offset(id: Long, run: String, tasks: Map[ShardKey, Option[Int]]) = KinesisOffset(
    id,
    run,
    tasks.map { case (k, task) =>
      k -> ShardEntry(ShardPosition.TrimHorizon, ShardStatus.Read, Nil, FullRange, task)
    }
  )

  /**
   * Each run's entries, and the runs whose store was opened and closed. Synchronized: BatchEnds opens and closes the
   * stores, and reads them, on its reader threads.
   */
  private final class Runs {
    private val stores = mutable.Map.empty[String, Entries]
    private val openedRuns = mutable.Buffer.empty[String]
    private val closedRuns = mutable.Buffer.empty[String]
    def opened: Seq[String] = synchronized(openedRuns.toList)
    def closed: Seq[String] = synchronized(closedRuns.toList)
    def entries(run: String): Entries = synchronized(stores.getOrElseUpdate(run, new Entries))

    def of(run: String): MetadataCommitter = {
      synchronized(openedRuns += run)
      new MetadataCommitter {
        def putIfAbsent(batchId: Long, key: String, value: String): Boolean =
          entries(run).putIfAbsent(batchId, key, value)
        def get(batchId: Long, key: String): Option[String] = entries(run).get(batchId, key)
        def purgeBefore(batchId: Long): Unit = ()
        override def close(): Unit = { Runs.this.synchronized(closedRuns += run); super.close() }
      }
    }
  }

  test("the ends of a batch are read once, one entry per task, grouped or not") {
    val runs = new Runs
    val ends = new BatchEnds(runs.of, 2)
    try {
      val store = runs.entries("r1")
      store.putIfAbsent(3, a.metadataKey, RecordedEndJson.writeEnd(end("5")))
      store.putIfAbsent(4, "tasks/0", RecordedEndJson.writeTaskEnds(Map(a -> end("6"), b -> end("8"))))
      val single = offset(3, "r1", Map(a -> None))
      assert(ends.of(single) == Map(a -> end("5")))
      assert(ends.of(single) == Map(a -> end("5")))
      assert(store.reads == 1, "asked again for the same batch: not read again")
      assert(ends.of(offset(4, "r1", Map(a -> Some(0), b -> Some(0)))) == Map(a -> end("6"), b -> end("8")))
      assert(store.reads == 2)
      assert(ends.of(offset(5, "r1", Map(a -> None))).isEmpty, "a batch whose tasks recorded nothing yet")
    } finally ends.close()
  }

  test("before the first batch nothing is read; remembered ends are not read back") {
    val runs = new Runs
    val ends = new BatchEnds(runs.of, 1)
    try {
      assert(ends.of(offset(-1, "r1", Map(a -> None))).isEmpty)
      assert(runs.opened.isEmpty, "no store opened for the initial offset")
      val batch = offset(0, "r1", Map(a -> None))
      ends.remember(batch, Map(a -> end("3")))
      assert(ends.of(batch) == Map(a -> end("3")))
      assert(runs.opened.isEmpty)
    } finally ends.close()
  }

  test("one run's store is open at a time: another run's batch closes it; close closes the last") {
    val runs = new Runs
    val ends = new BatchEnds(runs.of, 1)
    ends.of(offset(0, "r1", Map(a -> None)))
    ends.of(offset(0, "r2", Map(a -> None)))
    assert(runs.closed == Seq("r1"))
    ends.purge("r2", 1)
    ends.close()
    assert(runs.closed == Seq("r1", "r2"))
  }
}
