package io.sparkkinesis.metadata

import io.sparkkinesis.metadata.CommitterKeys._

import java.nio.file.{Files, Path => JPath}
import java.util.Comparator
import java.util.concurrent.{Callable, CountDownLatch, Executors, TimeUnit}

import scala.jdk.CollectionConverters._

import io.sparkkinesis.config.RetryPolicy
import org.apache.hadoop.conf.Configuration
import org.scalatest.BeforeAndAfterEach

class HadoopMetadataCommitterSuite extends MetadataCommitterContractSuite with BeforeAndAfterEach {
  private var dir: JPath = _
  private val conf = new Configuration()

  override def beforeEach(): Unit = dir = Files.createTempDirectory("hadoop-committer")

  override def afterEach(): Unit =
    Files.walk(dir).sorted(Comparator.reverseOrder[JPath]()).iterator().asScala.foreach(Files.delete)

  private def hadoopCommitter(root: String = dir.toUri.toString) =
    new HadoopMetadataCommitter(root, conf, RetryPolicy(0, 1, 1))

  protected def newNamespace(): String = dir.resolve(java.util.UUID.randomUUID().toString).toUri.toString
  protected def committer(namespace: String): MetadataCommitter = hadoopCommitter(namespace)
  // Hadoop's local file system forks processes per write: fewer rounds (the test below runs 120 rounds of 3).
  override protected def raceRounds: Int = 10

  /** Every file under the root, relative to it, as `/`-separated text. */
  private def files(): Set[String] =
    Files
      .walk(dir)
      .iterator()
      .asScala
      .filter(Files.isRegularFile(_))
      .map(p => dir.relativize(p).toString)
      .toSet

  test("concurrent writers of one entry: exactly one wins, its value stays, no temporary file is left") {
    // Many short rounds of a few writers: Hadoop's local file system forks processes (chmod, readlink) in create and
    // rename, which spreads writers apart; three writers over 120 rounds reliably caught the check-then-rename race
    // that the committer had on local paths (a writer told it won while another writer's value was stored).
    val threads = 3
    val pool = Executors.newFixedThreadPool(threads)
    try
      for (round <- 0 until 120) {
        val c = hadoopCommitter()
        val key = s"orders/shardId-$round"
        val start = new CountDownLatch(1)
        val futures = (0 until threads).map { i =>
          pool.submit(new Callable[Boolean] {
            def call(): Boolean = { start.await(); c.putIfAbsent(7, key, s"writer-$i") }
          })
        }
        start.countDown()
        val winners = futures.map(_.get(90, TimeUnit.SECONDS)).zipWithIndex.collect { case (true, i) => i }
        assert(winners.size == 1, s"round $round: writers ${winners.mkString(", ")} all reported a win")
        assert(
          c.get(7, key).contains(s"writer-${winners.head}"),
          s"round $round: the winner's value was replaced"
        )
      }
    finally pool.shutdownNow()
    assert(files().filter(_.contains(".tmp")).isEmpty, files())
    assert(hadoopCommitter().keys(7).toSet == (0 until 120).map(r => s"orders/shardId-$r").toSet)
  }

  test("purgeBefore deletes earlier batches and keeps the given batch and later ones") {
    val c = hadoopCommitter()
    (0L to 5L).foreach(b => assert(c.putIfAbsent(b, "orders/shardId-0", s"batch $b")))
    c.purgeBefore(3)
    (0L to 2L).foreach(b => assert(c.get(b, "orders/shardId-0").isEmpty, s"batch $b"))
    (3L to 5L).foreach(b => assert(c.get(b, "orders/shardId-0").contains(s"batch $b")))
    assert(!Files.exists(dir.resolve("2")) && Files.isDirectory(dir.resolve("3")))
    // Purging again, or before the first batch, changes nothing.
    c.purgeBefore(3)
    c.purgeBefore(0)
    assert((3L to 5L).forall(b => c.get(b, "orders/shardId-0").isDefined))
  }

  test("purgeBefore leaves other files under the root alone, and tolerates a missing root") {
    val c = hadoopCommitter()
    assert(c.putIfAbsent(1, "k", "v"))
    Files.createDirectories(dir.resolve("not-a-batch"))
    Files.writeString(dir.resolve("README"), "hello")
    c.purgeBefore(10)
    assert(Files.isDirectory(dir.resolve("not-a-batch")))
    assert(Files.exists(dir.resolve("README")))
    assert(c.get(1, "k").isEmpty)
    hadoopCommitter(dir.resolve("missing").toUri.toString).purgeBefore(10)
    assert(!Files.exists(dir.resolve("missing")))
  }

  test("keys with '/' (and '%') are one flat entry each, never sub-directories, and never collide") {
    val c = hadoopCommitter()
    val keys =
      Seq("orders/shardId-000000000001", "orders%2FshardId-000000000001", "a/b/c", "stream.v2/shard 1")
    keys.foreach(k => assert(c.putIfAbsent(4, k, s"value of $k")))
    keys.foreach(k => assert(c.get(4, k).contains(s"value of $k")))
    assert(c.keys(4).toSet == keys.toSet)
    val batchDir = dir.resolve("4")
    assert(Files.list(batchDir).iterator().asScala.forall(p => !Files.isDirectory(p)))
    assert(Files.list(batchDir).iterator().asScala.count(p => !p.getFileName.toString.startsWith(".")) == 4)
  }

  test("a root given as a plain path (no scheme) works the same, and values keep their exact text") {
    val c = hadoopCommitter(dir.resolve("plain").toString)
    val value = """{"version":1,"note":"ünïcødé ✓"}"""
    assert(c.putIfAbsent(0, "orders/shardId-0", value))
    assert(!c.putIfAbsent(0, "orders/shardId-0", "other"))
    assert(hadoopCommitter(dir.resolve("plain").toUri.toString).get(0, "orders/shardId-0").contains(value))
  }
}
