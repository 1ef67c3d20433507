package io.sparkkinesis.metadata

import java.util.concurrent.{Callable, CountDownLatch, Executors, TimeUnit}

import org.scalatest.funsuite.AnyFunSuite

/**
 * The contract of [[MetadataCommitter]], run against every implementation. A namespace is what one query's run owns
 * (a directory for the Hadoop path, a partition for DynamoDB); `committer(ns)` opens a new committer on it, as a
 * task or the driver would.
 */
abstract class MetadataCommitterContractSuite extends AnyFunSuite {

  /** A namespace no other test uses. */
  protected def newNamespace(): String

  protected def committer(namespace: String): MetadataCommitter

  /** Rounds of the race test; stores that fork processes per write (Hadoop local) keep it smaller. */
  protected def raceRounds: Int = 60
  protected def racers: Int = 4

  /** False where the store cannot be used on this Spark line: its contract tests are then reported as ignored. */
  protected def runContract: Boolean = true

  private def contract(name: String)(body: => Any): Unit =
    if (runContract) test(name)(body) else ignore(name)(body)

  protected def withCommitter[T](namespace: String)(f: MetadataCommitter => T): T = {
    val c = committer(namespace)
    try f(c)
    finally c.close()
  }

  contract(
    "contract: put-if-absent, the first write wins and a second write neither succeeds nor changes it"
  ) {
    val ns = newNamespace()
    withCommitter(ns) { c =>
      assert(c.putIfAbsent(3, "orders/shardId-000000000001", "first"))
      assert(!c.putIfAbsent(3, "orders/shardId-000000000001", "second"))
      assert(c.get(3, "orders/shardId-000000000001").contains("first"))
    }
    // Another committer on the same namespace (another task, or the driver) sees the same entry.
    withCommitter(ns) { c =>
      assert(c.get(3, "orders/shardId-000000000001").contains("first"))
      assert(!c.putIfAbsent(3, "orders/shardId-000000000001", "third"))
    }
  }

  contract("contract: the same key in different batches is a different entry") {
    withCommitter(newNamespace()) { c =>
      assert(c.putIfAbsent(1, "k", "one"))
      assert(c.putIfAbsent(2, "k", "two"))
      assert(c.get(1, "k").contains("one"))
      assert(c.get(2, "k").contains("two"))
    }
  }

  contract(
    "contract: different namespaces (queries, checkpoint incarnations) never see each other's entries"
  ) {
    val (a, b) = (newNamespace(), newNamespace())
    withCommitter(a)(c => assert(c.putIfAbsent(0, "orders/shardId-0", "from a")))
    withCommitter(b) { c =>
      assert(c.get(0, "orders/shardId-0").isEmpty)
      assert(c.putIfAbsent(0, "orders/shardId-0", "from b"))
      c.purgeBefore(10)
    }
    withCommitter(a)(c => assert(c.get(0, "orders/shardId-0").contains("from a")))
  }

  contract(
    "contract: get of a missing entry is None, in a missing batch, an existing batch and a new namespace"
  ) {
    withCommitter(newNamespace()) { c =>
      assert(c.get(0, "orders/shardId-0").isEmpty)
      assert(c.putIfAbsent(0, "orders/shardId-1", "v"))
      assert(c.get(0, "orders/shardId-0").isEmpty)
      assert(c.get(1, "orders/shardId-1").isEmpty)
    }
  }

  contract(
    "contract: purgeBefore deletes earlier batches, keeps the given and later ones, and is idempotent"
  ) {
    withCommitter(newNamespace()) { c =>
      (0L to 12L).foreach { b =>
        assert(c.putIfAbsent(b, "orders/shardId-0", s"batch $b"))
        assert(c.putIfAbsent(b, "orders/shardId-1", s"batch $b"))
      }
      c.purgeBefore(10)
      (0L to 9L).foreach(b => assert(c.get(b, "orders/shardId-0").isEmpty, s"batch $b"))
      (10L to 12L).foreach(b => assert(c.get(b, "orders/shardId-1").contains(s"batch $b")))
      c.purgeBefore(10)
      c.purgeBefore(0)
      assert((10L to 12L).forall(b => c.get(b, "orders/shardId-0").isDefined))
    }
    withCommitter(newNamespace())(_.purgeBefore(5)) // nothing there yet: no failure
  }

  contract("contract: keys with '/', '%' and spaces are distinct entries; values keep their exact text") {
    withCommitter(newNamespace()) { c =>
      val keys =
        Seq("orders/shardId-000000000001", "orders%2FshardId-000000000001", "a/b/c", "stream.v2/shard 1")
      keys.foreach(k => assert(c.putIfAbsent(4, k, s"value of $k")))
      keys.foreach(k => assert(c.get(4, k).contains(s"value of $k")))
      val value = """{"version":1,"note":"ünïcødé ✓"}""" + "x" * 20000
      assert(c.putIfAbsent(5, "big", value))
      assert(c.get(5, "big").contains(value))
    }
  }

  contract("contract: many writers race for one entry; exactly one wins, every time, and its value stays") {
    val pool = Executors.newFixedThreadPool(racers)
    try
      for (round <- 0 until raceRounds) {
        val ns = newNamespace()
        val committers = (0 until racers).map(_ => committer(ns))
        val start = new CountDownLatch(1)
        val futures = committers.zipWithIndex.map { case (c, i) =>
          pool.submit(new Callable[Boolean] {
            def call(): Boolean = { start.await(); c.putIfAbsent(7, "orders/shardId-0", s"writer-$i") }
          })
        }
        start.countDown()
        val winners = futures.map(_.get(60, TimeUnit.SECONDS)).zipWithIndex.collect { case (true, i) => i }
        assert(winners.size == 1, s"round $round: writers ${winners.mkString(", ")} reported a win")
        committers.foreach { c =>
          assert(c.get(7, "orders/shardId-0").contains(s"writer-${winners.head}"), s"round $round")
          c.close()
        }
      }
    finally pool.shutdownNow()
  }
}
