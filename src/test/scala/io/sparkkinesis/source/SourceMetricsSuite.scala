package io.sparkkinesis.source

import io.sparkkinesis.client._
import io.sparkkinesis.reader.{FakeShard, ReadStats, ShardEnd, ShardPosition}
import org.scalatest.funsuite.AnyFunSuite

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
    assert(calls.snapshot == Map(KinesisApi.GetShardIterator -> 1L, KinesisApi.GetRecords -> 2L))

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
    assert(calls.drain().values.sum == 7L)
    assert(calls.snapshot.isEmpty)
  }

  private def desc(id: String) =
    ShardDescription(id, None, None, HashKeyRange(BigInt(0), BigInt(1)), None)
}
