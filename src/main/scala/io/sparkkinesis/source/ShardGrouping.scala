package io.sparkkinesis.source

/**
 * Which shards of a batch one read task reads together. A batch of n read shards at k shards per task has ceil(n / k)
 * tasks, and its shards are spread over them by [[BoundedRendezvous]] hashing (no task gets more than k). The grouping
 * depends only on the set of read shards and k, so it stays the same from batch to batch and a reshard moves few
 * shards; with [[ExecutorPlacement]] a shard's task keeps landing where its iterator or subscription is.
 */
private[sparkkinesis] object ShardGrouping {

  /** Tasks per core that the automatic size aims at: more than one, so a slow task does not hold up a batch alone. */
  val TasksPerCore = 2

  /**
   * Shards per task: `kinesis.shardsPerTask`; else, with the application's `parallelism`, as few as keep the batch at
   * no more than `tasksPerCore` tasks per core (at least one); else one.
   */
  def shardsPerTask(
      configured: Option[Int],
      parallelism: Option[Int],
      readShards: Int,
      tasksPerCore: Int = TasksPerCore
  ): Int = configured
    .orElse(parallelism.map { p =>
      val tasks = tasksPerCore * math.max(1, p)
      math.max(1, (readShards + tasks - 1) / tasks)
    })
    .getOrElse(1)

  /** `offset` with each read shard's task index set; with one shard per task, with none (the ungrouped form). */
  def group(offset: KinesisOffset, shardsPerTask: Int): KinesisOffset = {
    val read = offset.readShards.map(_._1)
    val tasks =
      if (shardsPerTask <= 1) Map.empty[ShardKey, Int]
      else {
        val count = (read.size + shardsPerTask - 1) / shardsPerTask
        BoundedRendezvous.assign(read, 0 until count)(_.metadataKey, _.toString)
      }
    offset.copy(shards = offset.shards.map { case (key, entry) => key -> entry.copy(task = tasks.get(key)) })
  }
}
