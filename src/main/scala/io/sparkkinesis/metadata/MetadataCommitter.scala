package io.sparkkinesis.metadata

import io.sparkkinesis.config.RetryPolicy
import org.slf4j.LoggerFactory

/**
 * A durable store of small per-batch entries, written by tasks and read by the driver and by replays.
 *
 * Entries are write-once: `putIfAbsent` writes only when no entry exists for (batch, key). When two writers race, one
 * wins and the other gets `false`; for the caller that is a neutral outcome (the winner's entry stands and both
 * readers of it will agree). Implementations are safe to use from many threads.
 */
trait MetadataCommitter extends AutoCloseable {

  /** Writes `value` unless an entry exists; true when this call wrote it. */
  def putIfAbsent(batchId: Long, key: String, value: String): Boolean

  def get(batchId: Long, key: String): Option[String]

  /** Deletes every entry of batches before `batchId`. */
  def purgeBefore(batchId: Long): Unit

  override def close(): Unit = ()
}

/** Retries a metadata operation per the `kinesis.metadata*` options. */
object MetadataRetry {
  private val log = LoggerFactory.getLogger(getClass)

  def apply[T](policy: RetryPolicy, what: => String)(op: => T): T = {
    var attempt = 0
    while (true)
      try return op
      catch {
        case e: Exception if attempt < policy.retries && !e.isInstanceOf[IllegalArgumentException] =>
          val delay = policy.delayMs(attempt)
          log.warn(
            s"$what failed (attempt ${attempt + 1} of ${policy.retries + 1}), retrying in ${delay}ms: $e"
          )
          Thread.sleep(delay)
          attempt += 1
      }
    throw new IllegalStateException("unreachable")
  }
}
