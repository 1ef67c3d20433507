package io.sparkkinesis.source

import io.sparkkinesis.client.{HashKeyRange, ShardDescription}
import io.sparkkinesis.reader._
import org.scalatest.funsuite.AnyFunSuite

class AvailableNowPlannerSuite extends AnyFunSuite {
  private val Full = HashKeyRange(0, BigInt(2).pow(128) - 1)
  private def key(id: String) = ShardKey("s", id)

  private def open(id: String, parents: String*) =
    ShardDescription(id, parents.headOption, parents.drop(1).headOption, Full, None)
  private def closed(id: String) = ShardDescription(id, None, None, Full, Some("999"))

  private def end(finished: Boolean, run: Option[RunOutcome]) = RecordedEnd(
    ShardEnd(ShardPosition.After("5", -1), finished, Nil, 1L, Some(0L), reachedTip = true, lost = false),
    ReadStats(),
    run
  )

  private def entry(status: ShardStatus, parents: String*) =
    ShardEntry(ShardPosition.TrimHorizon, status, parents, Full)

  test("at the start, closed shards are read to their end and open ones are pending on a LATEST iterator") {
    val run = AvailableNowPlanner.start(
      Map("s" -> Seq(closed("p"), open("c1", "p"), open("c2", "p"))),
      k => s"latest-${k.shardId}"
    )
    assert(
      run == Map(
        key("p") -> RunShard(RunBound.Unbounded, reached = false),
        key("c1") -> RunShard(RunBound.Pending("latest-c1"), reached = false),
        key("c2") -> RunShard(RunBound.Pending("latest-c2"), reached = false)
      )
    )
    assert(AvailableNowPlanner.pending(run).map(_._1) == Seq(key("c1"), key("c2")))
  }

  test("shards the offset tracks but the start listing lacks join the run, unbounded") {
    val run = Map(key("a") -> RunShard(RunBound.Pending("i"), false))
    val offset = KinesisOffset(
      3,
      "r",
      Map(
        key("a") -> entry(ShardStatus.Read),
        key("gone") -> entry(ShardStatus.Read),
        key("old") -> entry(
          ShardStatus.Finished
        )
      )
    )
    val tracked = AvailableNowPlanner.withTracked(run, offset)
    assert(tracked(key("a")) == run(key("a")))
    assert(tracked(key("gone")) == RunShard(RunBound.Unbounded, reached = false))
    assert(tracked(key("old")).reached)
  }

  test(
    "task outcomes resolve and refresh bounds; a resolved sequence number is final; a finished shard is reached"
  ) {
    val run = Map(
      key("a") -> RunShard(RunBound.Pending("i1"), false),
      key("b") -> RunShard(RunBound.Before("100"), false),
      key("c") -> RunShard(RunBound.Unbounded, false),
      key("d") -> RunShard(RunBound.Pending("i2"), false)
    )
    val updated = AvailableNowPlanner.update(
      run,
      Map(
        key("a") -> end(finished = false, Some(RunOutcome(RunBound.Before("50"), reached = false))),
        key("b") -> end(finished = false, Some(RunOutcome(RunBound.Pending("stale"), reached = true))),
        key("c") -> end(finished = true, None),
        key("x") -> end(finished = true, None)
      )
    )
    assert(updated(key("a")) == RunShard(RunBound.Before("50"), reached = false))
    assert(updated(key("b")) == RunShard(RunBound.Before("100"), reached = true))
    assert(updated(key("c")).reached)
    assert(updated(key("d")) == run(key("d")), "not read in the batch: unchanged")
    assert(!updated.contains(key("x")), "a shard outside the run does not join it")
  }

  test("only the run's shards not yet read to their bound are read; others wait with their position") {
    val next = KinesisOffset(
      4,
      "r",
      Map(
        key("done") -> entry(ShardStatus.Read),
        key("todo") -> entry(ShardStatus.Read),
        key("new") -> entry(ShardStatus.Read),
        key("child") -> entry(ShardStatus.Waiting, "todo"),
        key("fin") -> entry(ShardStatus.Finished)
      )
    )
    val run = Map(
      key("done") -> RunShard(RunBound.Before("1"), reached = true),
      key("todo") -> RunShard(RunBound.Pending("i"), reached = false),
      key("child") -> RunShard(RunBound.Pending("j"), reached = false),
      key("fin") -> RunShard(RunBound.Unbounded, reached = true)
    )
    val restricted = AvailableNowPlanner.restrict(next, run)
    assert(restricted.readShards.map(_._1) == Seq(key("todo")))
    assert(restricted.shards(key("done")).status == ShardStatus.Waiting)
    assert(
      restricted.shards(key("new")).status == ShardStatus.Waiting,
      "created after the start: not in the run"
    )
    assert(restricted.shards(key("child")).status == ShardStatus.Waiting)
    assert(restricted.shards(key("fin")).status == ShardStatus.Finished)
    assert(restricted.shards.map { case (k, e) => k -> e.position } == next.shards.map { case (k, e) =>
      k -> e.position
    })
  }

  test("a run ends when all its shards are reached: nothing is left to read") {
    val next = KinesisOffset(2, "r", Map(key("a") -> entry(ShardStatus.Read)))
    val run = Map(key("a") -> RunShard(RunBound.Before("9"), reached = true))
    assert(AvailableNowPlanner.restrict(next, run).readShards.isEmpty)
  }
}
