package io.sparkkinesis.source

import io.sparkkinesis.client.HashKeyRange
import io.sparkkinesis.config.StreamIdentity
import io.sparkkinesis.reader._
import org.apache.spark.sql.connector.read.InputPartition

/**
 * One shard's part of a read task: where it starts and how far the task may read it (records, time, bytes, a run
 * bound), and the facts of the shard the driver knew when it planned the batch.
 */
private[sparkkinesis] final case class ShardSlice(
    streamName: String,
    shardId: String,
    start: ShardPosition,
    hashKeyRange: HashKeyRange,
    streamArn: Option[String] = None,
    maxRecords: Long = Long.MaxValue,
    maxTimeMs: Option[Long] = None,
    maxBytes: Option[Long] = None,
    bound: RunBound = RunBound.Unbounded,
    shardClosed: Boolean = false,
    deliverOutsideRange: Boolean = false,
    // The stream's identity in the batch's offset, recorded with the task's end (see RecordedEnd).
    streamIdentity: Option[StreamIdentity] = None
) {
  def key: ShardKey = ShardKey(streamName, shardId)

  /** How a task reads this shard (requests name the stream by ARN when it was given as one). */
  def spec(settings: ReadSettings): ShardReadSpec = ShardReadSpec(
    streamArn.getOrElse(streamName),
    shardId,
    start,
    hashKeyRange,
    maxRecords,
    maxTimeMs,
    settings.recordsPerFetch,
    settings.failOnDataLoss,
    maxConsecutiveThrottles = settings.client.numRetries,
    maxBytes = maxBytes,
    bound = bound,
    deliverOutsideRange = deliverOutsideRange
  )
}

/**
 * One read task of a batch: one shard, or several (`kinesis.shardsPerTask`; `index` is then the task's index in the
 * batch's offset), read at once. A batch read's tasks have batch -1. A real-time task reads one shard until the
 * engine ends its batch.
 */
private[sparkkinesis] final case class KinesisReadTask(
    batchId: Long,
    runId: String,
    index: Option[Int],
    shards: Seq[ShardSlice],
    preferredExecutor: Option[ExecutorRef] = None,
    realTime: Boolean = false
) extends InputPartition {
  require(shards.nonEmpty && (index.isDefined || shards.size == 1), "a task of several shards has an index")

  def task: ReadTask = ReadTask(index, shards.map(_.key))

  override def preferredLocations(): Array[String] = preferredExecutor.map(_.location).toArray
}
