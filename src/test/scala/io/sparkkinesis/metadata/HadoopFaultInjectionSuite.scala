package io.sparkkinesis.metadata

import java.io.IOException
import java.net.URI
import java.nio.file.Files
import java.util.concurrent.atomic.AtomicInteger

import io.sparkkinesis.config.RetryPolicy
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{
  DelegateToFileSystem,
  FSDataInputStream,
  FSDataOutputStream,
  FileStatus,
  Path,
  RawLocalFileSystem
}
import org.apache.hadoop.fs.permission.FsPermission
import org.apache.hadoop.util.Progressable
import org.scalatest.funsuite.AnyFunSuite

/** Fault switches shared by the file system instances Hadoop creates by reflection. */
object FlakyFs {
  @volatile var failRate = 0.0
  private val random = new java.util.Random(7)
  val failedBefore = new AtomicInteger()
  val failedAfter = new AtomicInteger()

  private val inside = ThreadLocal.withInitial[java.lang.Boolean](() => false)

  /**
   * Fails before the action (nothing happened) or after it (it happened, the caller is not told). One call of the
   * file system is one fault point: calls it makes internally (a listing's status calls) do not fail on their own.
   */
  def around[T](what: String)(action: => T): T = {
    if (inside.get()) return action
    inside.set(true)
    val result =
      try aroundOnce(what)(action)
      finally inside.set(false)
    result
  }

  private def aroundOnce[T](what: String)(action: => T): T = {
    val roll = random.synchronized(random.nextDouble())
    if (roll < failRate / 2) {
      failedBefore.incrementAndGet()
      throw new IOException(s"injected: $what failed before it was done")
    }
    val result = action
    if (roll < failRate) {
      failedAfter.incrementAndGet()
      throw new IOException(s"injected: $what was done but the answer was lost")
    }
    result
  }
}

/** The local file system under the scheme `flaky://`, failing create, open, rename and status calls at random. */
class FlakyLocalFileSystem extends RawLocalFileSystem {
  override def getUri: URI = URI.create("flaky:///")
  override def getScheme: String = "flaky"

  override def create(
      f: Path,
      permission: FsPermission,
      overwrite: Boolean,
      bufferSize: Int,
      replication: Short,
      blockSize: Long,
      progress: Progressable
  ): FSDataOutputStream =
    FlakyFs.around("create")(
      super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress)
    )

  override def open(f: Path, bufferSize: Int): FSDataInputStream =
    FlakyFs.around("open")(super.open(f, bufferSize))
  override def rename(src: Path, dst: Path): Boolean = FlakyFs.around("rename")(super.rename(src, dst))
  override def getFileStatus(f: Path): FileStatus = FlakyFs.around("status")(super.getFileStatus(f))
  override def listStatus(f: Path): Array[FileStatus] = FlakyFs.around("list")(super.listStatus(f))

  override def delete(p: Path, recursive: Boolean): Boolean =
    FlakyFs.around("delete")(super.delete(p, recursive))
}

/** FileContext's view of [[FlakyLocalFileSystem]] (`fs.AbstractFileSystem.flaky.impl`). */
class FlakyAbstractFileSystem(uri: URI, conf: Configuration)
    extends DelegateToFileSystem(uri, new FlakyLocalFileSystem(), conf, "flaky", false)

/**
 * The Hadoop-path committer while a fifth of its file system calls fail, half of them after the file system acted:
 * a simulated query writes each batch's shard ends, reads them back as the driver and a replay would, and purges.
 */
class HadoopFaultInjectionSuite extends AnyFunSuite {

  test("faults on a fifth of the file system calls: no entry lost, every reader agrees") {
    val dir = Files.createTempDirectory("hadoop-faults")
    val conf = new Configuration()
    conf.set("fs.AbstractFileSystem.flaky.impl", classOf[FlakyAbstractFileSystem].getName)
    conf.set("fs.flaky.impl", classOf[FlakyLocalFileSystem].getName)
    val root = s"flaky://${dir.toUri.getPath}"
    def open() = new HadoopMetadataCommitter(root, conf, RetryPolicy(12, 1, 5))
    val shards = Seq("orders/shardId-0", "orders/shardId-1")
    FlakyFs.failRate = 0.2
    try
      for (batch <- 0L until 40L) {
        for (shard <- shards) {
          val c = open()
          val won =
            (0 until 2).map(attempt => c.putIfAbsent(batch, shard, s"end of $shard in $batch by $attempt"))
          assert(won.count(identity) <= 1, s"batch $batch $shard: both attempts told they won")
          val driver = open().get(batch, shard)
          assert(driver.isDefined, s"batch $batch $shard: the entry is lost")
          assert(open().get(batch, shard) == driver, s"batch $batch $shard: a replay disagrees")
          won.indexOf(true) match {
            case -1 => // the winner's answer was lost: the neutral outcome
            case i => assert(driver.contains(s"end of $shard in $batch by $i"), s"batch $batch $shard")
          }
        }
        if (batch % 10 == 9) open().purgeBefore(batch - 4)
      }
    finally FlakyFs.failRate = 0.0
    val c = open()
    for (batch <- 35L until 40L; shard <- shards) assert(c.get(batch, shard).isDefined, s"batch $batch lost")
    assert(c.get(34, shards.head).isEmpty, "purge kept the wrong batches")
    assert(FlakyFs.failedBefore.get() > 10 && FlakyFs.failedAfter.get() > 10, "too few faults injected")
    info(s"faults before the action: ${FlakyFs.failedBefore.get()}, after it: ${FlakyFs.failedAfter.get()}")
  }
}
