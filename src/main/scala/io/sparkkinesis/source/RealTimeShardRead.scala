package io.sparkkinesis.source

import io.sparkkinesis.client.ShardRecordsClient
import io.sparkkinesis.metadata.MetadataCommitter
import io.sparkkinesis.reader._
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.metric.CustomTaskMetric
import org.apache.spark.sql.connector.read.streaming.PartitionOffset

/**
 * Where a real-time task stopped reading its shard: the end it recorded, as the metadata store holds it. The driver
 * merges these into the next batch's offset without reading the store again. `neverAsked`: the engine never asked
 * the task for a record, because it started after its batch had ended (no free task slot while the batch ran).
 */
private[sparkkinesis] final case class KinesisShardOffset(
    streamName: String,
    shardId: String,
    recordedEnd: String,
    neverAsked: Boolean = false
) extends PartitionOffset {
  def key: ShardKey = ShardKey(streamName, shardId)
}

/**
 * One shard of one real-time batch (Spark 4.1's `Trigger.RealTime`): a long-running task that emits each record as
 * it arrives, until the engine's batch end or, earlier, the end of a closed shard. No Spark 4.1 types: the reader of
 * each line that has real-time mode wraps it.
 *
 * A first run reads in rounds of [[ShardReader]] on one fetcher: a round ends at the shard's tip, and the next one
 * goes on from there, so de-aggregation, the hash-range filter, positions and data-loss handling are those of a
 * micro-batch. With enhanced fan-out a caught-up fetch waits for the next push (no Kinesis call); with polling each
 * round is one GetRecords call paced by `fetchIntervalMs`. `next(timeoutMs)` is false when nothing arrived within
 * `timeoutMs`, which ends the task.
 *
 * The task records its end once, when it closes (the engine may stop asking for records without a last call). A
 * batch run again (a retried task, or a restart before the batch's offset was logged) finds that end and reads
 * exactly up to it; a batch that never recorded ends (the query stopped while it ran) is read again from its start,
 * so its rows already emitted are emitted again.
 */
private[sparkkinesis] final class RealTimeShardRead(
    settings: ReadSettings,
    task: KinesisReadTask,
    records: ShardRecordsClient,
    committer: MetadataCommitter,
    nanoTime: () => Long = () => System.nanoTime(),
    releaseClient: () => Unit = () => ()
) {
  private val slice = task.shards.head
  private val recordedJson = committer.get(task.batchId, slice.key.metadataKey)
  private val recorded = recordedJson.map(RecordedEndJson.readEnd)

  private val fetchers = settings.fetchers(records)
  private val firstSpec = slice.spec(settings)

  private val fetcher = fetchers.open(
    ShardRead(firstSpec, replaying = recorded.isDefined, shardClosed = slice.shardClosed, followTip = true)
  )
  private val rows = new ShardRows(slice.streamName, slice.shardId, settings.includeSubSequenceNumber)

  // Every pass on the one fetcher: a pass ends at the tip, where the fetcher stands.
  private val passes = new ShardPasses(
    new ShardReader(firstSpec, fetcher, recorded),
    firstSpec,
    (spec, _) => new ShardReader(spec, fetcher, None)
  )
  private var exhausted = false
  private var asked = false
  private var recordedHere = false
  private var failed = false

  /**
   * Moves to the next record, waiting for it at most `timeoutMs`; false when none came in time, or the shard (or, in
   * a replay, the recorded batch) has no more.
   */
  def next(timeoutMs: Long): Boolean = {
    asked = true
    if (exhausted) return false
    val deadline = nanoTime() + math.max(0L, math.min(timeoutMs, Long.MaxValue / 2000000L)) * 1000000L
    fetcher.waitUntil(deadline)
    try {
      while (true) {
        if (passes.pass.next()) return true
        if (recorded.isDefined || passes.pass.result.finished) {
          exhausted = true
          return false
        }
        if (nanoTime() >= deadline) return false
        passes.startNextPass()
      }
      false
    } catch { case e: Throwable => failed = true; throw e }
  }

  def get(): InternalRow = {
    val (record, user) = passes.pass.current
    rows.row(record, user)
  }

  /** When the current record arrived in Kinesis (its approximate arrival timestamp), in epoch milliseconds. */
  def arrivalMillis: Long = passes.pass.current._1.approximateArrivalMillis

  /** Where the task stands: after the last record it returned. */
  def end: ShardEnd = passes.end

  /** The end as the metadata store holds it: the one this task records, or the one a replay read up to. */
  def offset: KinesisShardOffset = KinesisShardOffset(
    slice.streamName,
    slice.shardId,
    recordedJson.getOrElse(RecordedEndJson.writeEnd(passes.recordedEnd(fetcher, slice.streamIdentity))),
    neverAsked = !asked
  )

  def metrics: Array[CustomTaskMetric] = KinesisTaskMetrics.of(Seq(passes))

  /**
   * Records the end (unless the read failed: a retry then reads afresh) and leaves the fetcher for the next batch's
   * task on this executor. Fails when another attempt of this task recorded a different end first: its rows, not
   * these, are the batch.
   */
  def close(): Unit =
    try
      if (recorded.isEmpty && !failed && !recordedHere) {
        recordedHere = true
        val mine = Map(slice.key -> passes.recordedEnd(fetcher, slice.streamIdentity))
        try EndRecording.record(committer, task.batchId, task.task, mine, "real-time task")
        catch { case e: Throwable => failed = true; throw e }
      }
    finally
      try {
        ShardReader.warnDroppedOutsideRange(
          passes.droppedOutsideRange,
          slice.streamName,
          slice.shardId,
          task.batchId
        )
        val end = if (!failed && passes.pass.endsOnFetchBoundary) Some(passes.pass.result.end) else None
        fetchers.release(fetcher, end)
      } finally {
        committer.close()
        releaseClient()
      }
}

private[sparkkinesis] object RealTimeShardRead {

  def apply(settings: ReadSettings, task: KinesisReadTask): RealTimeShardRead =
    TaskResources.open(settings, task) { (client, committer, release) =>
      val store = committer.getOrElse(throw new IllegalStateException("A real-time task records its end"))
      new RealTimeShardRead(settings, task, client, store, releaseClient = release)
    }
}
