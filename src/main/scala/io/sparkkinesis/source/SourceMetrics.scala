package io.sparkkinesis.source

/**
 * The source's metrics for one batch, shown in `StreamingQueryProgress.sources[].metrics`. Computed from the ends
 * the batch's tasks recorded (a replayed task's entry is the first run's, so a batch is counted once).
 *
 *   - `avgMsBehindLatest`, `maxMsBehindLatest`, `minMsBehindLatest`: over the shards the batch read whose last
 *     GetRecords reported a lag; 0 means the task ended at the shard's tip. Absent when no read shard reported one.
 *   - `recordsRead`, `bytesRead` (record data), `shardsRead`.
 *   - `throttledCalls`, `getRecordsCalls`, `getShardIteratorCalls`: Kinesis read API calls the tasks made (the
 *     AvailableNow tip probes count as GetRecords calls).
 *   - `availableNowShardsLeft`: in a Trigger.AvailableNow run, the run's shards not yet read to their bound.
 */
object SourceMetrics {

  def of(ends: Seq[RecordedEnd], availableNow: Option[Map[ShardKey, RunShard]]): Map[String, String] = {
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
      "getRecordsCalls" -> ends.map(_.stats.getRecordsCalls).sum,
      "getShardIteratorCalls" -> ends.map(_.stats.getShardIteratorCalls).sum
    ).map { case (k, v) => k -> v.toString }
    val run = availableNow.map(r => "availableNowShardsLeft" -> r.values.count(!_.reached).toString)
    lagMetrics ++ counts ++ run
  }
}
