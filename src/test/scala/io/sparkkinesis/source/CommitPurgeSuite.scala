package io.sparkkinesis.source

import java.util.concurrent.TimeUnit

import scala.jdk.CollectionConverters._

import io.sparkkinesis.metadata.GatedCommitter
import io.sparkkinesis.source.StreamFakes.{noConsumers, noRecords, Listing}
import org.scalatest.concurrent.Eventually
import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.time.{Millis, Seconds, Span}

/** The source's commit asks for the metadata purge and returns: the deletes run off the batch's critical path. */
class CommitPurgeSuite extends AnyFunSuite with Eventually {

  implicit override val patienceConfig: PatienceConfig = PatienceConfig(Span(60, Seconds), Span(20, Millis))

  private val config = StreamFakes.config()
  private val template = StreamFakes.template(config)

  /** A stream keeping 2 batches, whose metadata is `committer`'s. */
  private def withStream(committer: GatedCommitter)(f: KinesisMicroBatchStream => Unit): Unit = {
    val stream =
      new KinesisMicroBatchStream(
        config,
        new Listing(Nil),
        noRecords,
        noConsumers,
        StreamFakes.StoreOf(_ => committer),
        template,
        2
      )
    try f(stream)
    finally {
      committer.gate.countDown()
      stream.stop()
    }
  }

  private def batch(id: Long) = KinesisOffset(id, "run-1", Map.empty)

  test("commit returns while the purge it asked for has not run; the purge keeps the retained batches") {
    val committer = new GatedCommitter
    (0L to 5L).foreach(b => committer.putIfAbsent(b, "orders/shardId-0", s"batch $b"))
    withStream(committer) { stream =>
      val committing = new Thread(() => stream.commit(batch(5)))
      committing.start()
      // The purge waits for the gate, which opens only below: a commit waiting for the purge would never end, so a
      // generous deadline (CI shares 2 cores with Spark) takes nothing from the check.
      committing.join(TimeUnit.SECONDS.toMillis(60))
      assert(!committing.isAlive, "commit waited for the purge")
      eventually(assert(committer.purgeThread.isDefined, "the purge started"))
      assert(committer.purgeThread.get ne committing)
      assert(committer.get(0, "orders/shardId-0").isDefined, "nothing deleted before the purge ran")
      committer.gate.countDown()
      // Batches 4 and 5 are the 2 retained: everything before batch 4 goes.
      eventually(
        assert((0L to 3L).forall(b => committer.get(b, "orders/shardId-0").isEmpty), "batches 0 to 3 deleted")
      )
      assert(committer.bounds.asScala.toList == List(4L))
      assert((4L to 5L).forall(b => committer.get(b, "orders/shardId-0").isDefined))
    }
  }

  test("a failing purge fails no commit, and the next commit's purge deletes what it left") {
    val committer = new GatedCommitter
    (0L to 6L).foreach(b => committer.putIfAbsent(b, "orders/shardId-0", s"batch $b"))
    committer.failures = 1
    committer.gate.countDown()
    withStream(committer) { stream =>
      stream.commit(batch(5))
      eventually(assert(committer.bounds.size == 1, "the failed purge ran"))
      assert(committer.get(0, "orders/shardId-0").isDefined)
      stream.commit(batch(6))
      eventually(
        assert((0L to 4L).forall(b => committer.get(b, "orders/shardId-0").isEmpty), "batches 0 to 4 deleted")
      )
      assert((5L to 6L).forall(b => committer.get(b, "orders/shardId-0").isDefined))
    }
  }
}
