package io.sparkkinesis.source

import scala.collection.mutable
import scala.jdk.CollectionConverters._
import scala.util.hashing.MurmurHash3

/** An executor of the application; `location` is the form Spark's scheduler takes as a preferred location. */
private[sparkkinesis] final case class ExecutorRef(host: String, executorId: String) {
  def location: String = s"executor_${host}_$executorId"
}

/**
 * Which executor each read task should run on, so that it lands on the same executor batch after batch and goes on
 * with the shard iterator or subscription the previous task left there. Pure and deterministic ([[BoundedRendezvous]]
 * hashing): tasks are spread evenly, the choice survives driver restarts, an executor that comes or goes moves few.
 */
private[sparkkinesis] object ExecutorPlacement {

  /** The application's executors, the driver excluded (none in local mode). */
  def sparkExecutors(): Seq[ExecutorRef] =
    SparkExecutors.hostsAndIds().asScala.toSeq.map(e => ExecutorRef(e.getKey, e.getValue))

  /** The executor of each read task, by the task's metadata key. */
  def assignTasks(tasks: Seq[ReadTask], executors: Seq[ExecutorRef]): Map[ReadTask, ExecutorRef] =
    BoundedRendezvous.assign(tasks, executors)(_.metadataKey, e => s"${e.executorId}@${e.host}")
}

/**
 * Rendezvous hashing with bounded load: spreads items over bins evenly and stably. Each item, in the order of the
 * items' names, takes its highest-weighted bin that holds fewer than ceil(items / bins) items; the weight of a pair
 * is a hash of both names with a fixed seed, so it is the same in every JVM. The result depends only on the sets of
 * names: a bin that comes or goes moves its own items and few others.
 */
private[source] object BoundedRendezvous {

  def assign[I, B](items: Seq[I], bins: Seq[B])(itemName: I => String, binName: B => String): Map[I, B] =
    if (items.isEmpty || bins.isEmpty) Map.empty
    else {
      val named = bins.map(b => binName(b) -> b).toMap.toSeq.sortBy(_._1)
      val capacity = (items.size + named.size - 1) / named.size
      val load = mutable.Map.empty[String, Int].withDefaultValue(0)
      items
        .map(i => itemName(i) -> i)
        .toMap
        .toSeq
        .sortBy(_._1)
        .map { case (name, item) =>
          val (chosen, bin) =
            named.sortBy { case (b, _) => (-weight(name, b).toLong, b) }.find(b => load(b._1) < capacity).get
          load(chosen) += 1
          item -> bin
        }
        .toMap
    }

  private def weight(item: String, bin: String): Int = MurmurHash3.stringHash(s"$item|$bin", 0x4b1e5)
}
