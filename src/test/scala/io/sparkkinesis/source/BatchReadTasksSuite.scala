package io.sparkkinesis.source

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicInteger

import scala.collection.mutable

import io.sparkkinesis.client._
import io.sparkkinesis.reader.RunBound
import io.sparkkinesis.resources.Lease
import org.scalatest.funsuite.AnyFunSuite

/** The planning of batch reads: ends pinned in parallel, and what pinning an end costs. */
class BatchReadTasksSuite extends AnyFunSuite {

  test("ends are pinned in parallel, at most DriverThreads.Max at once, in the order of the shards") {
    val running = new AtomicInteger()
    val most = new AtomicInteger()
    val threads = ConcurrentHashMap.newKeySet[String]()
    // The first two shards wait for each other: pinned one after the other, the first would wait out the 60 s.
    val together = new java.util.concurrent.CountDownLatch(2)
    val out = DriverThreads.inParallel(0 until 64) { i =>
      val now = running.incrementAndGet()
      most.accumulateAndGet(now, math.max)
      threads.add(Thread.currentThread().getName)
      if (i < 2) {
        together.countDown()
        together.await(60, java.util.concurrent.TimeUnit.SECONDS)
      }
      running.decrementAndGet()
      i * 2
    }
    assert(out == (0 until 64).map(_ * 2))
    assert(most.get() > 1 && most.get() <= DriverThreads.Max, most.get())
    assert(!threads.contains(Thread.currentThread().getName))
    assert(
      DriverThreads.inParallel(Seq(7))(_ + 1) == Seq(8),
      "a single shard is pinned on the caller's thread"
    )
  }

  test("a failure to pin one end is thrown as it was, not wrapped") {
    val e = intercept[IllegalStateException] {
      DriverThreads.inParallel(0 until 8)(i => if (i == 5) throw new IllegalStateException("shard 5") else i)
    }
    assert(e.getMessage == "shard 5")
  }

  test(
    "the driver pins each end with a GetShardIterator and one probe; a record found fixes it by sequence number"
  ) {
    val calls = mutable.Buffer[String]()
    val listing = new StreamFakes.Listing(StreamFakes.open("shardId-000000000000", "shardId-000000000001"))
    val client = new StreamMetadataClient with ShardRecordsClient {
      def describeStream(streamName: String): StreamSummary = listing.describeStream(streamName)
      def listShardsPage(streamName: String, nextToken: Option[String]): ShardPage =
        listing.listShardsPage(streamName, nextToken)
      def getShardIterator(streamName: String, shardId: String, start: IteratorStart): String = {
        calls.synchronized(calls += s"GetShardIterator $start")
        s"at-$shardId"
      }
      // The first record after the pin: put after the plan (a tip) or at the time (a timestamp).
      def getRecords(iterator: String, limit: Int): RecordsResponse = {
        calls.synchronized(calls += "GetRecords")
        RecordsResponse(Seq(KinesisRecord(Array[Byte](1), "k", "42", 0L)), Some(s"$iterator+"), Some(0L), Nil)
      }
      def close(): Unit = ()
    }
    def bounds(options: (String, String)*): Seq[RunBound] =
      new KinesisBatch(StreamFakes.config(options: _*), () => Lease.owning(client)(() => ()))
        .planInputPartitions()
        .toSeq
        .flatMap(StreamFakes.task(_).shards.map(_.bound))
    // Fixed by sequence number, the bound cannot expire however long the tasks wait for executors.
    assert(bounds() == Seq(RunBound.Before("42"), RunBound.Before("42")))
    assert(calls.sorted == Seq.fill(2)("GetRecords") ++ Seq.fill(2)("GetShardIterator Latest"), calls)
    calls.clear()
    val end = "AT_TIMESTAMP 2026-11-24T10:00:00Z"
    assert(bounds("kinesis.endingPosition" -> end) == Seq(RunBound.Before("42"), RunBound.Before("42")))
    assert(calls.count(_ == "GetRecords") == 2, calls)
    assert(calls.count(_.startsWith("GetShardIterator AtTimestamp")) == 2, calls)
  }
}
