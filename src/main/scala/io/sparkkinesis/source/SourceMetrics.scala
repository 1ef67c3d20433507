package io.sparkkinesis.source

import io.sparkkinesis.client.{ApiCallCounter, KinesisApi}

/**
 * The source's metrics for one batch, shown in `StreamingQueryProgress.sources[].metrics`. Computed from the ends
 * the batch's tasks recorded (a replayed task's entry is the first run's, so a batch is counted once).
 *
 *   - `avgMsBehindLatest`, `maxMsBehindLatest`, `minMsBehindLatest`: over the shards the batch read whose last
 *     GetRecords reported a lag; 0 means the task ended at the shard's tip. Absent when no read shard reported one.
 *   - `recordsRead`, `bytesRead` (record data), `shardsRead`.
 *   - `throttledCalls`: throttled read calls of the tasks.
 *   - `droppedOutsideRange`: KPL sub-records dropped because their hash key lies outside their shard's range, on a
 *     stream whose records are placed by partition key (the KPL wrote them again to the right shard after a stale
 *     shard map; on a stream with service-managed distribution they are delivered instead).
 *   - `<operation>Calls` (`getRecordsCalls`, `getShardIteratorCalls`, `subscribeToShardCalls`, `listShardsCalls`,
 *     `describeStreamSummaryCalls`, `describeStreamConsumerCalls`, `registerStreamConsumerCalls`; always present,
 *     others only when made) and `apiCalls`, their sum: the Kinesis requests of the batch, by the tasks and by the
 *     driver to plan the batch (see [[DriverCallLedger]]); AvailableNow tip probes count as GetRecords
 *     calls. `driverApiCalls` is the driver's part.
 *   - `availableNowShardsLeft`: in a Trigger.AvailableNow run, the run's shards not yet read to their bound.
 */
private[sparkkinesis] object SourceMetrics {

  /** The operations whose counts are always reported, 0 when not called. */
  val ReportedApis: Seq[String] = Seq(
    KinesisApi.GetRecords,
    KinesisApi.GetShardIterator,
    KinesisApi.SubscribeToShard,
    KinesisApi.ListShards,
    KinesisApi.DescribeStreamSummary,
    KinesisApi.DescribeStreamConsumer,
    KinesisApi.RegisterStreamConsumer
  )

  /** The metric name of an operation's count: `ListShards` -> `listShardsCalls`. */
  def callsMetric(api: String): String = api.head.toLower.toString + api.tail + "Calls"

  /**
   * Adds up the calls of the batch's tasks (`ends`) and of the driver (`driverCalls`, by operation name).
   */
  def apiCalls(ends: Seq[RecordedEnd], driverCalls: Map[String, Long]): Map[String, Long] = {
    val tasks = Map(
      KinesisApi.GetRecords -> ends.map(_.stats.getRecordsCalls).sum,
      KinesisApi.GetShardIterator -> ends.map(_.stats.getShardIteratorCalls).sum,
      KinesisApi.SubscribeToShard -> ends.map(_.stats.subscribeToShardCalls).sum
    )
    (ReportedApis ++ driverCalls.keys).distinct.map { api =>
      api -> (tasks.getOrElse(api, 0L) + driverCalls.getOrElse(api, 0L))
    }.toMap
  }

  def of(
      ends: Seq[RecordedEnd],
      availableNow: Option[Map[ShardKey, RunShard]],
      driverCalls: Map[String, Long] = Map.empty
  ): Map[String, String] = {
    val lags = ends.flatMap(_.end.millisBehindLatest)
    val lagMetrics =
      if (lags.isEmpty) Map.empty[String, String]
      else
        Map(
          "avgMsBehindLatest" -> (lags.sum.toDouble / lags.size).toString,
          "maxMsBehindLatest" -> lags.max.toString,
          "minMsBehindLatest" -> lags.min.toString
        )
    val counts = Map(
      "shardsRead" -> ends.size.toLong,
      "recordsRead" -> ends.map(_.end.recordCount).sum,
      "bytesRead" -> ends.map(_.stats.bytes).sum,
      "throttledCalls" -> ends.map(_.stats.throttles).sum,
      "droppedOutsideRange" -> ends.map(_.stats.droppedOutsideRange).sum
    ).map { case (k, v) => k -> v.toString }
    val byApi = apiCalls(ends, driverCalls)
    val calls = byApi.map { case (api, n) => callsMetric(api) -> n.toString } ++ Map(
      "apiCalls" -> byApi.values.sum.toString,
      "driverApiCalls" -> driverCalls.values.sum.toString
    )
    val run = availableNow.map(r => "availableNowShardsLeft" -> r.values.count(!_.reached).toString)
    lagMetrics ++ counts ++ calls ++ run
  }
}

/**
 * The driver's call ledger: its Kinesis requests (counted on [[counter]]), each batch given those made since the one
 * before it was planned (empty triggers included; start-up in the first). Requests after the last planned batch (the
 * end of an AvailableNow run, deregistration on stop) are never reported. The last `kept` batches' counts are kept.
 */
private[source] final class DriverCallLedger(kept: Int = 10) {
  val counter = new ApiCallCounter
  private val byBatch = scala.collection.mutable.Map.empty[Long, Map[String, Long]]

  /** Gives `batchId` the requests not given to a batch yet, unless it has its counts (a batch planned again). */
  def planned(batchId: Long): Unit =
    if (!byBatch.contains(batchId)) {
      byBatch(batchId) = counter.drain()
      byBatch --= byBatch.keys.filter(_ <= batchId - kept).toList
    }

  /** The driver's requests of `batchId` by operation; none for a batch not planned here or no longer kept. */
  def of(batchId: Long): Map[String, Long] = byBatch.getOrElse(batchId, Map.empty)
}
