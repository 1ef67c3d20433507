package io.sparkkinesis.client

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.LongAdder

import scala.jdk.CollectionConverters._

/** Kinesis operation names, spelled as the service spells them (the `X-Amz-Target` suffix). */
private[sparkkinesis] object KinesisApi {
  val GetRecords = "GetRecords"
  val GetShardIterator = "GetShardIterator"
  val SubscribeToShard = "SubscribeToShard"
  val ListShards = "ListShards"
  val DescribeStreamSummary = "DescribeStreamSummary"
  val DescribeStreamConsumer = "DescribeStreamConsumer"
  val RegisterStreamConsumer = "RegisterStreamConsumer"
  val DeregisterStreamConsumer = "DeregisterStreamConsumer"
  val ListStreamConsumers = "ListStreamConsumers"
}

/**
 * Kinesis requests made, by operation. One count per request the connector issues (one per page of a paged
 * call); the SDK's own retries of a request are not counted again. Safe to use from several threads.
 */
private[sparkkinesis] final class ApiCallCounter {
  private val counts = new ConcurrentHashMap[String, LongAdder]()

  def add(api: String): Unit = counts.computeIfAbsent(api, _ => new LongAdder).increment()

  /** Counts one `api` request, then makes it. */
  def counted[T](api: String)(request: => T): T = { add(api); request }

  def get(api: String): Long = Option(counts.get(api)).map(_.sum()).getOrElse(0L)

  /** Every non-zero count so far; the counter starts again from zero. */
  def drain(): Map[String, Long] =
    counts.asScala.iterator.map { case (k, v) => k -> v.sumThenReset() }.filter(_._2 > 0).toMap
}

/**
 * Client decorators that count each request into an [[ApiCallCounter]] before making it (a request that fails or
 * is throttled counts too). Closing a decorator does not close the client it wraps: that client is shared.
 */
private[sparkkinesis] object CountingClients {

  def records(client: ShardRecordsClient, calls: ApiCallCounter): ShardRecordsClient =
    new ShardRecordsClient {
      def getShardIterator(streamName: String, shardId: String, start: IteratorStart): String =
        calls.counted(KinesisApi.GetShardIterator)(client.getShardIterator(streamName, shardId, start))
      def getRecords(iterator: String, limit: Int): RecordsResponse =
        calls.counted(KinesisApi.GetRecords)(client.getRecords(iterator, limit))
      def close(): Unit = ()
    }

  def metadata(client: StreamMetadataClient, calls: ApiCallCounter): StreamMetadataClient =
    new StreamMetadataClient {
      def describeStream(streamName: String): StreamSummary =
        calls.counted(KinesisApi.DescribeStreamSummary)(client.describeStream(streamName))
      def listShardsPage(streamName: String, nextToken: Option[String]): ShardPage =
        calls.counted(KinesisApi.ListShards)(client.listShardsPage(streamName, nextToken))
      override def listShardsPageAfter(streamName: String, shardId: String): ShardPage =
        calls.counted(KinesisApi.ListShards)(client.listShardsPageAfter(streamName, shardId))
      def close(): Unit = ()
    }

  def consumers(client: StreamConsumerClient, calls: ApiCallCounter): StreamConsumerClient =
    new StreamConsumerClient {
      def describeConsumer(streamArn: String, consumerName: String): Option[StreamConsumer] =
        calls.counted(KinesisApi.DescribeStreamConsumer)(client.describeConsumer(streamArn, consumerName))
      def registerConsumer(stream: String, name: String, tags: Map[String, String]): StreamConsumer =
        calls.counted(KinesisApi.RegisterStreamConsumer)(client.registerConsumer(stream, name, tags))
      def deregisterConsumer(streamArn: String, consumerName: String): Unit =
        calls.counted(KinesisApi.DeregisterStreamConsumer)(client.deregisterConsumer(streamArn, consumerName))
      // Counted once, though the SDK may fetch several pages; the source never calls it.
      def listConsumers(streamArn: String): Seq[StreamConsumer] =
        calls.counted(KinesisApi.ListStreamConsumers)(client.listConsumers(streamArn))
    }
}
