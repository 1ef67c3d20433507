package io.sparkkinesis.source

/** What one task may read of its shard in a first run of a batch. */
private[sparkkinesis] final case class ShardBudget(maxRecords: Long, maxBytes: Option[Long])

/**
 * Pure admission control: splits a batch's limits (`kinesis.maxRecordsPerTrigger`, `kinesis.maxBytesPerTrigger`)
 * fairly across the shards the batch reads, on top of `kinesis.maxFetchRecordsPerShard`: an equal share of each
 * limit per shard, the rest of the record limit one record each to shards chosen by rotation on the batch id (and
 * with fewer records than shards, only that many shards, by rotation). The split depends on the offset and the limits
 * alone, so planning and building the tasks agree (replays ignore budgets). A task stops before the record that would
 * pass its byte budget unless that is its first: a batch may pass the byte limit by less than one record per shard.
 */
private[sparkkinesis] object AdmissionPlanner {

  /** The shards of `readShards` (sorted) that a batch may read under a record limit. */
  def admitted(readShards: Seq[ShardKey], batchId: Long, maxRecords: Option[Long]): Seq[ShardKey] = {
    val sorted = readShards.sortBy(k => (k.streamName, k.shardId))
    maxRecords match {
      case Some(limit) if limit < sorted.size =>
        val n = sorted.size
        val first = Math.floorMod(batchId * limit, n.toLong).toInt
        (0 until limit.toInt).map(i => sorted((first + i) % n)).sortBy(k => (k.streamName, k.shardId))
      case _ => sorted
    }
  }

  def budgets(
      readShards: Seq[ShardKey],
      batchId: Long,
      maxRecordsPerShard: Long,
      maxRecordsPerTrigger: Option[Long],
      maxBytesPerTrigger: Option[Long]
  ): Map[ShardKey, ShardBudget] = {
    val sorted = readShards.sortBy(k => (k.streamName, k.shardId))
    val n = sorted.size
    if (n == 0) Map.empty
    else {
      val first = Math.floorMod(batchId, n.toLong).toInt
      sorted.zipWithIndex.map { case (key, index) =>
        val records = maxRecordsPerTrigger match {
          case None => maxRecordsPerShard
          case Some(limit) =>
            val share = limit / n
            val extra = if (Math.floorMod(index - first, n) < limit % n) 1L else 0L
            math.min(maxRecordsPerShard, math.max(1L, share + extra))
        }
        key -> ShardBudget(records, maxBytesPerTrigger.map(b => math.max(1L, b / n)))
      }.toMap
    }
  }
}
