package io.sparkkinesis.source

import java.util.concurrent.{Executors, TimeUnit}

import io.sparkkinesis.metadata.MetadataCommitter
import org.slf4j.LoggerFactory

/**
 * The driver's side of the metadata store (`committerFor(runId)`, one run's open at a time): the ends a batch's tasks
 * recorded, read once per batch (one entry per task, on `threads` threads), and the purge of old batches.
 */
private[source] final class BatchEnds(committerFor: String => MetadataCommitter, threads: Int) {
  private val log = LoggerFactory.getLogger(classOf[BatchEnds])
  private val readers = Executors.newFixedThreadPool(threads)
  private var runCommitter: Option[(String, MetadataCommitter)] = None
  private var cached: Option[(KinesisOffset, Map[ShardKey, RecordedEnd])] = None

  private def committer(runId: String): MetadataCommitter = {
    if (!runCommitter.exists(_._1 == runId)) {
      runCommitter.foreach(_._2.close())
      runCommitter = Some(runId -> committerFor(runId))
    }
    runCommitter.get._2
  }

  /** The ends recorded by the tasks of `offset`'s batch (none before the first batch). */
  def of(offset: KinesisOffset): Map[ShardKey, RecordedEnd] = cached match {
    case Some((batch, ends)) if batch == offset => ends
    case _ if offset.batchId < 0 => Map.empty
    case _ =>
      lazy val store = committer(offset.runId) // opened only when the batch has tasks
      val futures = offset.readTasks.map { task =>
        task -> readers.submit[Option[String]](() => store.get(offset.batchId, task.metadataKey))
      }
      val ends = futures.flatMap { case (task, f) =>
        f.get().toSeq.flatMap(json => RecordedEndJson.readEndsOf(task, json))
      }.toMap
      remember(offset, ends)
      ends
  }

  /** `ends` are what the tasks of `batch` recorded (as they reported them): [[of]] does not read them back. */
  def remember(batch: KinesisOffset, ends: Map[ShardKey, RecordedEnd]): Unit = cached = Some((batch, ends))

  /** Deletes the entries of `runId` before batch `keepFrom` on the committer's purge thread, off the critical path. */
  def purge(runId: String, keepFrom: Long): Unit =
    try committer(runId).purgeInBackground(keepFrom)
    catch { case e: Exception => log.warn(s"Could not purge Kinesis metadata before batch $keepFrom: $e") }

  def close(): Unit = {
    readers.shutdownNow()
    readers.awaitTermination(10, TimeUnit.SECONDS)
    runCommitter.foreach(_._2.close())
  }
}
