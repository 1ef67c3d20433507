package io.sparkkinesis.source

import scala.collection.mutable

import io.sparkkinesis.client._
import io.sparkkinesis.metadata.MetadataCommitter

/** In-memory stand-ins for what the driver side of the source talks to, for suites that run it without Kinesis. */
object StreamFakes {

  /** A metadata store in memory; `reads` counts the entries read. */
  final class Entries extends MetadataCommitter {
    val entries: mutable.Map[(Long, String), String] = mutable.Map.empty
    var reads = 0

    def putIfAbsent(batchId: Long, key: String, value: String): Boolean =
      if (entries.contains((batchId, key))) false else { entries((batchId, key)) = value; true }
    def get(batchId: Long, key: String): Option[String] = { reads += 1; entries.get((batchId, key)) }
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
    def registerConsumer(streamArn: String, consumerName: String): StreamConsumer = throw new AssertionError
    def deregisterConsumer(streamArn: String, consumerName: String): Unit = throw new AssertionError
    def listConsumers(streamArn: String): Seq[StreamConsumer] = throw new AssertionError
  }
}
