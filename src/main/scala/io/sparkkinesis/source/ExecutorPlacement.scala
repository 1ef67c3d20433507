package io.sparkkinesis.source

import scala.jdk.CollectionConverters._

/** An executor of the application; `location` is the form Spark's scheduler takes as a preferred location. */
private[sparkkinesis] final case class ExecutorRef(host: String, executorId: String) {
  def location: String = s"executor_${host}_$executorId"
}

/**
 * Which executor each shard's task should run on, so that a shard's task lands on the same executor batch after
 * batch and continues on the shard iterator or live subscription the previous task left there.
 *
 * Pure and deterministic ([[BoundedRendezvous]] hashing of shards, or of grouped read tasks, over executors): tasks
 * are spread evenly, the choice survives restarts of the driver, and an executor that comes or goes moves few
 * tasks besides its own.
 */
private[sparkkinesis] object ExecutorPlacement {

  /** The application's executors, the driver excluded (none in local mode). */
  def sparkExecutors(): Seq[ExecutorRef] =
    SparkExecutors.hostsAndIds().asScala.toSeq.map(e => ExecutorRef(e.getKey, e.getValue))

  /** The executor of each read task, by the task's metadata key. */
  def assignTasks(tasks: Seq[ReadTask], executors: Seq[ExecutorRef]): Map[ReadTask, ExecutorRef] =
    BoundedRendezvous.assign(tasks, executors)(_.metadataKey, e => s"${e.executorId}@${e.host}")
}
