package io.sparkkinesis.source

import io.sparkkinesis.client.{HashKeyRange, ShardDescription}
import io.sparkkinesis.config.{EndingPositionSpec, ShardPlace, ShardPositions, StartingPositionSpec}
import io.sparkkinesis.reader.ShardPosition
import io.sparkkinesis.testutil.ErrorChecks.assertCondition
import org.scalatest.funsuite.AnyFunSuite

/** Where per-shard starting positions put each shard, and how a batch read is planned. */
class StartPositionsSuite extends AnyFunSuite {
  private val S = "orders"
  private val Full = HashKeyRange(0, BigInt(2).pow(128) - 1)
  private val Now = 1693422005000L
  private val Key = "kinesis.endingPosition"

  private def shard(n: Int, parents: Seq[Int] = Nil, closed: Boolean = false) =
    ShardDescription(
      id(n),
      parents.lift(0).map(id),
      parents.lift(1).map(id),
      Full,
      if (closed) Some("9") else None
    )

  private def id(n: Int) = f"shardId-$n%012d"

  // 0 and 1 merged into 2; 2 split into 3 and 4; 5 is unrelated.
  private val listing = Seq(
    shard(0, closed = true),
    shard(1, closed = true),
    shard(2, Seq(0, 1), closed = true),
    shard(3, Seq(2)),
    shard(4, Seq(2)),
    shard(5)
  )

  private def doc(places: (Int, ShardPlace)*) = ShardPositions(
    Map(S -> places.map(p => id(p._1) -> p._2).toMap)
  )

  private def resolve(places: (Int, ShardPlace)*) =
    StartPositions.resolve(S, listing, StartingPositionSpec.PerShard(doc(places: _*)), Now)

  test(
    "each place becomes the reader's start; KCL-style sub-sequence numbers skip the consumed sub-records"
  ) {
    val r = resolve(
      3 -> ShardPlace.AfterSequence("700", Some(2)),
      4 -> ShardPlace.AtSequence("800", Some(3)),
      5 -> ShardPlace.AtSequence("900", None)
    )
    assert(r.positions(id(3)).contains(ShardPosition.After("700", 2)))
    assert(r.positions(id(4)).contains(ShardPosition.After("800", 2)), "at sub-record 3 = after sub-record 2")
    assert(r.positions(id(5)).contains(ShardPosition.At("900")))
    val whole =
      resolve(3 -> ShardPlace.AfterSequence("700", None), 4 -> ShardPlace.AtSequence("800", Some(0)))
    assert(whole.positions(id(3)).contains(ShardPosition.After("700", ShardPosition.WholeRecord)))
    assert(whole.positions(id(4)).contains(ShardPosition.At("800")))
  }

  test("unlisted ancestors of a listed shard count as read; other unlisted shards start at TRIM_HORIZON") {
    val r = resolve(3 -> ShardPlace.AfterSequence("700", None))
    assert(r.positions(id(0)).isEmpty && r.positions(id(1)).isEmpty && r.positions(id(2)).isEmpty)
    assert(r.positions(id(4)).contains(ShardPosition.TrimHorizon), "a sibling is no ancestor")
    assert(r.positions(id(5)).contains(ShardPosition.TrimHorizon))
    assert(r.unlisted.isEmpty)
  }

  test("SHARD_END finishes a shard; LATEST finishes a closed one and pins an open one to the start time") {
    val r = resolve(2 -> ShardPlace.ShardEnd, 1 -> ShardPlace.Latest, 5 -> ShardPlace.Latest)
    assert(r.positions(id(2)).isEmpty && r.positions(id(1)).isEmpty)
    assert(r.positions(id(0)).isEmpty, "an ancestor of a listed shard")
    assert(r.positions(id(3)).contains(ShardPosition.TrimHorizon))
    assert(r.positions(id(5)).contains(ShardPosition.AtTimestamp(Now)))
  }

  test("the initial offset of a streaming query follows the document, parents still before children") {
    val offset =
      ShardPlanner.initial(S, listing, StartingPositionSpec.PerShard(doc(2 -> ShardPlace.ShardEnd)), Now, "r")
    val statuses = offset.shards.map { case (k, e) => k.shardId -> e.status }
    assert(statuses(id(2)) == ShardStatus.Finished && statuses(id(3)) == ShardStatus.Read)
    assert(statuses(id(0)) == ShardStatus.Finished)
  }

  test("a named shard Kinesis does not list: unknown is an error; expired is one per failOnDataLoss") {
    val r = resolve(9 -> ShardPlace.TrimHorizon)
    assert(r.unlisted == Seq(id(9)))
    val unknown = assertCondition(
      intercept[IllegalArgumentException](
        StartPositions.checkListed(S, listing, Seq(id(9)), failOnDataLoss = false, _ => (), Key)
      ),
      "KINESIS_INVALID_OPTION"
    ).getMessage
    assert(unknown.contains(id(9)) && unknown.contains("does not have") && unknown.contains(id(5)))
    assert(unknown.contains(Key), "the message names the option that holds the document")
    val shortListing = listing.drop(1)
    val expired = assertCondition(
      intercept[IllegalArgumentException](
        StartPositions.checkListed(S, shortListing, Seq(id(0)), failOnDataLoss = true, _ => (), Key)
      ),
      "KINESIS_DATA_LOSS"
    ).getMessage
    assert(expired.contains(id(0)) && expired.contains("kinesis.failOnDataLoss=false"))
    var warned = ""
    StartPositions.checkListed(S, shortListing, Seq(id(0)), failOnDataLoss = false, warned = _, Key)
    assert(warned.contains(id(0)) && warned.contains("Ignoring"))
  }

  // ---------------------------------------------------------------- batch planning

  private def plan(start: StartingPositionSpec, end: EndingPositionSpec) =
    BatchPlanner.plan(S, listing, StartPositions.resolve(S, listing, start, Now), end)

  test(
    "a batch read reads every shard, parents before children, closed ones to their end and open ones to the tip"
  ) {
    val reads = plan(StartingPositionSpec.TrimHorizon, EndingPositionSpec.Latest)
    assert(reads.map(_.shard.shardId) == Seq(0, 1, 5, 2, 3, 4).map(id))
    assert(reads.filter(_.shard.isClosed).forall(_.end == BatchEnd.ShardEnd))
    assert(reads.filterNot(_.shard.isClosed).forall(_.end == BatchEnd.Tip))
  }

  test("a batch read from LATEST reads only open shards; an AT_TIMESTAMP end applies to every shard") {
    val reads = plan(
      StartingPositionSpec.Latest,
      EndingPositionSpec.AtTimestamp(java.time.Instant.ofEpochMilli(Now + 5))
    )
    assert(reads.map(_.shard.shardId) == Seq(3, 4, 5).map(id))
    assert(reads.forall(_.end == BatchEnd.Timestamp(Now + 5)))
  }

  test(
    "per-shard ends: exclusive places down to the sub-record; empty ranges and TRIM_HORIZON ends read nothing"
  ) {
    val start = StartingPositionSpec.PerShard(
      doc(3 -> ShardPlace.AfterSequence("700", Some(1)), 4 -> ShardPlace.AtSequence("800", None))
    )
    val end = EndingPositionSpec.PerShard(
      doc(
        3 -> ShardPlace.AtSequence(
          "700",
          Some(2)
        ), // nothing between after sub-record 1 and before sub-record 2
        4 -> ShardPlace.AfterSequence("900", Some(4)),
        5 -> ShardPlace.TrimHorizon
      )
    )
    val reads = plan(start, end)
    assert(reads.map(_.shard.shardId) == Seq(id(4)))
    assert(reads.head.start == ShardPosition.At("800") && reads.head.end == BatchEnd.Before("900", 5))
    val through = plan(start, EndingPositionSpec.PerShard(doc(4 -> ShardPlace.AfterSequence("900", None))))
    assert(through.find(_.shard.shardId == id(4)).map(_.end).contains(BatchEnd.Before("900", Int.MaxValue)))
    assert(through.find(_.shard.shardId == id(3)).map(_.end).contains(BatchEnd.Tip), "unlisted: LATEST")
  }

  test(
    "an ending document's unlisted descendants: nothing after a sequence-number end, a timestamp passed on, " +
      "LATEST otherwise"
  ) {
    // 2 (closed; the merge of 0 and 1, split into 3 and 4) ends inside itself: 3 and 4 hold only later records.
    val bySequence = plan(
      StartingPositionSpec.TrimHorizon,
      EndingPositionSpec.PerShard(doc(2 -> ShardPlace.AtSequence("800", None)))
    )
    assert(bySequence.map(_.shard.shardId) == Seq(0, 1, 5, 2).map(id))
    assert(bySequence.find(_.shard.shardId == id(5)).map(_.end).contains(BatchEnd.Tip), "5 is no descendant")
    // A merge child inherits the earlier of its parents' timestamps; a grandchild too.
    val t0 = java.time.Instant.ofEpochMilli(Now - 10)
    val t1 = java.time.Instant.ofEpochMilli(Now - 20)
    val byTime = plan(
      StartingPositionSpec.TrimHorizon,
      EndingPositionSpec.PerShard(doc(0 -> ShardPlace.AtTimestamp(t0), 1 -> ShardPlace.AtTimestamp(t1)))
    )
    val ends = byTime.map(r => r.shard.shardId -> r.end).toMap
    assert(ends(id(2)) == BatchEnd.Timestamp(Now - 20) && ends(id(3)) == BatchEnd.Timestamp(Now - 20))
    assert(ends(id(5)) == BatchEnd.Tip)
    // One parent ended by sequence number: the merge child's records all follow it.
    val mixed = plan(
      StartingPositionSpec.TrimHorizon,
      EndingPositionSpec.PerShard(
        doc(0 -> ShardPlace.AtTimestamp(t0), 1 -> ShardPlace.AfterSequence("5", None))
      )
    )
    assert(mixed.map(_.shard.shardId).toSet == Set(0, 1, 5).map(id))
    // LATEST on an ancestor: descendants end at LATEST as well.
    val latest =
      plan(StartingPositionSpec.TrimHorizon, EndingPositionSpec.PerShard(doc(2 -> ShardPlace.Latest)))
    assert(latest.map(_.shard.shardId) == Seq(0, 1, 5, 2, 3, 4).map(id))
  }
}
