package io.sparkkinesis.source

import io.sparkkinesis.client.HashKeyRange
import io.sparkkinesis.config.StreamIdentity
import io.sparkkinesis.metadata.MetadataStore
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
 * What a read task is part of, which decides what it records and how far it reads each shard: a streaming batch's
 * task records where each shard stopped in its query's metadata store, a batch read's records nothing.
 */
private[sparkkinesis] sealed trait TaskKind extends Serializable {

  /** Whether the task reads at the tip on one fetcher until its batch ends, recording its ends when it closes. */
  def realTime: Boolean = false
}

private[sparkkinesis] object TaskKind {

  /** A task of streaming batch `batchId` of run `runId`, which records its ends in `store`. */
  sealed trait Recording extends TaskKind {
    def store: MetadataStore
    def runId: String
    def batchId: Long
  }

  /** A micro-batch's task: one pass per shard, within the batch's limits. */
  final case class MicroBatch(store: MetadataStore, runId: String, batchId: Long) extends Recording

  /** A real-time batch's task: one shard, in passes on one fetcher at the tip, until the batch or the shard ends. */
  final case class RealTime(store: MetadataStore, runId: String, batchId: Long) extends Recording {
    override def realTime: Boolean = true
  }

  /** A batch read's task: each shard up to its bound, in as many passes as it takes. */
  case object BatchRead extends TaskKind
}

/** One read task: one shard, or several read at once (`kinesis.shardsPerTask`; `index` is the task's in the offset). */
private[sparkkinesis] final case class KinesisReadTask(
    kind: TaskKind,
    index: Option[Int],
    shards: Seq[ShardSlice],
    preferredExecutor: Option[ExecutorRef] = None
) extends InputPartition {
  require(shards.nonEmpty && (index.isDefined || shards.size == 1), "a task of several shards has an index")

  def task: ReadTask = ReadTask(index, shards.map(_.key))

  /** Where the task is, for log lines: its batch, or the batch read. */
  def describe: String = kind match {
    case r: TaskKind.Recording => s"batch ${r.batchId}"
    case TaskKind.BatchRead => "the batch read"
  }

  override def preferredLocations(): Array[String] = preferredExecutor.map(_.location).toArray
}
