package io.sparkkinesis.source

import scala.collection.mutable
import scala.jdk.CollectionConverters._
import scala.util.hashing.MurmurHash3

/** An executor of the application; `location` is the form Spark's scheduler takes as a preferred location. */
final case class ExecutorRef(host: String, executorId: String) {
  def location: String = s"executor_${host}_$executorId"
}

/**
 * Which executor each shard's task should run on, so that a shard's task lands on the same executor batch after
 * batch and continues on the shard iterator or live subscription the previous task left there.
 *
 * Pure and deterministic: rendezvous hashing ranks the executors for each shard by a hash of the pair, and each
 * shard, in the order of their names, takes its highest-ranked executor that holds fewer than
 * ceil(shards / executors) shards, so the tasks are spread evenly. The choice depends only on the shard and the set
 * of executors: it survives restarts of the driver, and an executor that comes or goes moves few shards besides its
 * own.
 */
object ExecutorPlacement {

  /** The application's executors, the driver excluded (none in local mode). */
  def sparkExecutors(): Seq[ExecutorRef] =
    SparkExecutors.hostsAndIds().asScala.toSeq.map(e => ExecutorRef(e.getKey, e.getValue))

  def assign(shards: Seq[ShardKey], executors: Seq[ExecutorRef]): Map[ShardKey, ExecutorRef] =
    if (executors.isEmpty || shards.isEmpty) Map.empty
    else {
      val distinct = executors.distinct.sortBy(e => (e.executorId, e.host))
      val capacity = (shards.size + distinct.size - 1) / distinct.size
      val load = mutable.Map.empty[ExecutorRef, Int].withDefaultValue(0)
      shards.distinct
        .sortBy(k => (k.streamName, k.shardId))
        .map { shard =>
          val ranked = distinct.sortBy(e => (-weight(shard, e).toLong, e.executorId, e.host))
          val chosen = ranked.find(load(_) < capacity).get
          load(chosen) += 1
          shard -> chosen
        }
        .toMap
    }

  // A fixed seed: the same pair weighs the same in every JVM.
  private def weight(shard: ShardKey, executor: ExecutorRef): Int =
    MurmurHash3.stringHash(
      s"${shard.streamName}/${shard.shardId}|${executor.executorId}@${executor.host}",
      0x4b1e5
    )
}
