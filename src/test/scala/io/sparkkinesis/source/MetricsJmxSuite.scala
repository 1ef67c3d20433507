package io.sparkkinesis.source

import java.lang.management.ManagementFactory
import java.util.{Optional, UUID}
import javax.management.ObjectName

import scala.jdk.CollectionConverters._

import io.sparkkinesis.reader.{ReadStats, ShardEnd}
import io.sparkkinesis.source.StreamFakes.{noConsumers, noRecords, Entries}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.read.streaming.ReadLimit
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

/**
 * The driver gauges through a real Spark metrics system and its JMX sink: a local Spark application configured with
 * `spark.metrics.conf.*.sink.jmx.class`, sources built and registered as a streaming query's thread builds them, and
 * the values read back from the platform MBean server. Spark names a driver source's metrics
 * `<spark.metrics.namespace>.driver.<source>.<gauge>`; its JmxSink (Dropwizard 4.2's JmxReporter, default domain
 * and names) publishes each as the MBean `metrics:name=<that name>,type=gauges` with the attribute `Value`. (The
 * Prometheus servlet is scraped in tests/test_metrics_sink.py.)
 */
class MetricsJmxSuite extends AnyFunSuite with BeforeAndAfterAll {
  private val Namespace = "sparkkinesis-jmx-suite"
  private val Shards = Seq("shardId-000000000000", "shardId-000000000001")
  private val Gauges = Seq("millisBehindLatest", "recordsRead", "bytesRead", "throttledCalls")
  private val mbeans = ManagementFactory.getPlatformMBeanServer
  private var spark: SparkSession = _

  override def beforeAll(): Unit = {
    spark = SparkSession
      .builder()
      .master("local[1]")
      .appName("MetricsJmxSuite")
      .config("spark.ui.enabled", "false")
      .config("spark.driver.host", "127.0.0.1")
      .config("spark.driver.bindAddress", "127.0.0.1")
      .config("spark.metrics.namespace", Namespace)
      .config("spark.metrics.conf.*.sink.jmx.class", "org.apache.spark.metrics.sink.JmxSink")
      .getOrCreate()
    // An application started before this suite (with other settings) would be reused, and nothing here would hold.
    assert(spark.sparkContext.getConf.get("spark.metrics.namespace", "") == Namespace)
  }

  override def afterAll(): Unit =
    try if (spark != null) spark.stop()
    finally {
      SparkSession.clearActiveSession()
      SparkSession.clearDefaultSession()
    }

  /** Every Kinesis gauge in JMX, by its name after `<namespace>.driver.`. */
  private def published(): Map[String, Long] = {
    val prefix = s"$Namespace.driver."
    mbeans
      .queryNames(new ObjectName(s"metrics:name=${prefix}kinesis.*,*"), null)
      .asScala
      .map { name =>
        assert(name.getKeyPropertyList.size == 2 && name.getKeyProperty("type") == "gauges", name)
        name.getKeyProperty("name").stripPrefix(prefix) -> mbeans
          .getAttribute(name, "Value")
          .asInstanceOf[Long]
      }
      .toMap
  }

  /** The value of one gauge, read by its exact MBean name. */
  private def value(gauge: String): Long = {
    val name = new ObjectName(s"metrics:name=$Namespace.driver.$gauge,type=gauges")
    mbeans.getAttribute(name, "Value").asInstanceOf[Long]
  }

  /** `prefix.<gauge>` -> value for the four gauges. */
  private def four(
      prefix: String,
      lag: Long,
      records: Long,
      bytes: Long,
      throttled: Long
  ): Map[String, Long] =
    Gauges.map(g => s"$prefix.$g").zip(Seq(lag, records, bytes, throttled)).toMap

  /**
   * A source of stream `orders` built on this thread with what Spark sets on a streaming query's thread (its id, and
   * a job description headed by its name), then started: [[DriverGauges.ofCurrentQuery]] names it from them.
   */
  private def startedStream(queryName: String, entries: Entries, now: => Long): KinesisMicroBatchStream = {
    val sc = spark.sparkContext
    val id = UUID.randomUUID().toString
    SparkSession.setActiveSession(spark)
    sc.setLocalProperty("sql.streaming.queryId", id)
    sc.setJobDescription(s"$queryName\nid = $id\nrunId = ${UUID.randomUUID()}\nbatch = init")
    try {
      val config = StreamFakes.config()
      new KinesisMicroBatchStream(
        config,
        new StreamFakes.Listing(StreamFakes.open(Shards: _*)),
        noRecords,
        noConsumers,
        StreamFakes.StoreOf(_ => entries),
        StreamFakes.template(config),
        10,
        () => now,
        executors = () => Nil
      ).start()
    } finally {
      sc.setLocalProperty("sql.streaming.queryId", null)
      sc.setJobDescription(null)
      SparkSession.clearActiveSession()
    }
  }

  /** Records, as `offset`'s tasks would, `shard` -> (records, bytes, lag, throttles, finished). */
  private def record(offset: KinesisOffset, entries: Entries)(
      ends: (String, (Long, Long, Long, Long, Boolean))*
  ): Unit = {
    val positions = offset.readShards.map { case (key, entry) => key.shardId -> (key, entry.position) }.toMap
    ends.foreach { case (shard, (records, bytes, lag, throttles, finished)) =>
      val (key, position) = positions(shard)
      val end = ShardEnd(position, finished, Nil, records, Some(lag), lag == 0L, false)
      val stats = ReadStats(bytes = bytes, throttles = throttles)
      entries.putIfAbsent(offset.batchId, key.metadataKey, RecordedEndJson.writeEnd(RecordedEnd(end, stats)))
    }
  }

  test(
    "the gauges reach JMX with the recorded values; a finished shard's go, and all of a stopped source's go"
  ) {
    val started = System.nanoTime()
    val entries = new Entries
    var now = 1000000L
    val stream = startedStream("lag check.v1", entries, now)
    val other = startedStream("lag check.v10", new Entries, now)
    val q = "kinesis.lag_check_v1.orders"
    val q10 = "kinesis.lag_check_v10.orders"
    val (s0, s1) = (s"$q.${Shards.head}", s"$q.${Shards(1)}")
    var stopped = false
    try {
      // Registered on start: the stream's gauges, at 0 before any batch.
      assert(published() == four(q, 0, 0, 0, 0) ++ four(q10, 0, 0, 0, 0))

      val initial = stream.initialOffset().asInstanceOf[KinesisOffset]
      val b0 = stream.latestOffset(initial, ReadLimit.allAvailable()).asInstanceOf[KinesisOffset]
      assert(b0.readShards.map(_._1.shardId).sorted == Shards)
      record(b0, entries)(
        Shards.head -> ((10L, 100L, 5000L, 2L, false)),
        Shards(1) -> ((4L, 40L, 200L, 0L, false))
      )
      stream.metrics(Optional.of(b0))
      assert(
        published() == four(q, 5000, 14, 140, 2) ++ four(s0, 5000, 10, 100, 2) ++ four(s1, 200, 4, 40, 0) ++
          four(q10, 0, 0, 0, 0)
      )
      assert(value(s"$q.recordsRead") == 14L && value(s"$s1.millisBehindLatest") == 200L)

      // Batch 1 reads shard 0 to its end: its gauges go, its counts stay in the stream's.
      now += 20000
      val b1 = stream.latestOffset(b0, ReadLimit.allAvailable()).asInstanceOf[KinesisOffset]
      assert(b1.batchId == b0.batchId + 1)
      record(b1, entries)(Shards.head -> ((1L, 10L, 0L, 0L, true)), Shards(1) -> ((3L, 30L, 0L, 0L, false)))
      stream.metrics(Optional.of(b1))
      stream.metrics(Optional.of(b1)) // reported again (a trigger without a batch): counted once
      assert(published() == four(q, 0, 18, 180, 2) ++ four(s1, 0, 7, 70, 0) ++ four(q10, 0, 0, 0, 0))

      // Stopping query v1 removes its MBeans only: not v10's (Spark removes every metric whose name starts with the
      // source's, and v1's query name is a prefix of v10's), nor Spark's own.
      stopped = true
      stream.stop()
      assert(published() == four(q10, 0, 0, 0, 0))
      other.stop()
      assert(published().isEmpty)
      assert(!mbeans.queryNames(new ObjectName(s"metrics:name=$Namespace.driver.*,*"), null).isEmpty)
    } finally
      if (!stopped) {
        stream.stop()
        other.stop()
      }
    info(s"took ${(System.nanoTime() - started) / 1000000} ms after the Spark application started")
  }
}
