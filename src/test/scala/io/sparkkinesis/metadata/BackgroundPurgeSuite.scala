package io.sparkkinesis.metadata

import java.util.concurrent.TimeUnit

import scala.jdk.CollectionConverters._

import org.scalatest.concurrent.Eventually
import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.time.{Millis, Seconds, Span}

/** Purges requested with `purgeInBackground` run on the committer's own thread, one at a time, coalesced. */
class BackgroundPurgeSuite extends AnyFunSuite with Eventually {

  implicit override val patienceConfig: PatienceConfig = PatienceConfig(Span(60, Seconds), Span(20, Millis))

  private def withBatches(c: GatedCommitter, batches: Range): Unit =
    batches.foreach(b => assert(c.putIfAbsent(b.toLong, "s/shardId-0", s"batch $b")))

  test("purgeInBackground returns at once; the purge then deletes the earlier batches on another thread") {
    val c = new GatedCommitter
    try {
      withBatches(c, 0 to 6)
      c.purgeInBackground(5) // the purge waits for the gate: the caller must not
      eventually(assert(c.purgeThread.isDefined, "the purge started"))
      assert(c.purgeThread.get ne Thread.currentThread())
      assert(c.get(0, "s/shardId-0").isDefined, "nothing deleted before the purge ran")
      c.gate.countDown()
      eventually(
        assert((0 to 4).forall(b => c.get(b.toLong, "s/shardId-0").isEmpty), "batches 0 to 4 deleted")
      )
      assert((5 to 6).forall(b => c.get(b.toLong, "s/shardId-0").contains(s"batch $b")))
      assert(c.bounds.asScala.toList == List(5L))
    } finally c.close()
  }

  test("requests made while a purge runs coalesce into one more purge, to the highest bound") {
    val c = new GatedCommitter
    try {
      withBatches(c, 0 to 9)
      c.purgeInBackground(3)
      eventually(assert(c.purgeThread.isDefined, "the first purge started"))
      Seq(4L, 7L, 5L, 6L).foreach(c.purgeInBackground)
      c.gate.countDown()
      eventually(assert(c.bounds.size == 2, "two purges ran"))
      // One more request runs after whatever the coalesced ones left: once it ran, no purge can still be coming.
      c.purgeInBackground(8)
      eventually(
        assert((0 to 7).forall(b => c.get(b.toLong, "s/shardId-0").isEmpty), "batches 0 to 7 deleted")
      )
      assert(c.bounds.asScala.toList == List(3L, 7L, 8L))
      assert((8 to 9).forall(b => c.get(b.toLong, "s/shardId-0").isDefined))
    } finally c.close()
  }

  test("a failed purge fails no caller; the next request deletes what it left") {
    val c = new GatedCommitter
    try {
      withBatches(c, 0 to 5)
      c.failures = 1
      c.gate.countDown()
      c.purgeInBackground(3)
      eventually(assert(c.bounds.size == 1, "the failed purge ran"))
      assert(c.get(0, "s/shardId-0").isDefined, "the failed purge deleted nothing")
      c.purgeInBackground(4)
      // A read racing the purge may find the entry listed and then gone (FileNotFoundException): ask again.
      eventually {
        assert((0 to 3).forall(b => c.get(b.toLong, "s/shardId-0").isEmpty), "batches 0 to 3 deleted")
      }
      assert(c.get(4, "s/shardId-0").isDefined)
    } finally c.close()
  }

  test("close waits for a purge only briefly, then interrupts it; later requests are ignored") {
    val c = new GatedCommitter
    withBatches(c, 0 to 2)
    c.purgeInBackground(2)
    eventually(assert(c.purgeThread.isDefined, "the purge started"))
    val started = System.nanoTime()
    c.close() // the gate never opens
    val waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)
    assert(
      // The upper bound only tells "briefly" from "until the purge ends" (never here), so a loaded machine passes.
      waitedMs >= BackgroundPurge.CloseWaitMs - 100 && waitedMs < BackgroundPurge.CloseWaitMs + 30000,
      waitedMs
    )
    eventually(assert(c.interrupted == 1, "the purge was interrupted"))
    c.gate.countDown()
    // The same request to an open committer, at the same time, is purged: once it is, the closed one would have been.
    val open = new GatedCommitter
    try {
      withBatches(open, 0 to 2)
      open.gate.countDown()
      Seq(c, open).foreach(_.purgeInBackground(3))
      eventually(
        assert(open.get(0, "s/shardId-0").isEmpty && open.bounds.size == 1, "the open committer purged")
      )
    } finally open.close()
    assert(c.bounds.isEmpty && c.get(0, "s/shardId-0").isDefined, "nothing purged after close")
  }

  test("close lets a purge that finishes in time complete") {
    val c = new GatedCommitter
    withBatches(c, 0 to 2)
    c.purgeInBackground(2)
    eventually(assert(c.purgeThread.isDefined, "the purge started"))
    new Thread(() => { Thread.sleep(300); c.gate.countDown() }).start()
    c.close()
    assert(c.interrupted == 0 && c.bounds.asScala.toList == List(2L))
    assert(c.get(1, "s/shardId-0").isEmpty && c.get(2, "s/shardId-0").isDefined)
  }
}
