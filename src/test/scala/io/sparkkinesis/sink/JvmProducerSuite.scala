package io.sparkkinesis.sink

import java.nio.charset.StandardCharsets.UTF_8
import java.util.concurrent.{ConcurrentHashMap, CountDownLatch, TimeUnit}

import scala.jdk.CollectionConverters._

import io.sparkkinesis.client._
import io.sparkkinesis.config.{MetricsLevel, ProducerSettings, ThreadingModel}
import io.sparkkinesis.reader.KplAggregation
import org.scalatest.BeforeAndAfterEach
import org.scalatest.funsuite.AnyFunSuite

/** The in-JVM producer against a fake stream that places records as Kinesis does. */
class JvmProducerSuite extends AnyFunSuite with BeforeAndAfterEach {

  private def settings(
      aggregation: Boolean = true,
      bufferedMs: Long = 100,
      connections: Long = 4,
      ttlMs: Long = 30000,
      rateLimit: Long = 150,
      maxCount: Long = 4294967295L,
      maxSize: Long = 51200,
      serviceManaged: Boolean = false,
      maxRecordBytes: Long = 1048576
  ) = ProducerSettings(
    region = "us-east-1",
    endpointHost = "localhost",
    endpointPort = 443,
    stsEndpoint = None,
    verifyCertificate = true,
    recordMaxBufferedTimeMs = bufferedMs,
    maxConnections = connections,
    aggregationEnabled = aggregation,
    aggregationMaxCount = maxCount,
    aggregationMaxSize = maxSize,
    recordTtlMs = ttlMs,
    requestTimeoutMs = 6000,
    rateLimit = rateLimit,
    metricsLevel = MetricsLevel.NoMetrics,
    threadingModel = ThreadingModel.PerRequest,
    serviceManagedDistribution = serviceManaged,
    maxRecordBytes = maxRecordBytes
  )

  private var stream: FakeKinesisStream = _
  private var producer: JvmProducer = _

  override def afterEach(): Unit = {
    if (producer != null) producer.close(1000)
    producer = null
  }

  private def start(s: ProducerSettings, shards: Int = 4): JvmProducer = {
    stream = new FakeKinesisStream(shards)
    producer = new JvmProducer(stream, s, Backoff(5, 20))
    producer
  }

  /** Adds the records, returns each one's outcome once every one is settled. */
  private final class Outcomes(n: Int) {
    val latch = new CountDownLatch(n)
    val byIndex = new ConcurrentHashMap[Int, RecordOutcome]()

    def callback(i: Int): RecordOutcome => Unit = { o =>
      assert(byIndex.put(i, o) == null, s"record $i settled twice")
      latch.countDown()
    }

    def await(seconds: Long = 30): Map[Int, RecordOutcome] = {
      assert(
        latch.await(seconds, TimeUnit.SECONDS),
        s"${latch.getCount} of $n records unsettled (${stream.requestCount} requests, ${stream.landed.size} landed, " +
          s"producer dead: ${producer.isDead})"
      )
      byIndex.asScala.toMap
    }
  }

  private def record(i: Int, hashKey: Option[BigInt] = None) =
    SinkRecord(s"key-${i % 97}", hashKey.map(_.toString).orNull, s"row-$i".getBytes(UTF_8))

  private def write(p: JvmProducer, from: Int, until: Int, outcomes: Outcomes, offset: Int = 0): Unit =
    (from until until).foreach(i => p.add("s", record(i), outcomes.callback(i - offset)))

  test("the shard map finds the open shard of a hash key, at range ends too") {
    val shards = new FakeKinesisStream(3).openShards
    val map = new ShardMap(shards.reverse)
    shards.foreach { s =>
      assert(map.shardFor(s.hashKeyRange.start).contains(s.shardId))
      assert(map.shardFor(s.hashKeyRange.end).contains(s.shardId))
      assert(map.shardFor((s.hashKeyRange.start + s.hashKeyRange.end) / 2).contains(s.shardId))
      assert(map.range(s.shardId).contains(s.hashKeyRange))
    }
    assert(new ShardMap(shards.take(1)).shardFor(shards(1).hashKeyRange.start).isEmpty)
  }

  test("records bound for one shard are aggregated; every sub-record lands within its shard's range") {
    val p = start(settings(bufferedMs = 50))
    val outcomes = new Outcomes(3000)
    write(p, 0, 3000, outcomes)
    p.flush()
    assert(outcomes.await().values.forall(_ == RecordOutcome.Acknowledged))
    assert(p.outstandingRecords == 0)
    val (kept, dropped) = stream.readBack()
    assert(dropped == 0)
    assert(kept.size == 3000)
    assert(stream.landed.size < 300, s"${stream.landed.size} Kinesis records for 3000 rows")
    val ranges = stream.allShards.map(s => s.shardId -> s.hashKeyRange).toMap
    stream.landed.asScala.foreach { case (shard, e) =>
      assert(e.data.length + e.partitionKey.length <= 51200)
      KplAggregation
        .deaggregate(e.data, e.partitionKey)
        .foreach(u => assert(ranges(shard).contains(u.hashKey)))
    }
    assert(stream.listings.get == 1)
  }

  test("requests carry at most 500 records; no more requests in flight than maxConnections") {
    val p = start(settings(aggregation = false, connections = 2), shards = 8)
    stream.delayMs = 5
    val outcomes = new Outcomes(4000)
    write(p, 0, 4000, outcomes)
    assert(outcomes.await().values.forall(_ == RecordOutcome.Acknowledged))
    assert(stream.requestSizes.asScala.max <= 500)
    assert(stream.requestSizes.asScala.exists(_ > 100), "records were not batched")
    assert(stream.maxInFlight.get <= 2)
    assert(stream.landed.size == 4000)
  }

  test("aggregates respect aggregationMaxCount and aggregationMaxSize") {
    val p = start(settings(maxCount = 10, maxSize = 300, bufferedMs = 1000), shards = 1)
    val outcomes = new Outcomes(500)
    write(p, 0, 500, outcomes)
    p.flush()
    assert(outcomes.await().values.forall(_ == RecordOutcome.Acknowledged))
    stream.landed.asScala.foreach { case (_, e) =>
      assert(e.data.length + e.partitionKey.getBytes(UTF_8).length <= 300)
      assert(KplAggregation.deaggregate(e.data, e.partitionKey).size <= 10)
    }
    assert(stream.landed.size >= 50)
  }

  test("a record too large to aggregate is sent alone, up to the stream's record limit") {
    val p = start(settings(maxRecordBytes = 2 * 1048576), shards = 1)
    val outcomes = new Outcomes(3)
    val big = Array.fill(1536 * 1024)(1.toByte)
    p.add("s", SinkRecord("a", null, big), outcomes.callback(0))
    p.add("s", SinkRecord("b", null, "x".getBytes(UTF_8)), outcomes.callback(1))
    p.add("s", SinkRecord("c", null, big), outcomes.callback(2))
    p.flush()
    assert(outcomes.await().values.forall(_ == RecordOutcome.Acknowledged))
    assert(stream.landed.asScala.count(_._2.data.length == big.length) == 2)
  }

  test(
    "a split behind the producer: the map is listed again, and an aggregate with a sub-record off its shard is put again whole"
  ) {
    val p = start(settings(bufferedMs = 20, connections = 1), shards = 2)
    val first = new Outcomes(1000)
    write(p, 0, 1000, first)
    p.flush()
    first.await()
    val listed = stream.listings.get
    val Seq(parent, other) = stream.openShards.map(_.shardId)
    stream.split(parent)
    // The next row goes to the shard left as it was, and holds the sender in its request while the others are
    // added: they are aggregated for the parent by the map the producer still has.
    val second = new Outcomes(2000)
    stream.gate = new CountDownLatch(1)
    val otherStart = stream.allShards.find(_.shardId == other).get.hashKeyRange.start
    p.add("s", SinkRecord("k", otherStart.toString, "row-1000".getBytes(UTF_8)), second.callback(0))
    write(p, 1001, 3000, second, offset = 1000)
    stream.gate.countDown()
    stream.gate = null
    p.flush()
    assert(second.await().values.forall(_ == RecordOutcome.Acknowledged))
    assert(stream.listings.get > listed, "the shard map was not listed again")
    val (kept, dropped) = stream.readBack()
    // Aggregates made for the parent landed on one child with sub-records of the other: the KCL drops those whole,
    // and the producer put every row of them again.
    assert(
      dropped > 0,
      "no aggregate landed on an unpredicted shard: the test did not reshard under the producer"
    )
    val rows = kept.map(r => new String(r._3, UTF_8)).toSet
    assert((0 until 3000).forall(i => rows(s"row-$i")))
  }

  test("a put that lands on a merged shard triggers a new listing, and no row is lost") {
    val p = start(settings(bufferedMs = 20, connections = 1), shards = 4)
    val first = new Outcomes(500)
    write(p, 0, 500, first)
    p.flush()
    first.await()
    val listed = stream.listings.get
    val open = stream.openShards.sortBy(_.hashKeyRange.start).map(_.shardId)
    stream.merge(open(0), open(1))
    stream.split(open(2))
    val second = new Outcomes(2000)
    write(p, 500, 2500, second, offset = 500)
    p.flush()
    assert(second.await().values.forall(_ == RecordOutcome.Acknowledged))
    assert(stream.listings.get > listed)
    // Every row is in an aggregate the KCL keeps: one whose sub-records are all within its shard's range.
    val (kept, _) = stream.readBack()
    val rows = kept.map(r => new String(r._3, UTF_8)).toSet
    assert((0 until 2500).forall(i => rows(s"row-$i")))
  }

  test("throttled entries are retried with back-off until they land") {
    val p = start(settings(aggregation = false))
    val attempts = new ConcurrentHashMap[String, Integer]()
    stream.entryError = e => {
      val n = attempts.merge(new String(e.data, UTF_8), 1, (a: Integer, b: Integer) => Integer.valueOf(a + b))
      if (n <= 2 && e.partitionKey.hashCode % 3 == 0) Some("ProvisionedThroughputExceededException") else None
    }
    val outcomes = new Outcomes(600)
    write(p, 0, 600, outcomes)
    assert(outcomes.await().values.forall(_ == RecordOutcome.Acknowledged))
    assert(attempts.values.asScala.exists(_ == 3))
    assert(stream.landed.size == 600)
  }

  test("a failed request is retried; a record still failing at its TTL fails with the last error") {
    val p = start(settings(ttlMs = 500))
    @volatile var failures = 0
    stream.requestError = () => { failures += 1; Some(new PutRequestFailed("InternalFailure", "try again")) }
    val outcomes = new Outcomes(5)
    val started = System.nanoTime()
    write(p, 0, 5, outcomes)
    val settled = outcomes.await()
    val elapsedMs = (System.nanoTime() - started) / 1000000
    assert(elapsedMs >= 400 && elapsedMs < 10000)
    assert(failures > 3)
    settled.values.foreach {
      case RecordOutcome.Failed(reason) =>
        assert(reason.contains("kinesis.sink.recordTtl (500 ms)"), reason)
        assert(reason.contains("InternalFailure: try again"), reason)
      case other => fail(s"expected a failure, got $other")
    }
    assert(p.outstandingRecords == 0)
  }

  test("an error retrying cannot cure fails the record at once") {
    val p = start(settings(aggregation = false))
    stream.entryError = e => if (e.partitionKey == "key-1") Some("KMSAccessDeniedException") else None
    val outcomes = new Outcomes(3)
    write(p, 0, 3, outcomes)
    val settled = outcomes.await(5)
    assert(settled(0) == RecordOutcome.Acknowledged && settled(2) == RecordOutcome.Acknowledged)
    settled(1) match {
      case RecordOutcome.Failed(reason) =>
        assert(reason.contains("Kinesis refused it: KMSAccessDeniedException"))
      case other => fail(s"expected a failure, got $other")
    }
  }

  test("a stream with service-managed distribution: no aggregation, no shard listing") {
    val p = start(settings(serviceManaged = true))
    val outcomes = new Outcomes(200)
    (0 until 200).foreach(i =>
      p.add("s", SinkRecord(null, null, s"row-$i".getBytes(UTF_8)), outcomes.callback(i))
    )
    assert(outcomes.await().values.forall(_ == RecordOutcome.Acknowledged))
    assert(stream.listings.get == 0)
    assert(stream.landed.size == 200)
  }

  test("a few rows are sent at once, without waiting out the buffering time") {
    val p = start(settings(bufferedMs = 60000))
    val outcomes = new Outcomes(1)
    val started = System.nanoTime()
    p.add("s", record(1), outcomes.callback(0))
    outcomes.await(50)
    assert((System.nanoTime() - started) / 1000000 < 5000)
  }

  test(
    "the sender waits, without spinning, while its requests are in flight or the shard's rate is used up"
  ) {
    val p = start(settings(connections = 1, bufferedMs = 5, rateLimit = 1), shards = 1) // 10 records/s
    stream.delayMs = 1500
    val outcomes = new Outcomes(300)
    write(p, 0, 300, outcomes)
    Thread.sleep(300)
    val threads = java.lang.management.ManagementFactory.getThreadMXBean
    def senderCpuNanos = Thread.getAllStackTraces.keySet.asScala.toSeq
      .filter(t => t.getName == "spark-kinesis-jvm-producer" && t.isAlive)
      .map(t => math.max(0L, threads.getThreadCpuTime(t.getId)))
      .sum
    val before = senderCpuNanos
    Thread.sleep(2000)
    val usedMs = (senderCpuNanos - before) / 1000000
    assert(usedMs < 500, s"the sender used $usedMs ms of CPU in 2 s of waiting")
    stream.delayMs = 0
  }

  test("a shard's writes are paced at rateLimit percent of 1,000 records/s") {
    val p = start(settings(aggregation = false, rateLimit = 10), shards = 1) // 100 records/s
    val outcomes = new Outcomes(250)
    val started = System.nanoTime()
    write(p, 0, 250, outcomes)
    assert(outcomes.await().values.forall(_ == RecordOutcome.Acknowledged))
    val elapsedMs = (System.nanoTime() - started) / 1000000
    assert(elapsedMs >= 1300, s"250 records at 100/s after a full bucket of 100 took only $elapsedMs ms")
  }

  test("the shard map cannot be listed: rows are sent one record each, and listing is retried") {
    stream = new FakeKinesisStream(2) {
      val refuse = true
      override def listShards(s: String, openOnly: Boolean): Seq[ShardDescription] =
        if (refuse) {
          listings.incrementAndGet(); throw new PutRequestFailed("LimitExceededException", "slow down")
        } else super.listShards(s, openOnly)
    }
    producer = new JvmProducer(stream, settings(), Backoff(5, 20))
    val outcomes = new Outcomes(100)
    write(producer, 0, 100, outcomes)
    assert(outcomes.await().values.forall(_ == RecordOutcome.Acknowledged))
    assert(stream.landed.size == 100)
    assert(stream.listings.get >= 1)
  }
}
