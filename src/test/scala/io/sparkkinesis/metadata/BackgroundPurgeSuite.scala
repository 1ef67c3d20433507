package io.sparkkinesis.metadata

import java.util.concurrent.TimeUnit

import scala.jdk.CollectionConverters._

import org.scalatest.funsuite.AnyFunSuite

/** Purges requested with `purgeInBackground` run on the committer's own thread, one at a time, coalesced. */
class BackgroundPurgeSuite extends AnyFunSuite {

  private def eventually(what: String)(condition: => Boolean): Unit = {
    val deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20)
    while (!condition) {
      assert(System.nanoTime() < deadline, s"not within 20 s: $what")
      Thread.sleep(20)
    }
  }

  private def withBatches(c: GatedCommitter, batches: Range): Unit =
    batches.foreach(b => assert(c.putIfAbsent(b.toLong, "s/shardId-0", s"batch $b")))

  test("purgeInBackground returns at once; the purge then deletes the earlier batches on another thread") {
    val c = new GatedCommitter
    try {
      withBatches(c, 0 to 6)
      c.purgeInBackground(5) // the purge waits for the gate: the caller must not
      eventually("the purge started")(c.purgeThread.isDefined)
      assert(c.purgeThread.get ne Thread.currentThread())
      assert(c.get(0, "s/shardId-0").isDefined, "nothing deleted before the purge ran")
      c.gate.countDown()
      eventually("batches 0 to 4 deleted")((0 to 4).forall(b => c.get(b.toLong, "s/shardId-0").isEmpty))
      assert((5 to 6).forall(b => c.get(b.toLong, "s/shardId-0").contains(s"batch $b")))
      assert(c.bounds.asScala.toList == List(5L))
    } finally c.close()
  }

  test("requests made while a purge runs coalesce into one more purge, to the highest bound") {
    val c = new GatedCommitter
    try {
      withBatches(c, 0 to 9)
      c.purgeInBackground(3)
      eventually("the first purge started")(c.purgeThread.isDefined)
      Seq(4L, 7L, 5L, 6L).foreach(c.purgeInBackground)
      c.gate.countDown()
      eventually("two purges ran")(c.bounds.size == 2)
      Thread.sleep(200)
      assert(c.bounds.asScala.toList == List(3L, 7L))
      assert((0 to 6).forall(b => c.get(b.toLong, "s/shardId-0").isEmpty))
      assert((7 to 9).forall(b => c.get(b.toLong, "s/shardId-0").isDefined))
    } finally c.close()
  }

  test("a failed purge fails no caller; the next request deletes what it left") {
    val c = new GatedCommitter
    try {
      withBatches(c, 0 to 5)
      c.failures = 1
      c.gate.countDown()
      c.purgeInBackground(3)
      eventually("the failed purge ran")(c.bounds.size == 1)
      assert(c.get(0, "s/shardId-0").isDefined, "the failed purge deleted nothing")
      c.purgeInBackground(4)
      // A read racing the purge may find the entry listed and then gone (FileNotFoundException): ask again.
      eventually("batches 0 to 3 deleted") {
        try {
          (0 to 3).forall(b => c.get(b.toLong, "s/shardId-0").isEmpty)
        } catch { case _: java.io.FileNotFoundException => false }
      }
      assert(c.get(4, "s/shardId-0").isDefined)
    } finally c.close()
  }

  test("close waits for a purge only briefly, then interrupts it; later requests are ignored") {
    val c = new GatedCommitter
    withBatches(c, 0 to 2)
    c.purgeInBackground(2)
    eventually("the purge started")(c.purgeThread.isDefined)
    val started = System.nanoTime()
    c.close() // the gate never opens
    val waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)
    assert(
      waitedMs >= BackgroundPurge.CloseWaitMs - 100 && waitedMs < BackgroundPurge.CloseWaitMs + 3000,
      waitedMs
    )
    eventually("the purge was interrupted")(c.interrupted == 1)
    c.gate.countDown()
    c.purgeInBackground(3)
    Thread.sleep(200)
    assert(c.bounds.isEmpty && c.get(0, "s/shardId-0").isDefined, "nothing purged after close")
  }

  test("close lets a purge that finishes in time complete") {
    val c = new GatedCommitter
    withBatches(c, 0 to 2)
    c.purgeInBackground(2)
    eventually("the purge started")(c.purgeThread.isDefined)
    new Thread(() => { Thread.sleep(300); c.gate.countDown() }).start()
    c.close()
    assert(c.interrupted == 0 && c.bounds.asScala.toList == List(2L))
    assert(c.get(1, "s/shardId-0").isEmpty && c.get(2, "s/shardId-0").isDefined)
  }
}
