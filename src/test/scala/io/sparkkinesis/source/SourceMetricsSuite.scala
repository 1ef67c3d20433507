package io.sparkkinesis.source

import io.sparkkinesis.client._
import io.sparkkinesis.reader.{FakeShard, ReadStats, ShardEnd, ShardPosition}
import org.scalatest.funsuite.AnyFunSuite

import scala.jdk.CollectionConverters._

class SourceMetricsSuite extends AnyFunSuite {

  private def ended(stats: ReadStats, lag: Option[Long] = Some(0L), records: Long = 0L) =
    RecordedEnd(ShardEnd(ShardPosition.TrimHorizon, false, Nil, records, lag, lag.contains(0L), false), stats)

  test("API calls are the sum of every task's calls and the driver's, by operation, with their total") {
    val ends = Seq(
      ended(ReadStats(getRecordsCalls = 3, getShardIteratorCalls = 1)),
      ended(ReadStats(getRecordsCalls = 2, getShardIteratorCalls = 0)),
      ended(ReadStats(subscribeToShardCalls = 4))
    )
    val driver = Map(
      KinesisApi.ListShards -> 2L,
      KinesisApi.DescribeStreamSummary -> 1L,
      KinesisApi.GetRecords -> 5L, // AvailableNow tip probes
      KinesisApi.GetShardIterator -> 2L,
      KinesisApi.DescribeStreamConsumer -> 3L,
      KinesisApi.RegisterStreamConsumer -> 1L
    )
    val m = SourceMetrics.of(ends, None, driver)
    assert(m("getRecordsCalls") == "10")
    assert(m("getShardIteratorCalls") == "3")
    assert(m("subscribeToShardCalls") == "4")
    assert(m("listShardsCalls") == "2")
    assert(m("describeStreamSummaryCalls") == "1")
    assert(m("describeStreamConsumerCalls") == "3")
    assert(m("registerStreamConsumerCalls") == "1")
    assert(m("apiCalls") == "24")
    assert(m("driverApiCalls") == "14")
  }

  test("every reported operation is present with 0 when nothing was called; others appear only when made") {
    val m = SourceMetrics.of(Nil, None)
    SourceMetrics.ReportedApis.foreach(api => assert(m(SourceMetrics.callsMetric(api)) == "0", api))
    assert(m("apiCalls") == "0" && m("driverApiCalls") == "0")
    assert(!m.contains("deregisterStreamConsumerCalls"))
    val withOther = SourceMetrics.of(Nil, None, Map(KinesisApi.DeregisterStreamConsumer -> 1L))
    assert(withOther("deregisterStreamConsumerCalls") == "1" && withOther("apiCalls") == "1")
  }

  test("metric names follow the operation names") {
    assert(SourceMetrics.callsMetric("ListShards") == "listShardsCalls")
    assert(SourceMetrics.callsMetric("SubscribeToShard") == "subscribeToShardCalls")
  }

  test("lag and volume metrics are computed over the shards that reported a lag") {
    val m = SourceMetrics.of(
      Seq(
        ended(ReadStats(bytes = 10), Some(100L), 2),
        ended(ReadStats(bytes = 5), Some(0L), 1),
        ended(ReadStats(), None)
      ),
      None
    )
    assert(
      m("maxMsBehindLatest") == "100" && m("minMsBehindLatest") == "0" && m("avgMsBehindLatest") == "50.0"
    )
    assert(m("recordsRead") == "3" && m("bytesRead") == "15" && m("shardsRead") == "3")
  }

  test(
    "counting clients count each request before making it, failed ones too, and ListShards once per page"
  ) {
    val calls = new ApiCallCounter
    val shard = new FakeShard()
    shard.putText((0 until 5).map(i => s"r$i"): _*)
    val records = CountingClients.records(shard, calls)
    val it = records.getShardIterator(shard.streamName, shard.shardId, IteratorStart.TrimHorizon)
    records.getRecords(it, 2)
    records.getRecords(it, 2)
    assert(calls.drain() == Map(KinesisApi.GetShardIterator -> 1L, KinesisApi.GetRecords -> 2L))

    val pages = Map(
      None -> ShardPage(Seq(desc("a")), Some("t1")),
      Some("t1") -> ShardPage(Seq(desc("b")), Some("t2")),
      Some("t2") -> ShardPage(Seq(desc("c")), None)
    )
    val metadata = CountingClients.metadata(
      new StreamMetadataClient {
        def describeStream(streamName: String): StreamSummary =
          throw new IllegalStateException("no such stream")
        def listShardsPage(streamName: String, nextToken: Option[String]): ShardPage = pages(nextToken)
        def close(): Unit = ()
      },
      calls
    )
    assert(metadata.listShards("s").map(_.shardId) == Seq("a", "b", "c"))
    intercept[IllegalStateException](metadata.describeStream("s"))
    assert(calls.get(KinesisApi.ListShards) == 3L && calls.get(KinesisApi.DescribeStreamSummary) == 1L)
    assert(calls.drain().values.sum == 4L)
    assert(calls.drain().isEmpty)
  }

  private def desc(id: String) =
    ShardDescription(id, None, None, HashKeyRange(BigInt(0), BigInt(1)), None)

  // Driver gauges in Spark's metrics system: names and values (no Spark here, so the sources stay unregistered and
  // their registries are read directly; tests/test_metrics_sink.py scrapes them through a real Spark sink).

  private def offset(batchId: Long, shards: (String, ShardStatus)*) = KinesisOffset(
    batchId,
    "run",
    shards.map { case (id, status) =>
      ShardKey(id.takeWhile(_ != '/'), id.dropWhile(_ != '/').tail) ->
        ShardEntry(ShardPosition.TrimHorizon, status, Nil, HashKeyRange(BigInt(0), BigInt(1)))
    }.toMap
  )

  private def end(
      id: String,
      records: Long,
      bytes: Long,
      lag: Option[Long],
      throttles: Long = 0,
      finished: Boolean = false
  ) =
    ShardKey(id.takeWhile(_ != '/'), id.dropWhile(_ != '/').tail) ->
      RecordedEnd(
        ShardEnd(ShardPosition.TrimHorizon, finished, Nil, records, lag, lag.contains(0L), false),
        ReadStats(bytes = bytes, throttles = throttles)
      )

  /** Every gauge of every source, as `<source name>.<gauge>` -> value. */
  private def values(gauges: DriverGauges): Map[String, Long] =
    gauges.sources.values.flatMap { source =>
      source.metricRegistry.getGauges.asScala.map { case (name, g) =>
        s"${source.sourceName}.$name" -> g.getValue.asInstanceOf[Long]
      }
    }.toMap

  import ShardStatus._

  test(
    "metrics sources are named kinesis.<query>.<stream>, in parts that Graphite, JMX and Prometheus keep whole"
  ) {
    assert(DriverGauges.sourceName("orders-etl", "orders") == "kinesis.orders-etl.orders")
    assert(DriverGauges.sourceName("daily orders.v2", "a.b") == "kinesis.daily_orders_v2.a_b")
    assert(DriverGauges.part("shardId-000000000001") == "shardId-000000000001")
    assert(DriverGauges.part("q/ü:{x}") == "q____x_")
    // The query's name heads Spark's job description of its batches; an unnamed query is known by its id.
    val id = "8a1f36a2-5f7e-4bb5-8c3e-17a0c1f8a1f3"
    assert(DriverGauges.queryOf(id, Some(s"orders etl\nid = $id\nrunId = r\nbatch = init")) == "orders etl")
    assert(DriverGauges.queryOf(id, Some(s"\nid = $id\nrunId = r\nbatch = init")) == id)
    assert(DriverGauges.queryOf(id, Some("something else")) == id)
    assert(DriverGauges.queryOf(id, None) == id)
    // Outside a streaming query (no Spark here) there is nothing to name: no sources, updates are harmless.
    val none = DriverGauges.ofCurrentQuery(Seq("s"))
    assert(none.sources.isEmpty)
    none.register()
    none.update(offset(0, "s/shard-a" -> Read), Map(end("s/shard-a", 1, 1, Some(0))))
    none.close()
  }

  test(
    "stream gauges add up what the batches read; shard gauges appear when read, keep their lag, go when finished"
  ) {
    val gauges = new DriverGauges(Some("q"), Seq("s", "t"))
    gauges.register() // no Spark application: not registered, and no failure
    val zero = Seq("millisBehindLatest", "recordsRead", "bytesRead", "throttledCalls")
    assert(values(gauges) == (for (s <- Seq("s", "t"); g <- zero) yield s"kinesis.q.$s.$g" -> 0L).toMap)

    gauges.update(
      offset(0, "s/shard-a" -> Read, "s/shard-b" -> Read, "t/shard-c" -> Read, "s/shard-d" -> Waiting),
      Map(
        end("s/shard-a", 10, 100, Some(5000), throttles = 2),
        end("s/shard-b", 4, 40, Some(200)),
        end("t/shard-c", 0, 0, None)
      )
    )
    val first = values(gauges)
    assert(
      first("kinesis.q.s.millisBehindLatest") == 5000 && first(
        "kinesis.q.s.shard-a.millisBehindLatest"
      ) == 5000
    )
    assert(first("kinesis.q.s.recordsRead") == 14 && first("kinesis.q.s.bytesRead") == 140)
    assert(first("kinesis.q.s.throttledCalls") == 2 && first("kinesis.q.s.shard-a.throttledCalls") == 2)
    assert(
      first("kinesis.q.s.shard-b.recordsRead") == 4 && first("kinesis.q.s.shard-b.millisBehindLatest") == 200
    )
    // A shard read without a lag reported is at 0 until one is; a shard not read yet (waiting) has no gauges.
    assert(first("kinesis.q.t.shard-c.millisBehindLatest") == 0)
    assert(!first.keys.exists(_.contains("shard-d")))

    // The same batch reported again (a trigger without new data) is not counted twice.
    gauges.update(
      offset(0, "s/shard-a" -> Read, "s/shard-b" -> Read, "t/shard-c" -> Read, "s/shard-d" -> Waiting),
      Map(end("s/shard-a", 10, 100, Some(5000), throttles = 2))
    )
    assert(values(gauges) == first)

    // Batch 1: a is read to its end (finished: its gauges go, its counts stay in the stream's), d starts; b is not
    // read this time and keeps the lag of its last read.
    gauges.update(
      offset(1, "s/shard-a" -> Read, "s/shard-b" -> Read, "t/shard-c" -> Read, "s/shard-d" -> Read),
      Map(
        end("s/shard-a", 1, 10, Some(0), finished = true),
        end("s/shard-d", 3, 30, Some(50)),
        end("t/shard-c", 7, 70, Some(0))
      )
    )
    val second = values(gauges)
    assert(!second.keys.exists(_.contains("shard-a")))
    assert(
      second("kinesis.q.s.shard-d.recordsRead") == 3 && second(
        "kinesis.q.s.shard-b.millisBehindLatest"
      ) == 200
    )
    assert(second("kinesis.q.s.millisBehindLatest") == 200, "the stream's lag is its live shards' largest")
    assert(second("kinesis.q.s.recordsRead") == 18 && second("kinesis.q.s.bytesRead") == 180)
    assert(second("kinesis.q.t.recordsRead") == 7 && second("kinesis.q.t.millisBehindLatest") == 0)

    // A shard the offset no longer tracks, or tracks as finished, loses its gauges too.
    gauges.update(offset(2, "s/shard-b" -> Finished, "s/shard-d" -> Read, "t/shard-c" -> Read), Map.empty)
    assert(
      values(gauges).keys.filter(_.count(_ == '.') == 4).toSet ==
        Set("s.shard-d", "t.shard-c").flatMap(p => zero.map(g => s"kinesis.q.$p.$g"))
    )

    gauges.close()
    assert(values(gauges).isEmpty)
    gauges.update(offset(3, "s/shard-d" -> Read), Map(end("s/shard-d", 1, 1, Some(0))))
    assert(values(gauges).isEmpty, "a closed source adds no gauges")
  }

  test("sinks may read the gauges while batches update them") {
    val gauges = new DriverGauges(Some("q"), Seq("s"))
    val stop = new java.util.concurrent.atomic.AtomicBoolean(false)
    val failures = new java.util.concurrent.ConcurrentLinkedQueue[Throwable]
    val readers = (1 to 3).map { _ =>
      val t = new Thread(() =>
        try {
          var last = 0L
          while (!stop.get()) {
            val v = values(gauges)
            val records = v("kinesis.q.s.recordsRead")
            assert(records >= last, "a total never goes down")
            last = records
          }
        } catch { case e: Throwable => failures.add(e) }
      )
      t.start()
      t
    }
    // Each batch reads a new shard and finishes the one before: shard gauges come and go all the time.
    (0 until 2000).foreach { b =>
      gauges.update(
        offset(b.toLong, s"s/x$b" -> Read, s"s/x${b - 1}" -> Read),
        Map(end(s"s/x$b", 1, 1, Some(b.toLong)), end(s"s/x${b - 1}", 0, 0, Some(0), finished = true))
      )
    }
    stop.set(true)
    readers.foreach(_.join())
    assert(failures.isEmpty, failures.asScala.headOption)
    assert(values(gauges)("kinesis.q.s.recordsRead") == 2000)
    val names = Seq("millisBehindLatest", "recordsRead", "bytesRead", "throttledCalls")
    assert(values(gauges).keySet == names.flatMap(g => Seq(s"kinesis.q.s.$g", s"kinesis.q.s.x1999.$g")).toSet)
    assert(values(gauges)("kinesis.q.s.millisBehindLatest") == 1999)
  }
}
