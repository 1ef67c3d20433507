package io.sparkkinesis.client

/** Executor-side reads of one shard. A `streamName` parameter may also be a stream ARN. */
private[sparkkinesis] trait ShardRecordsClient extends AutoCloseable {
  def getShardIterator(streamName: String, shardId: String, start: IteratorStart): String
  def getRecords(iterator: String, limit: Int): RecordsResponse
}

/** Driver-side stream metadata. */
private[sparkkinesis] trait StreamMetadataClient extends AutoCloseable {

  /** Fails with a clear message when the stream does not exist. */
  def describeStream(streamName: String): StreamSummary

  /** One ListShards request: the first page of the stream's shards, or the page after `nextToken`. */
  def listShardsPage(streamName: String, nextToken: Option[String]): ShardPage

  /**
   * The first page of the shards created after `shardId` (ListShards' `ShardFilter` `AFTER_SHARD_ID`; Kinesis numbers
   * shards in creation order). A client without the filter answers with every shard, as a server that ignores it does.
   */
  def listShardsPageAfter(streamName: String, shardId: String): ShardPage = listShardsPage(streamName, None)

  /** Every shard Kinesis still lists, open and closed (all pages); with `after`, only those created after it. */
  final def listShards(streamName: String, after: Option[String] = None): Seq[ShardDescription] = {
    val shards = Vector.newBuilder[ShardDescription]
    var page = after.fold(listShardsPage(streamName, None))(listShardsPageAfter(streamName, _))
    shards ++= page.shards
    while (page.nextToken.isDefined) {
      page = listShardsPage(streamName, page.nextToken)
      shards ++= page.shards
    }
    shards.result()
  }
}

/** One page of ListShards; `nextToken` is set when more pages follow. */
private[sparkkinesis] final case class ShardPage(shards: Seq[ShardDescription], nextToken: Option[String])
