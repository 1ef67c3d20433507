package io.sparkkinesis.metadata

import java.util.concurrent.TimeUnit

import scala.util.control.NonFatal

import io.sparkkinesis.config.RetryPolicy
import io.sparkkinesis.resources.DaemonThreads
import org.slf4j.LoggerFactory

/** Where a query's metadata lives; travels to executors, which open a committer per run (checkpoint incarnation). */
private[sparkkinesis] trait MetadataStore extends Serializable {
  def open(runId: String): MetadataCommitter

  /** Called on the driver when the query starts, so a store that cannot be used fails the query there. */
  def prepare(): Unit = ()
}

/**
 * A durable store of small per-batch entries, written by tasks and read by the driver and by replays. Entries are
 * write-once: when two writers race, one wins and the other gets `false`, a neutral outcome (the winner's entry
 * stands and every reader agrees). Implementations are safe to use from many threads.
 */
private[sparkkinesis] trait MetadataCommitter extends AutoCloseable {

  /** Writes `value` unless an entry exists; true when this call wrote it. */
  def putIfAbsent(batchId: Long, key: String, value: String): Boolean

  def get(batchId: Long, key: String): Option[String]

  /** Deletes every entry of batches before `batchId`, on the calling thread. */
  def purgeBefore(batchId: Long): Unit

  // Made on the first request: only the driver purges, and tasks open a committer per shard and batch.
  private var backgroundPurge: Option[BackgroundPurge] = None
  private var purgesClosed = false

  /**
   * Asks for `purgeBefore(batchId)` on this committer's purge thread and returns at once ([[BackgroundPurge]]); a
   * failed purge is logged, and the next request (a higher bound) deletes what it left.
   */
  final def purgeInBackground(batchId: Long): Unit = synchronized {
    if (backgroundPurge.isEmpty && !purgesClosed) backgroundPurge = Some(new BackgroundPurge(purgeBefore))
    backgroundPurge
  }.foreach(_.request(batchId))

  /** Lets a running or waiting purge finish for a few seconds, then interrupts it. */
  override def close(): Unit = synchronized { purgesClosed = true; backgroundPurge }.foreach(_.close())
}

/**
 * Runs purges one at a time on a thread of its own (started on the first request, ended when idle or closed). At most
 * one purge waits behind the running one: a new request raises the waiting purge's bound instead of queueing another.
 */
private[metadata] final class BackgroundPurge(purge: Long => Unit) {
  import BackgroundPurge._

  private val pool = DaemonThreads.pool("spark-kinesis-metadata-purge", threads = 1, idleSeconds = 30)
  private var waiting: Option[Long] = None // the bound of the purge that has not started yet
  private var closed = false

  def request(batchId: Long): Unit = synchronized {
    if (!closed && batchId > 0) waiting match {
      case Some(bound) => waiting = Some(math.max(bound, batchId))
      case None =>
        waiting = Some(batchId)
        pool.execute(() => runWaiting())
    }
  }

  private def runWaiting(): Unit = {
    val bound = synchronized { val b = waiting; waiting = None; b }
    bound.foreach { b =>
      try purge(b)
      catch {
        case _: InterruptedException if synchronized(closed) =>
          log.info(s"Metadata purge before batch $b stopped by close")
        case NonFatal(e) =>
          log.warn(
            s"Could not purge metadata before batch $b (the next purge deletes what this one left): $e"
          )
      }
    }
  }

  def close(): Unit = {
    synchronized { closed = true }
    pool.shutdown() // a waiting purge still runs
    if (!pool.awaitTermination(CloseWaitMs, TimeUnit.MILLISECONDS)) {
      pool.shutdownNow()
      log.info(s"Metadata purge interrupted: still running ${CloseWaitMs}ms after close")
    }
  }
}

private[metadata] object BackgroundPurge {
  private val log = LoggerFactory.getLogger(classOf[BackgroundPurge])

  /** How long `close` lets a purge run on before interrupting it. */
  val CloseWaitMs = 5000L
}

/** Retries a metadata operation per the `kinesis.metadata*` options. */
private[sparkkinesis] object MetadataRetry {
  private val log = LoggerFactory.getLogger(getClass)

  def apply[T](policy: RetryPolicy, what: => String)(op: => T): T = {
    def attempt(n: Int): T =
      try op
      catch {
        case e: Exception if n < policy.retries && retriable(e) =>
          val delay = policy.delayMs(n)
          log.warn(s"$what failed (attempt ${n + 1} of ${policy.retries + 1}), retrying in ${delay}ms: $e")
          Thread.sleep(delay)
          attempt(n + 1)
      }
    attempt(0)
  }

  /**
   * Bad input fails at once, and so does an interrupted thread (a closing purge, a cancelled task), also when the
   * interrupt is the cause of an I/O error with the thread's flag cleared (as Hadoop's local file system reports it):
   * retried, a cancelled task would record its end late, after a restart's replay of its batch had found none.
   */
  private def retriable(e: Exception): Boolean =
    !e.isInstanceOf[IllegalArgumentException] && !Thread.currentThread().isInterrupted &&
      !Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).take(16).exists {
        case _: InterruptedException | _: java.nio.channels.ClosedByInterruptException => true
        case _ => false
      }
}
