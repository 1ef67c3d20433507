package io.sparkkinesis.source

import java.util.Optional

import scala.jdk.CollectionConverters._

import io.sparkkinesis.client._
import io.sparkkinesis.config.SourceConfig
import io.sparkkinesis.reader.{ReadStats, ShardEnd}
import org.apache.spark.sql.connector.read.streaming.ReadLimit
import io.sparkkinesis.source.StreamFakes.{noConsumers, noRecords, Entries}
import org.scalatest.funsuite.AnyFunSuite

/** The driver's Kinesis requests are reported with the batch they planned, once, next to the tasks' requests. */
class StreamApiCallsSuite extends AnyFunSuite {
  private val Full = HashKeyRange(0, BigInt(2).pow(128) - 1)
  private val Shards = Seq("shardId-000000000000", "shardId-000000000001")

  private final class Metadata extends StreamMetadataClient {

    def describeStream(streamName: String): StreamSummary =
      StreamSummary(streamName, s"arn:aws:kinesis:us-east-1:123456789012:stream/$streamName", "ACTIVE", 24)

    def listShardsPage(streamName: String, nextToken: Option[String]): ShardPage =
      ShardPage(Shards.map(id => ShardDescription(id, None, None, Full, None)), None)
    def close(): Unit = ()
  }

  /** What the tasks of `offset` record: each read shard read 2 records with 3 GetRecords and 1 GetShardIterator. */
  private def runTasks(offset: KinesisOffset, entries: Entries, atTip: Boolean): Unit =
    offset.readShards.foreach { case (key, entry) =>
      val end = ShardEnd(entry.position, false, Nil, 2L, Some(if (atTip) 0L else 1000L), atTip, false)
      val stats = ReadStats(bytes = 10, getRecordsCalls = 3, getShardIteratorCalls = 1)
      entries.putIfAbsent(offset.batchId, key.metadataKey, RecordedEndJson.writeEnd(RecordedEnd(end, stats)))
    }

  test(
    "batch N reports the tasks' requests and the driver's since batch N-1 was planned, idle triggers included"
  ) {
    val options = Map(
      "kinesis.streamName" -> "orders",
      "kinesis.region" -> "us-east-1",
      "kinesis.startingPosition" -> "TRIM_HORIZON",
      "kinesis.describeShardInterval" -> "1000",
      // Longer than two safety intervals of ShardListing (15 s): two triggers list, then the third plans a batch.
      "kinesis.idleProbeIntervalMs" -> "40000",
      // A batch that found records at the tips is followed by one no sooner than this (BatchPacing).
      "kinesis.getRecords.fetchIntervalMs" -> "40000"
    )
    val config = SourceConfig.parse(options, () => None)
    val entries = new Entries
    var now = 1000000L
    val template = ReadSettings.of(config)
    val stream =
      new KinesisMicroBatchStream(
        config,
        new Metadata,
        noRecords,
        noConsumers,
        StreamFakes.StoreOf(_ => entries),
        template,
        10,
        () => now
      )
    def metrics(o: KinesisOffset) = stream.metrics(Optional.of(o)).asScala
    try {
      val initial = stream.initialOffset().asInstanceOf[KinesisOffset] // ListShards
      val b0 = stream.latestOffset(initial, ReadLimit.allAvailable()).asInstanceOf[KinesisOffset]
      assert(b0.batchId == initial.batchId + 1 && b0.readShards.size == 2)
      now += 2000
      // Spark asks for the initial offset again when it runs the first batch: the same answer, no new request.
      assert(stream.initialOffset() == initial)
      runTasks(b0, entries, atTip = false)
      val m0 = metrics(b0)
      // Start-up: DescribeStreamSummary and ListShards, with the tasks' calls.
      assert(m0("describeStreamSummaryCalls") == "1" && m0("listShardsCalls") == "1", m0)
      assert(m0("getRecordsCalls") == "6" && m0("getShardIteratorCalls") == "2", m0)
      assert(m0("driverApiCalls") == "2" && m0("apiCalls") == "10", m0)
      assert(metrics(b0) == m0, "asking again reports the same batch the same way")

      now += ShardListing.SafetyIntervalMs // a listing is due again: planning batch 1 lists the shards
      val b1 = stream.latestOffset(b0, ReadLimit.allAvailable()).asInstanceOf[KinesisOffset]
      assert(b1.batchId == b0.batchId + 1)
      runTasks(b1, entries, atTip = true)
      val m1 = metrics(b1)
      assert(m1("describeStreamSummaryCalls") == "0" && m1("listShardsCalls") == "1", m1)
      assert(m1("driverApiCalls") == "1" && m1("apiCalls") == "9", m1)

      // Caught up: two triggers find nothing new (each lists the shards), then a batch is planned.
      now += ShardListing.SafetyIntervalMs
      assert(stream.latestOffset(b1, ReadLimit.allAvailable()).asInstanceOf[KinesisOffset] == b1)
      now += ShardListing.SafetyIntervalMs
      assert(stream.latestOffset(b1, ReadLimit.allAvailable()).asInstanceOf[KinesisOffset] == b1)
      assert(metrics(b1) == m1, "requests of triggers without a batch do not change the last batch's metrics")
      now += ShardListing.SafetyIntervalMs
      val b2 = stream.latestOffset(b1, ReadLimit.allAvailable()).asInstanceOf[KinesisOffset]
      assert(b2.batchId == b1.batchId + 1)
      runTasks(b2, entries, atTip = true)
      val m2 = metrics(b2)
      assert(m2("listShardsCalls") == "3" && m2("driverApiCalls") == "3", m2)
      assert(metrics(b1) == m1)
    } finally stream.stop()
  }
}
