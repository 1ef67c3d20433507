package io.sparkkinesis.source

import java.time.Instant

import scala.collection.mutable
import scala.util.Random

import io.sparkkinesis.client.{ChildShard, HashKeyRange, ShardDescription}
import io.sparkkinesis.config.StartingPositionSpec
import io.sparkkinesis.reader.{ShardEnd, ShardPosition}
import io.sparkkinesis.source.ShardStatus.{Finished, Read, Waiting}
import org.scalatest.funsuite.AnyFunSuite

class ShardPlannerSuite extends AnyFunSuite {
  private val S = "orders"
  private val Max = BigInt(2).pow(128) - 1
  private val Full = HashKeyRange(0, Max)
  private val Low = HashKeyRange(0, BigInt(2).pow(127) - 1)
  private val High = HashKeyRange(BigInt(2).pow(127), Max)
  private val Now = 1693422005000L

  private def shard(
      id: String,
      parents: Seq[String] = Nil,
      closed: Boolean = false,
      range: HashKeyRange = Full
  ) =
    ShardDescription(id, parents.lift(0), parents.lift(1), range, if (closed) Some("99999") else None)

  private def k(id: String) = ShardKey(S, id)
  private def after(seq: Long) = ShardPosition.After(seq.toString, ShardPosition.WholeRecord)

  private def end(
      position: ShardPosition,
      finished: Boolean = false,
      children: Seq[ChildShard] = Nil,
      tip: Boolean = false
  ) = ShardEnd(position, finished, children, recordCount = 3, Some(if (tip) 0L else 500L), tip, lost = false)

  private def statuses(o: KinesisOffset): Map[String, ShardStatus] =
    o.shards.map { case (key, e) => key.shardId -> e.status }

  private def start(
      listing: Seq[ShardDescription],
      spec: StartingPositionSpec = StartingPositionSpec.TrimHorizon
  ) =
    ShardPlanner.initial(S, listing, spec, Now, "run-1")

  private def next(o: KinesisOffset, ends: Map[String, ShardEnd], listing: Seq[ShardDescription]) =
    ShardPlanner.next(o, ends.map { case (id, e) => k(id) -> e }, Map(S -> listing))

  // ---------------------------------------------------------------- initial offsets

  private val reshardedListing = Seq(
    shard("P", closed = true),
    shard("C1", parents = Seq("P"), range = Low),
    shard("C2", parents = Seq("P"), range = High),
    shard("X")
  )

  test("initial TRIM_HORIZON: every shard from its start; parents read first, children wait") {
    val o = start(reshardedListing)
    assert(o.batchId == -1L && o.runId == "run-1")
    assert(o.shards.values.forall(_.position == ShardPosition.TrimHorizon))
    assert(statuses(o) == Map("P" -> Read, "C1" -> Waiting, "C2" -> Waiting, "X" -> Read))
    assert(o.shards(k("C1")).parents == Seq("P") && o.shards(k("C1")).hashKeyRange == Low)
    assert(o.shards(k("C2")).hashKeyRange == High)
  }

  test("initial LATEST: closed shards are finished, open ones are pinned AT_TIMESTAMP now and read") {
    val o = start(reshardedListing, StartingPositionSpec.Latest)
    assert(statuses(o) == Map("P" -> Finished, "C1" -> Read, "C2" -> Read, "X" -> Read))
    Seq("C1", "C2", "X").foreach(id => assert(o.shards(k(id)).position == ShardPosition.AtTimestamp(Now), id))
  }

  test("initial AT_TIMESTAMP: every shard from the instant, closed ones included; children wait") {
    val instant = Instant.parse("2023-08-30T19:00:05Z")
    val o = start(reshardedListing, StartingPositionSpec.AtTimestamp(instant))
    assert(o.shards.values.forall(_.position == ShardPosition.AtTimestamp(instant.toEpochMilli)))
    assert(statuses(o) == Map("P" -> Read, "C1" -> Waiting, "C2" -> Waiting, "X" -> Read))
  }

  test("the first batch reads what the initial offset positioned; batch ids count up and the run id stays") {
    val initial = start(reshardedListing)
    val b0 = next(initial, Map.empty, reshardedListing)
    assert(b0.batchId == 0L && b0.runId == "run-1")
    assert(b0.shards == initial.shards)
    val b1 = next(b0, Map("P" -> end(after(5)), "X" -> end(after(7))), reshardedListing)
    assert(b1.batchId == 1L && b1.runId == "run-1")
    assert(b1.shards(k("P")).position == after(5) && b1.shards(k("X")).position == after(7))
    assert(next(b1, Map("P" -> end(after(6)), "X" -> end(after(8))), reshardedListing).batchId == 2L)
  }

  // ---------------------------------------------------------------- lineage

  test(
    "split: the children wait until the parent is finished, then are read in the next batch, never with it"
  ) {
    val before = Seq(shard("P"))
    val b0 = next(start(before), Map.empty, before)
    assert(statuses(b0) == Map("P" -> Read))

    val afterSplit =
      Seq(shard("P", closed = true), shard("C1", Seq("P"), range = Low), shard("C2", Seq("P"), range = High))
    val b1 = next(b0, Map("P" -> end(after(10))), afterSplit)
    assert(statuses(b1) == Map("P" -> Read, "C1" -> Waiting, "C2" -> Waiting))
    assert(b1.shards(k("P")).position == after(10))

    val children = Seq(ChildShard("C1", Seq("P"), Low), ChildShard("C2", Seq("P"), High))
    val b2 = next(b1, Map("P" -> end(after(20), finished = true, children)), afterSplit)
    // b1 read P to its end; b2 is the first batch that reads its children.
    assert(statuses(b2) == Map("P" -> Finished, "C1" -> Read, "C2" -> Read))
    assert(b2.shards(k("C1")).position == ShardPosition.TrimHorizon)
    assert(b2.readShards.map(_._1.shardId) == Seq("C1", "C2"))

    val b3 = next(b2, Map("C1" -> end(after(30)), "C2" -> end(after(31))), afterSplit)
    assert(statuses(b3) == Map("P" -> Finished, "C1" -> Read, "C2" -> Read))
    assert(b3.shards(k("C1")).position == after(30) && b3.shards(k("C2")).position == after(31))
  }

  test("merge: the child waits for both parents, also when one parent finishes a batch before the other") {
    val listing = Seq(shard("P1", range = Low), shard("P2", range = High))
    val b0 = next(start(listing), Map.empty, listing)
    assert(statuses(b0) == Map("P1" -> Read, "P2" -> Read))

    val child = ChildShard("C", Seq("P1", "P2"), Full)
    // P1 reaches its end; P2 is closed too but not read to its end yet. The listing is stale (no C yet).
    val b1 =
      next(b0, Map("P1" -> end(after(10), finished = true, Seq(child)), "P2" -> end(after(11))), listing)
    assert(statuses(b1) == Map("P1" -> Finished, "P2" -> Read, "C" -> Waiting))
    assert(b1.shards(k("C")).parents == Seq("P1", "P2"))

    val b2 = next(b1, Map("P2" -> end(after(12))), listing)
    assert(statuses(b2) == Map("P1" -> Finished, "P2" -> Read, "C" -> Waiting))

    val b3 = next(b2, Map("P2" -> end(after(13), finished = true, Seq(child))), listing)
    assert(statuses(b3) == Map("P1" -> Finished, "P2" -> Finished, "C" -> Read))
    assert(b3.shards(k("C")).position == ShardPosition.TrimHorizon && b3.shards(k("C")).hashKeyRange == Full)
  }

  test("merge where both parents finish in the same batch: the child is read in the batch after") {
    val listing = Seq(shard("P1", range = Low), shard("P2", range = High))
    val b0 = next(start(listing), Map.empty, listing)
    val child = ChildShard("C", Seq("P1", "P2"), Full)
    val b1 = next(
      b0,
      Map(
        "P1" -> end(after(1), finished = true, Seq(child)),
        "P2" -> end(after(2), finished = true, Seq(child))
      ),
      listing
    )
    assert(statuses(b1) == Map("P1" -> Finished, "P2" -> Finished, "C" -> Read))
  }

  test("children announced at a shard's end are added even when the listing is stale") {
    val stale = Seq(shard("P"))
    val b0 = next(start(stale), Map.empty, stale)
    val children = Seq(ChildShard("C1", Seq("P"), Low), ChildShard("C2", Seq("P"), High))
    val b1 = next(b0, Map("P" -> end(after(5), finished = true, children)), stale)
    assert(statuses(b1) == Map("P" -> Finished, "C1" -> Read, "C2" -> Read))
    assert(b1.shards(k("C1")) == ShardEntry(ShardPosition.TrimHorizon, Read, Seq("P"), Low))
    assert(b1.shards(k("C2")) == ShardEntry(ShardPosition.TrimHorizon, Read, Seq("P"), High))
  }

  test("a child and grandchild discovered together: each waits for its own parent") {
    val listing = Seq(shard("P"))
    val b0 = next(start(listing), Map.empty, listing)
    val later = Seq(
      shard("P", closed = true),
      shard("C", Seq("P"), closed = true),
      shard("G1", Seq("C"), range = Low),
      shard("G2", Seq("C"), range = High)
    )
    val b1 = next(b0, Map("P" -> end(after(1))), later)
    assert(statuses(b1) == Map("P" -> Read, "C" -> Waiting, "G1" -> Waiting, "G2" -> Waiting))
    val b2 = next(b1, Map("P" -> end(after(2), finished = true)), later)
    assert(statuses(b2) == Map("P" -> Finished, "C" -> Read, "G1" -> Waiting, "G2" -> Waiting))
    val b3 = next(b2, Map("C" -> end(after(3), finished = true)), later)
    assert(statuses(b3) == Map("P" -> Finished, "C" -> Finished, "G1" -> Read, "G2" -> Read))
  }

  test("ends recorded for shards the batch did not read are ignored") {
    val listing = Seq(shard("P", closed = true), shard("C", Seq("P")))
    val b0 = next(start(listing), Map.empty, listing)
    assert(statuses(b0)("C") == Waiting)
    val stray = end(after(99), finished = true, Seq(ChildShard("D", Seq("C"), Full)))
    val b1 = next(b0, Map("P" -> end(after(1)), "C" -> stray), listing)
    assert(statuses(b1) == Map("P" -> Read, "C" -> Waiting))
    assert(b1.shards(k("C")).position == ShardPosition.TrimHorizon)
  }

  // ---------------------------------------------------------------- listing changes

  test("finished shards that vanish from the listing are dropped; those still listed are kept") {
    val listing = Seq(shard("P", closed = true), shard("C", Seq("P")))
    val b0 = next(start(listing), Map.empty, listing)
    val b1 =
      next(b0, Map("P" -> end(after(1), finished = true, Seq(ChildShard("C", Seq("P"), Full)))), listing)
    assert(statuses(b1) == Map("P" -> Finished, "C" -> Read))
    val b2 = next(b1, Map("C" -> end(after(2))), listing)
    assert(statuses(b2) == Map("P" -> Finished, "C" -> Read))
    // P's retention passed: Kinesis no longer lists it.
    val b3 = next(b2, Map("C" -> end(after(3))), Seq(shard("C", Seq("P"))))
    assert(statuses(b3) == Map("C" -> Read))
    assert(b3.shards(k("C")).position == after(3))
  }

  test("a finished parent left out of one listing and listed again is not read again") {
    val listing = Seq(shard("P", closed = true), shard("C", Seq("P")))
    val b0 = next(start(listing), Map.empty, listing)
    val b1 =
      next(b0, Map("P" -> end(after(1), finished = true, Seq(ChildShard("C", Seq("P"), Full)))), listing)
    val b2 = next(b1, Map("C" -> end(after(2))), Seq(shard("C", Seq("P"))))
    assert(statuses(b2) == Map("C" -> Read))
    // The parent is listed again (an emulator's or the service's glitch): it stays done, C reads on.
    val b3 = next(b2, Map("C" -> end(after(3))), listing)
    assert(statuses(b3) == Map("C" -> Read))
    assert(b3.readShards.map(_._1) == Seq(k("C")))
  }

  test("unfinished shards missing from the listing are kept, so their reader reports the loss") {
    val listing = Seq(shard("A"), shard("B", Seq("A")), shard("Z", closed = true))
    val b0 = next(start(listing), Map.empty, listing)
    assert(statuses(b0) == Map("A" -> Read, "B" -> Waiting, "Z" -> Read))
    val b1 = next(b0, Map("A" -> end(after(4)), "Z" -> end(after(5))), Nil)
    assert(statuses(b1) == Map("A" -> Read, "B" -> Waiting, "Z" -> Read))
    assert(b1.shards(k("A")).position == after(4) && b1.shards(k("Z")).position == after(5))
  }

  test("without a listing for the stream, finished shards are kept") {
    val listing = Seq(shard("P", closed = true), shard("C", Seq("P")))
    val b0 = next(start(listing), Map.empty, listing)
    val b1 = ShardPlanner.next(b0, Map(k("P") -> end(after(1), finished = true)), Map.empty)
    assert(statuses(b1) == Map("P" -> Finished, "C" -> Read))
  }

  test("new shards of the listing are added from their start") {
    val b0 = next(start(Seq(shard("A"))), Map.empty, Seq(shard("A")))
    val b1 = next(b0, Map("A" -> end(after(1))), Seq(shard("A"), shard("N")))
    assert(statuses(b1) == Map("A" -> Read, "N" -> Read))
    assert(b1.shards(k("N")).position == ShardPosition.TrimHorizon)
  }

  test("a shard the batch read but whose end is not recorded fails with a clear message") {
    val listing = Seq(shard("A"), shard("B"))
    val b0 = next(start(listing), Map.empty, listing)
    val b1 = next(b0, Map("A" -> end(after(1)), "B" -> end(after(1))), listing)
    val e = intercept[IllegalStateException](next(b1, Map("A" -> end(after(2))), listing))
    assert(e.getMessage.contains(s"$S/B") && e.getMessage.contains("batch 1"))
    assert(e.getMessage.contains("kinesis.metadataPath"))
  }

  // ---------------------------------------------------------------- sameShape

  test("sameShape: true when only positions move, false when a shard appears, goes, or changes status") {
    val listing = Seq(shard("A"), shard("B", closed = true))
    val b0 = next(start(listing), Map.empty, listing)
    val moved = next(b0, Map("A" -> end(after(1)), "B" -> end(after(1))), listing)
    assert(moved.shards(k("A")).position != b0.shards(k("A")).position)
    assert(ShardPlanner.sameShape(b0, moved))
    val finished = next(b0, Map("A" -> end(after(1)), "B" -> end(after(2), finished = true)), listing)
    assert(!ShardPlanner.sameShape(b0, finished))
    val grown = next(b0, Map("A" -> end(after(1)), "B" -> end(after(1))), listing :+ shard("N"))
    assert(!ShardPlanner.sameShape(b0, grown))
    assert(!ShardPlanner.sameShape(grown, b0))
    val shrunk = next(finished, Map("A" -> end(after(2))), Seq(shard("A")))
    assert(!ShardPlanner.sameShape(finished, shrunk))
  }

  // ---------------------------------------------------------------- random resharding

  test("random splits and merges: a shard is read only after all its parents were read to their end") {
    for (seed <- 1 to 30) {
      val rnd = new Random(seed)
      val parentsOf = mutable.LinkedHashMap[String, Seq[String]]("s0" -> Nil, "s1" -> Nil)
      val closed = mutable.Set[String]()
      val childrenOf = mutable.Map[String, Seq[String]]().withDefaultValue(Nil)
      var counter = 2
      def listing() = parentsOf.toSeq.map { case (id, ps) => shard(id, ps, closed(id)) }
      def create(parents: Seq[String]): Unit = {
        val id = s"s$counter"
        counter += 1
        parentsOf(id) = parents
        parents.foreach(p => childrenOf(p) = childrenOf(p) :+ id)
      }
      var offset = next(start(listing()), Map.empty, listing())
      var stale = listing()
      val lastReadBatch = mutable.Map[String, Long]()
      val finishedAt = mutable.Map[String, Long]()
      for (step <- 0 until 40) {
        // Reshard while the query runs (only in the first 25 steps, so every shard can be finished).
        val open = parentsOf.keys.filterNot(closed).toSeq
        if (step < 25 && rnd.nextInt(3) == 0 && open.nonEmpty) {
          if (open.size >= 2 && rnd.nextBoolean()) {
            val Seq(a, b) = rnd.shuffle(open).take(2)
            closed ++= Seq(a, b); create(Seq(a, b))
          } else {
            val a = open(rnd.nextInt(open.size))
            closed += a; create(Seq(a)); create(Seq(a))
          }
        }
        offset.readShards.foreach { case (key, _) => lastReadBatch(key.shardId) = offset.batchId }
        val ends = offset.readShards.map { case (key, _) =>
          val id = key.shardId
          val done = closed(id) && (step >= 25 || rnd.nextBoolean())
          val children = if (done) childrenOf(id).map(c => ChildShard(c, parentsOf(c), Full)) else Nil
          if (done) finishedAt(id) = offset.batchId
          id -> end(after(step.toLong), done, children)
        }.toMap
        if (rnd.nextInt(3) > 0) stale = listing() // sometimes the driver works from an old listing
        val nextOffset = next(offset, ends, stale)
        // The lineage rule, checked on every planned batch.
        nextOffset.readShards.foreach { case (key, entry) =>
          entry.parents.foreach { p =>
            assert(
              finishedAt.contains(p),
              s"seed $seed: ${key.shardId} read in ${nextOffset.batchId} before $p ended"
            )
            assert(finishedAt(p) < nextOffset.batchId, s"seed $seed: ${key.shardId} read with its parent $p")
          }
        }
        assert(nextOffset.batchId == offset.batchId + 1 && nextOffset.runId == "run-1")
        offset = nextOffset
      }
      // Every shard ever created was eventually read, and every closed one was read to its end.
      assert(
        parentsOf.keys.forall(lastReadBatch.contains),
        s"seed $seed: ${parentsOf.keys.filterNot(lastReadBatch.contains)}"
      )
      assert(closed.forall(finishedAt.contains), s"seed $seed")
    }
  }
}
