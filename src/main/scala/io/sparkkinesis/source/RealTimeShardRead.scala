package io.sparkkinesis.source

import io.sparkkinesis.client.{KinesisApi, ShardRecordsClient}
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
final case class KinesisShardOffset(
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
final class RealTimeShardRead(
    p: KinesisInputPartition,
    records: ShardRecordsClient,
    committer: MetadataCommitter,
    nanoTime: () => Long = () => System.nanoTime(),
    releaseClient: () => Unit = () => ()
) {
  private val recordedJson = committer.get(p.batchId, p.key.metadataKey)
  private val recorded = recordedJson.map(OffsetJson.readEnd)

  // A real-time partition has no record, byte, time or run limit: the engine ends the batch.
  private def specFrom(start: ShardPosition) = p.readSpec(start)

  private val fetchers = p.fetchers(records)

  private val fetcher = fetchers.open(
    ShardRead(
      specFrom(p.start),
      replaying = recorded.isDefined,
      shardClosed = p.shardClosed,
      followTip = true
    )
  )
  private val rows = new ShardRows(p.streamName, p.shardId, p.includeSubSequenceNumber)

  private var round = new ShardReader(specFrom(p.start), fetcher, recorded)
  // Totals of the rounds before `round`.
  private var earlierRecords = 0L
  private var earlierBytes = 0L
  private var earlierThrottles = 0L
  private var earlierDropped = 0L
  private var lastBehind: Option[Long] = None
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
        if (round.next()) return true
        val r = round.result
        if (recorded.isDefined || r.finished) {
          exhausted = true
          return false
        }
        if (nanoTime() >= deadline) return false
        earlierRecords += r.recordCount
        earlierBytes += round.bytes
        earlierThrottles += round.throttles
        earlierDropped += round.droppedOutsideRange
        lastBehind = r.millisBehindLatest.orElse(lastBehind)
        round = new ShardReader(specFrom(r.end), fetcher, None)
      }
      false
    } catch { case e: Throwable => failed = true; throw e }
  }

  def get(): InternalRow = {
    val (record, user) = round.current
    rows.row(record, user)
  }

  /** When the current record arrived in Kinesis (its approximate arrival timestamp), in epoch milliseconds. */
  def arrivalMillis: Long = round.current._1.approximateArrivalMillis

  /** Where the task stands: after the last record it returned. */
  def end: ShardEnd = {
    val r = round.result
    r.copy(
      recordCount = earlierRecords + r.recordCount,
      millisBehindLatest = r.millisBehindLatest.orElse(lastBehind)
    )
  }

  private def recordedEnd: RecordedEnd = RecordedEnd(
    end,
    ReadStats(
      bytes = earlierBytes + round.bytes,
      throttles = earlierThrottles + round.throttles,
      getRecordsCalls = fetcher.calls(KinesisApi.GetRecords),
      getShardIteratorCalls = fetcher.calls(KinesisApi.GetShardIterator),
      subscribeToShardCalls = fetcher.calls(KinesisApi.SubscribeToShard),
      droppedOutsideRange = dropped
    ),
    stream = p.streamIdentity
  )

  private def dropped: Long = earlierDropped + round.droppedOutsideRange

  /** The end as the metadata store holds it: the one this task records, or the one a replay read up to. */
  def offset: KinesisShardOffset = KinesisShardOffset(
    p.streamName,
    p.shardId,
    recordedJson.getOrElse(OffsetJson.writeEnd(recordedEnd)),
    neverAsked = !asked
  )

  def metrics: Array[CustomTaskMetric] = {
    val e = end
    Array(
      KinesisTaskMetrics.task(KinesisTaskMetrics.RecordsRead, e.recordCount),
      KinesisTaskMetrics.task(KinesisTaskMetrics.BytesRead, earlierBytes + round.bytes),
      KinesisTaskMetrics.task(KinesisTaskMetrics.ThrottledCalls, earlierThrottles + round.throttles),
      KinesisTaskMetrics.task(KinesisTaskMetrics.MillisBehindLatest, e.millisBehindLatest.getOrElse(0L)),
      KinesisTaskMetrics.task(KinesisTaskMetrics.DroppedOutsideRange, dropped)
    )
  }

  /**
   * Records the end (unless the read failed: a retry then reads afresh) and leaves the fetcher for the next batch's
   * task on this executor. Fails when another attempt of this task recorded a different end first: its rows, not
   * these, are the batch.
   */
  def close(): Unit =
    try
      if (recorded.isEmpty && !failed && !recordedHere) {
        recordedHere = true
        try EndRecording.record(committer, p, recordedEnd, "real-time task")
        catch { case e: Throwable => failed = true; throw e }
      }
    finally
      try {
        ShardReader.warnDroppedOutsideRange(dropped, p.streamName, p.shardId, p.batchId)
        fetchers.release(fetcher, if (!failed && round.endsOnFetchBoundary) Some(round.result.end) else None)
      } finally {
        committer.close()
        releaseClient()
      }
}

object RealTimeShardRead {

  def apply(p: KinesisInputPartition): RealTimeShardRead =
    TaskResources.open(p)((client, committer, release) =>
      new RealTimeShardRead(p, client, committer, releaseClient = release)
    )
}
