package io.sparkkinesis.source

import io.sparkkinesis.source.StreamFakes._
import org.apache.spark.sql.connector.read.streaming.ReadLimit
import org.scalatest.funsuite.AnyFunSuite

class ExecutorPlacementSuite extends AnyFunSuite {

  private def shards(n: Int, stream: String = "orders") =
    (0 until n).map(i => ShardKey(stream, f"shardId-$i%012d"))
  private def executors(ids: Int*) = ids.map(i => ExecutorRef(s"10.0.0.${i % 3}", i.toString))

  /** The executor of each shard read by a task of its own. */
  private object ExecutorPlacement {

    def assign(shards: Seq[ShardKey], executors: Seq[ExecutorRef]): Map[ShardKey, ExecutorRef] =
      io.sparkkinesis.source.ExecutorPlacement
        .assignTasks(shards.map(k => ReadTask(None, Seq(k))), executors)
        .map { case (task, executor) => task.shards.head -> executor }
  }

  test("every shard gets an executor, spread evenly") {
    for ((n, m) <- Seq((1, 2), (4, 2), (7, 3), (64, 5), (1024, 7))) {
      val placed = ExecutorPlacement.assign(shards(n), executors(1 to m: _*))
      assert(placed.keySet == shards(n).toSet)
      val loads = placed.values.groupBy(identity).values.map(_.size)
      assert(loads.max <= (n + m - 1) / m, s"$n shards on $m executors: loads $loads")
    }
  }

  test("the choice depends only on the shards and the executors, not on their order") {
    val a = ExecutorPlacement.assign(shards(16), executors(1, 2, 3))
    val b = ExecutorPlacement.assign(shards(16).reverse, executors(3, 1, 2, 2))
    assert(a == b)
  }

  test("no executors (local mode) or no shards: no preference") {
    assert(ExecutorPlacement.assign(shards(4), Nil).isEmpty)
    assert(ExecutorPlacement.assign(Nil, executors(1, 2)).isEmpty)
  }

  test("an executor that goes or comes moves few shards besides its own") {
    val before = ExecutorPlacement.assign(shards(32), executors(1, 2, 3, 4))
    val lost = ExecutorPlacement.assign(shards(32), executors(1, 2, 4))
    val onSurvivors = before.filter(_._2.executorId != "3")
    val moved = onSurvivors.count { case (shard, e) => lost(shard) != e }
    assert(
      moved <= onSurvivors.size / 4,
      s"$moved of ${onSurvivors.size} shards on surviving executors moved"
    )

    val added = ExecutorPlacement.assign(shards(32), executors(1, 2, 3, 4, 5))
    val movedByNew = before.count { case (shard, e) => added(shard) != e && added(shard).executorId != "5" }
    assert(movedByNew <= before.size / 4, s"$movedByNew shards moved between old executors")
  }

  test("a partition prefers its executor in the form Spark's scheduler takes") {
    val e = ExecutorRef("127.0.0.1", "7")
    assert(e.location == "executor_127.0.0.1_7")
  }

  test(
    "the stream's tasks prefer their executors, batch after batch, unless kinesis.executorAffinity is false"
  ) {
    val ids = (0 until 6).map(i => f"shardId-$i%012d")
    val cluster = executors(1, 2)
    def preferred(affinity: String) = {
      val c = config("kinesis.executorAffinity" -> affinity)
      val s = new KinesisMicroBatchStream(
        c,
        new Listing(open(ids: _*)),
        noRecords,
        noConsumers,
        StreamFakes.StoreOf(_ => new Entries),
        template(c),
        10,
        executors = () => cluster
      )
      val start = s.initialOffset()
      val end = s.latestOffset(start, ReadLimit.allAvailable())
      s.planInputPartitions(start, end)
        .map { p =>
          slice(p).shardId -> p.preferredLocations().toSeq
        }
        .toMap
    }
    val on = preferred("true")
    val expected = ExecutorPlacement.assign(ids.map(ShardKey("orders", _)), cluster)
    assert(on == expected.map { case (k, e) => k.shardId -> Seq(e.location) })
    assert(on.values.flatten.toSet == cluster.map(_.location).toSet)
    assert(preferred("false").values.forall(_.isEmpty))
  }
}
