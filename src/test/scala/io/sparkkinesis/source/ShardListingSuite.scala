package io.sparkkinesis.source

import scala.collection.mutable

import io.sparkkinesis.client._
import io.sparkkinesis.config.StartingPositionSpec
import io.sparkkinesis.reader.{ShardEnd, ShardPosition}
import io.sparkkinesis.source.ShardListing.{due, merged, Known}
import io.sparkkinesis.source.ShardStatus.{Finished, Read, Waiting}
import org.scalatest.funsuite.AnyFunSuite

class ShardListingSuite extends AnyFunSuite {
  private val Min = 1000L
  private val Full = HashKeyRange(0, BigInt(2).pow(128) - 1)
  private val Low = HashKeyRange(0, BigInt(2).pow(127) - 1)
  private val High = HashKeyRange(BigInt(2).pow(127), Full.end)

  private def id(n: Int) = f"shardId-$n%012d"

  private def shard(n: Int, parents: Seq[Int] = Nil, closed: Boolean = false, range: HashKeyRange = Full) =
    ShardDescription(
      id(n),
      parents.headOption.map(id),
      parents.lift(1).map(id),
      range,
      (if (closed) Some("9") else None)
    )

  private def end(finished: Boolean, children: Seq[ChildShard] = Nil) =
    ShardEnd(ShardPosition.TrimHorizon, finished, children, 0L, Some(0L), reachedTip = true, lost = false)

  /**
   * A stream's control plane that answers ListShards as Kinesis does, the `AFTER_SHARD_ID` filter included (or, with
   * `honoursFilter` false, as ministack does: every shard), and records each request: None for a full listing.
   */
  private final class Stream(var shards: Seq[ShardDescription], honoursFilter: Boolean = true)
      extends StreamMetadataClient {
    val requests = mutable.Buffer.empty[Option[String]]
    def describeStream(streamName: String): StreamSummary = StreamSummary(streamName, "arn", "ACTIVE", 24)

    def listShardsPage(streamName: String, nextToken: Option[String]): ShardPage = {
      requests += None
      ShardPage(shards, None)
    }

    override def listShardsPageAfter(streamName: String, shardId: String): ShardPage = {
      requests += Some(shardId)
      val after = shards.filter(s => ShardListing.creationOrder.gt(s.shardId, shardId))
      ShardPage(if (honoursFilter) after else shards, None)
    }
    def close(): Unit = ()

    /** Splits open shard `n` into `a` (low half) and `b` (high half), as SplitShard does. */
    def split(n: Int, a: Int, b: Int): Unit =
      shards = shards.map(s => if (s.shardId == id(n)) s.copy(endingSequenceNumber = Some("9")) else s) ++
        Seq(shard(a, Seq(n), range = Low), shard(b, Seq(n), range = High))

    /** Merges open shards `x` and `y` into `c`, as MergeShards does. */
    def merge(x: Int, y: Int, c: Int): Unit =
      shards =
        shards.map(s => if (Set(id(x), id(y))(s.shardId)) s.copy(endingSequenceNumber = Some("9")) else s) :+
          shard(c, Seq(x, y))
  }

  private final class Clock(var now: Long = 0L) { def apply(): Long = now }

  private def listing(stream: Stream, clock: Clock) =
    new ShardListing(stream, Seq("s"), identity, Min, () => clock())

  // ---------------------------------------------------------------- when a listing is due

  test("the first listing is full; none before describeShardInterval; then one of newer shards every 15 s") {
    assert(due(None, 0L, Min, suspect = false).contains(None))
    val k = Known(Seq(shard(0), shard(1)), Some(id(1)), listedAt = 5000L, fullAt = 5000L)
    assert(due(Some(k), 5999L, Min, suspect = true).isEmpty, "describeShardInterval is the least interval")
    assert(due(Some(k), 6000L, Min, suspect = false).isEmpty, "nothing suggests a change")
    assert(due(Some(k), 6000L, Min, suspect = true).contains(Some(id(1))), "a shard ended without children")
    assert(due(Some(k), 5000L + ShardListing.SafetyIntervalMs - 1, Min, suspect = false).isEmpty)
    assert(due(Some(k), 5000L + ShardListing.SafetyIntervalMs, Min, suspect = false).contains(Some(id(1))))
    assert(
      due(Some(k.copy(listedAt = 3600000L)), 5000L + 3600000L, Min, suspect = false).contains(None),
      "hourly"
    )
  }

  test("a describeShardInterval longer than the safety interval spaces every listing") {
    val k = Known(Seq(shard(0)), Some(id(0)), listedAt = 0L, fullAt = 0L)
    assert(due(Some(k), 59999L, 60000L, suspect = true).isEmpty)
    assert(due(Some(k), 60000L, 60000L, suspect = false).contains(Some(id(0))))
  }

  test("shard ids are compared in creation order, not as plain strings") {
    assert(ShardListing.creationOrder.gt("shardId-000000000010", "shardId-000000000009"))
    assert(ShardListing.creationOrder.gt("shardId-1000000000000", "shardId-999999999999"))
  }

  // ---------------------------------------------------------------- merging

  test("newer shards are added, the known kept, and the parents of a split and of a merge marked closed") {
    val start = merged(None, None, Seq(shard(0), shard(1), shard(2)), 0L)
    val split =
      merged(Some(start), Some(id(2)), Seq(shard(3, Seq(0), range = Low), shard(4, Seq(0), range = High)), 1L)
    assert(split.shards.map(_.shardId) == (0 to 4).map(id))
    assert(split.shards.filter(_.isClosed).map(_.shardId) == Seq(id(0)))
    assert(split.newest.contains(id(4)) && split.listedAt == 1L && split.fullAt == 0L)
    val merge = merged(Some(split), Some(id(4)), Seq(shard(5, Seq(1, 2))), 2L)
    assert(merge.shards.filter(_.isClosed).map(_.shardId) == Seq(id(0), id(1), id(2)))
    assert(merge.shards.find(_.shardId == id(5)).exists(s => !s.isClosed && s.parents == Seq(id(1), id(2))))
    assert(merge.newest.contains(id(5)))
  }

  test("an answer that ignored the filter (every shard) merges to the same view") {
    val start = merged(None, None, Seq(shard(0), shard(1)), 0L)
    val all =
      Seq(shard(0, closed = true), shard(1), shard(2, Seq(0), range = Low), shard(3, Seq(0), range = High))
    val filtered = merged(Some(start), Some(id(1)), all.drop(2), 1L)
    val unfiltered = merged(Some(start), Some(id(1)), all, 1L)
    assert(
      unfiltered.shards.map(s => s.shardId -> s.isClosed) == filtered.shards.map(s => s.shardId -> s.isClosed)
    )
    assert(unfiltered.newest == filtered.newest)
  }

  test(
    "only a full listing forgets a shard (one that expired), and an empty one does not leave the cursor empty"
  ) {
    val start = merged(None, None, Seq(shard(0, closed = true), shard(1, Seq(0))), 0L)
    assert(merged(Some(start), Some(id(1)), Nil, 1L).shards.size == 2)
    val full = merged(Some(start), None, Seq(shard(1, Seq(0))), 2L)
    assert(full.shards.map(_.shardId) == Seq(id(1)) && full.fullAt == 2L && full.newest.contains(id(1)))
  }

  // ---------------------------------------------------------------- the driver's calls

  test("an idle stream costs one full listing and then 4 filtered ListShards a minute") {
    val stream = new Stream(Seq(shard(0), shard(1), shard(2), shard(3)))
    val clock = new Clock
    val shards = listing(stream, clock)
    // The driver plans every few milliseconds while it paces an idle query.
    while (clock.now <= 60000L) {
      assert(
        shards
          .shardsAfter(clock.now / 1000, Map(ShardKey("s", id(0)) -> end(finished = false)))
          .apply("s")
          .size == 4
      )
      clock.now += 20
    }
    assert(stream.requests.head.isEmpty)
    assert(stream.requests.tail == Seq.fill(4)(Some(id(3))))
  }

  test("a shard that finished without announcing children is answered by one listing, which finds them") {
    val stream = new Stream(Seq(shard(0), shard(1)))
    val clock = new Clock
    val shards = listing(stream, clock)
    shards.shards()
    stream.split(0, 2, 3)
    clock.now = 500L
    val unannounced = Map(ShardKey("s", id(0)) -> end(finished = true))
    assert(shards.shardsAfter(7L, unannounced)("s").size == 2, "not within describeShardInterval")
    clock.now = 1000L
    assert(shards.shardsAfter(7L, unannounced)("s").map(_.shardId) == (0 to 3).map(id))
    assert(shards.closed == Set(ShardKey("s", id(0))))
    clock.now = 2000L
    shards.shardsAfter(7L, unannounced) // the same batch's ends again: answered already
    val announced = Map(ShardKey("s", id(1)) -> end(finished = true, Seq(ChildShard(id(4), Seq(id(1)), Low))))
    shards.shardsAfter(8L, announced) // children announced: the planner has them, no listing needed
    assert(stream.requests == Seq(None, Some(id(1))))
  }

  test("with two streams, a shard that finished without announcing children lists its stream only") {
    val a = new Stream(Seq(shard(0), shard(1)))
    val b = new Stream(Seq(shard(0), shard(1)))
    val byName = Map("a" -> a, "b" -> b)
    val both = new StreamMetadataClient {
      def describeStream(streamName: String): StreamSummary = byName(streamName).describeStream(streamName)
      def listShardsPage(streamName: String, nextToken: Option[String]): ShardPage =
        byName(streamName).listShardsPage(streamName, nextToken)
      override def listShardsPageAfter(streamName: String, shardId: String): ShardPage =
        byName(streamName).listShardsPageAfter(streamName, shardId)
      def close(): Unit = ()
    }
    val clock = new Clock
    val shards = new ShardListing(both, Seq("a", "b"), identity, Min, () => clock())
    shards.shards()
    a.split(0, 2, 3)
    clock.now = 1000L
    val open = end(finished = false)
    val listed =
      shards.shardsAfter(7L, Map(ShardKey("a", id(0)) -> end(finished = true), ShardKey("b", id(0)) -> open))
    assert(listed("a").map(_.shardId) == (0 to 3).map(id) && listed("b").size == 2)
    assert(a.requests == Seq(None, Some(id(1))) && b.requests == Seq(None), "only stream a is listed")
    // The next batch's unannounced end is in b: b is listed, and a, answered already, is not.
    b.merge(0, 1, 2)
    clock.now = 2000L
    shards.shardsAfter(8L, Map(ShardKey("a", id(2)) -> open, ShardKey("b", id(0)) -> end(finished = true)))
    assert(a.requests.size == 2 && b.requests == Seq(None, Some(id(1))))
    assert(shards.closed == Set(ShardKey("a", id(0)), ShardKey("b", id(0)), ShardKey("b", id(1))))
  }

  test("a full listing once an hour forgets expired shards; a new source starts with a full listing") {
    val stream = new Stream(Seq(shard(0, closed = true), shard(1, Seq(0))))
    val clock = new Clock
    val shards = listing(stream, clock)
    shards.shards()
    stream.shards = Seq(shard(1, Seq(0)))
    clock.now = ShardListing.FullIntervalMs - 1
    assert(shards.shards()("s").size == 2)
    clock.now = ShardListing.FullIntervalMs + ShardListing.SafetyIntervalMs
    assert(shards.shards()("s").map(_.shardId) == Seq(id(1)))
    assert(stream.requests.head.isEmpty && stream.requests.last.isEmpty && stream.requests.size == 3)
    assert(listing(stream, clock).shards()("s").size == 1 && stream.requests.last.isEmpty)
  }

  test(
    "with the planner: a split and a merge that nobody announces are read in lineage order, nothing missed"
  ) {
    // The stream of a fan-out reader on an emulator that never ends a closed shard's subscription: every child
    // comes from a listing, and a listing is how the reader learns that its shard closed.
    for (honoursFilter <- Seq(true, false)) {
      val stream = new Stream(Seq(shard(0), shard(1), shard(2)), honoursFilter)
      val clock = new Clock
      val shards = listing(stream, clock)
      var offset = ShardPlanner.initial("s", shards.shards()("s"), StartingPositionSpec.TrimHorizon, 0L, "r")
      def step(finished: Set[Int]): Map[ShardStatus, Set[String]] = {
        val ends =
          if (offset.batchId < 0) Map.empty[ShardKey, ShardEnd]
          else
            offset.readShards.map { case (key, _) =>
              key -> end(finished(key.shardId.takeRight(2).toInt))
            }.toMap
        clock.now += ShardListing.SafetyIntervalMs
        offset = ShardPlanner.next(offset, ends, shards.shardsAfter(offset.batchId, ends))
        offset.shards.toSeq.groupBy(_._2.status).map { case (st, es) =>
          st -> es.map(_._1.shardId.takeRight(1)).toSet
        }
      }
      assert(step(Set.empty)(Read) == Set("0", "1", "2"))
      stream.split(0, 3, 4)
      stream.merge(1, 2, 5)
      assert(step(Set.empty)(Waiting) == Set("3", "4", "5"), "children wait for their parents")
      assert(shards.closed.map(_.shardId) == Set(id(0), id(1), id(2)))
      val afterParents = step(Set(0, 1, 2))
      assert(afterParents(Finished) == Set("0", "1", "2") && afterParents(Read) == Set("3", "4", "5"))
      assert(stream.requests.head.isEmpty && stream.requests.tail.forall(_.isDefined))
    }
  }
}
