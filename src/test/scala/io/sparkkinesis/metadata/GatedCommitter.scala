package io.sparkkinesis.metadata

import java.nio.file.Files
import java.util.concurrent.{ConcurrentLinkedQueue, CountDownLatch}

import io.sparkkinesis.config.RetryPolicy
import org.apache.hadoop.conf.Configuration

/**
 * A committer on a local directory whose purges wait for `gate`, note their bounds, and fail while `failures` lasts;
 * `interrupted` counts the purges that close() interrupted.
 */
final class GatedCommitter extends MetadataCommitter {

  private val inner = new HadoopMetadataCommitter(
    Files.createTempDirectory("gated-committer").toUri.toString,
    new Configuration(),
    RetryPolicy(0, 1, 1)
  )
  val gate = new CountDownLatch(1)
  val bounds = new ConcurrentLinkedQueue[Long]()
  @volatile var failures = 0
  @volatile var interrupted = 0
  @volatile var purgeThread: Option[Thread] = None

  def putIfAbsent(batchId: Long, key: String, value: String): Boolean = inner.putIfAbsent(batchId, key, value)
  def get(batchId: Long, key: String): Option[String] = inner.get(batchId, key)

  def purgeBefore(batchId: Long): Unit = {
    purgeThread = Some(Thread.currentThread())
    try gate.await()
    catch { case e: InterruptedException => interrupted += 1; throw e }
    bounds.add(batchId)
    if (failures > 0) {
      failures -= 1
      throw new java.io.IOException("injected: the store is unreachable")
    }
    inner.purgeBefore(batchId)
  }
}
