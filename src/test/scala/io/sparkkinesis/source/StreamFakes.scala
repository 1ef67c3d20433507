package io.sparkkinesis.source

import scala.collection.mutable

import io.sparkkinesis.client._
import io.sparkkinesis.config.SourceConfig
import io.sparkkinesis.metadata.{MetadataCommitter, MetadataStore}
import org.apache.spark.sql.connector.read.InputPartition

/** In-memory stand-ins for what the driver side of the source talks to, for suites that run it without Kinesis. */
object StreamFakes {

  val FullRange: HashKeyRange = HashKeyRange(0, BigInt(2).pow(128) - 1)

  /** Open shards of the whole hash key range. */
  def open(shardIds: String*): Seq[ShardDescription] =
    shardIds.map(id => ShardDescription(id, None, None, FullRange, None))

  /**
   * The control plane of a stream whose listing is `shards` (which a test may change); `servedAt` is Kinesis' time
   * in its DescribeStreamSummary answer.
   */
  final class Listing(var shards: Seq[ShardDescription], servedAt: Option[Long] = None)
      extends StreamMetadataClient {

    def describeStream(streamName: String): StreamSummary =
      StreamSummary(
        streamName,
        s"arn:aws:kinesis:us-east-1:123456789012:stream/$streamName",
        "ACTIVE",
        24,
        servedAt
      )
    def listShardsPage(streamName: String, nextToken: Option[String]): ShardPage = ShardPage(shards, None)
    def close(): Unit = ()
  }

  /** The source options of a polling query of `orders` from TRIM_HORIZON, with no pause between fetches. */
  def config(overrides: (String, String)*): SourceConfig = SourceConfig.parse(
    Map(
      "kinesis.streamName" -> "orders",
      "kinesis.region" -> "us-east-1",
      "kinesis.startingPosition" -> "TRIM_HORIZON",
      "kinesis.getRecords.fetchIntervalMs" -> "0"
    ) ++ overrides,
    () => None
  )

  /**
   * Every task's partition before the stream fills it in. Each call has its own endpoint, so no executor-side
   * cache (iterators, subscriptions) carries over from another test.
   */
  def template(config: SourceConfig): ReadSettings =
    ReadSettings(
      config.client.copy(endpointUrl = s"http://fake-${System.nanoTime()}"),
      config.readMode,
      recordsPerFetch = 100,
      fetchIntervalMs = 0L,
      failOnDataLoss = true,
      includeSubSequenceNumber = false
    )

  /** A metadata store whose committer for a run is `committerFor(runId)` (tasks built here never travel). */
  final case class StoreOf(committerFor: String => MetadataCommitter) extends MetadataStore {
    def open(runId: String): MetadataCommitter = committerFor(runId)
  }

  /** The read task `p`, as the stream planned it. */
  def task(p: InputPartition): KinesisReadTask = p.asInstanceOf[KinesisReadTask]

  /** The one shard of a task of one shard. */
  def slice(p: InputPartition): ShardSlice = task(p).shards.head

  /** A metadata store in memory; `reads` counts the entries read. */
  final class Entries extends MetadataCommitter {
    val entries: mutable.Map[(Long, String), String] = mutable.Map.empty
    var reads = 0

    /** Synchronized: the driver reads a batch's task entries from parallel threads (see BatchEnds). */
    def putIfAbsent(batchId: Long, key: String, value: String): Boolean = synchronized {
      if (entries.contains((batchId, key))) false else { entries((batchId, key)) = value; true }
    }

    def get(batchId: Long, key: String): Option[String] = synchronized {
      reads += 1; entries.get((batchId, key))
    }
    def purgeBefore(batchId: Long): Unit = ()
  }

  /** A records client the driver must not use (it reads records only in AvailableNow runs). */
  val noRecords: ShardRecordsClient = new ShardRecordsClient {
    def getShardIterator(streamName: String, shardId: String, start: IteratorStart): String =
      throw new AssertionError("the driver reads no records outside AvailableNow")
    def getRecords(iterator: String, limit: Int): RecordsResponse = throw new AssertionError
    def close(): Unit = ()
  }

  /** A consumer client for polling queries, which never call it. */
  val noConsumers: StreamConsumerClient = new StreamConsumerClient {
    def describeConsumer(streamArn: String, consumerName: String): Option[StreamConsumer] =
      throw new AssertionError
    def registerConsumer(streamArn: String, consumerName: String, tags: Map[String, String]): StreamConsumer =
      throw new AssertionError
    def deregisterConsumer(streamArn: String, consumerName: String): Unit = throw new AssertionError
    def listConsumers(streamArn: String): Seq[StreamConsumer] = throw new AssertionError
  }
}
