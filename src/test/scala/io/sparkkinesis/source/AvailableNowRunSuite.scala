package io.sparkkinesis.source

import scala.collection.mutable

import io.sparkkinesis.client._
import io.sparkkinesis.reader._
import io.sparkkinesis.source.StreamFakes.FullRange
import org.scalatest.funsuite.AnyFunSuite

/** An AvailableNow run on the driver: its start, its tip probes, and the batches it keeps to its bounds. */
class AvailableNowRunSuite extends AnyFunSuite {
  private def key(id: String) = ShardKey("s", id)
  private def open(id: String) = ShardDescription(id, None, None, FullRange, None)
  private def closed(id: String) = ShardDescription(id, None, None, FullRange, Some("999"))

  /** Tips whose GetRecords answer per iterator is `answer`; LATEST iterators are `latest-<shard>-<n>`. */
  private final class Tips(answer: String => RecordsResponse) extends ShardRecordsClient {
    val iteratorsTaken: mutable.Buffer[String] = mutable.Buffer.empty
    val polled: mutable.Buffer[String] = mutable.Buffer.empty

    def getShardIterator(streamName: String, shardId: String, start: IteratorStart): String = {
      assert(streamName == "id-s" && start == IteratorStart.Latest)
      iteratorsTaken += shardId
      s"latest-$shardId-${iteratorsTaken.size}"
    }

    def getRecords(iterator: String, limit: Int): RecordsResponse = {
      assert(limit == 1)
      polled += iterator
      answer(iterator)
    }
    def close(): Unit = ()
  }

  private def nothing(next: String) = RecordsResponse(Nil, Some(next), Some(0L), Nil)

  private def record(seq: String) =
    RecordsResponse(Seq(KinesisRecord(Array[Byte](1), "pk", seq, 0L)), Some("n"), Some(0L), Nil)

  private def run(tips: Tips, shards: ShardDescription*) =
    AvailableNowRun.start(tips, "id-" + _, Map("s" -> shards))

  private def offset(id: Long, read: String*) = KinesisOffset(
    id,
    "r",
    read.map(s => key(s) -> ShardEntry(ShardPosition.TrimHorizon, ShardStatus.Read, Nil, FullRange)).toMap
  )

  private val at5 = ShardPosition.After("5", -1)

  private def finished = RecordedEnd(
    ShardEnd(at5, finished = true, Nil, 1L, Some(0L), reachedTip = true, lost = false)
  )

  test("the run starts with a LATEST iterator on each open shard, none on a closed one") {
    val tips = new Tips(_ => fail("no probe at the start"))
    val r = run(tips, closed("p"), open("c"))
    assert(tips.iteratorsTaken == Seq("c"))
    assert(
      r.shards == Map(
        key("p") -> RunShard(RunBound.Unbounded, false),
        key("c") -> RunShard(RunBound.Pending("latest-c-1"), false)
      )
    )
  }

  test("each batch probes the pending tips: a record put since bounds the shard, nothing keeps it pending") {
    val tips = new Tips({
      case "latest-a-1" => record("42")
      case "latest-b-2" => nothing("next-b")
      case "latest-c-3" => RecordsResponse(Nil, None, None, Nil)
      case "next-b" => nothing("next-b2")
      case other => fail(s"unexpected probe of $other")
    })
    val r = run(tips, open("a"), open("b"), open("c"))
    r.restrict(offset(1, "a", "b", "c"), offset(0, "a", "b", "c"), Map.empty)
    assert(r.shards(key("a")) == RunShard(RunBound.Before("42"), false))
    assert(r.shards(key("b")) == RunShard(RunBound.Pending("next-b"), false))
    assert(
      r.shards(key("c")) == RunShard(RunBound.Unbounded, false),
      "closed since the start with nothing more"
    )
    r.restrict(offset(2, "a", "b", "c"), offset(1, "a", "b", "c"), Map.empty)
    assert(
      tips.polled == Seq("latest-a-1", "latest-b-2", "latest-c-3", "next-b"),
      "one probe per pending shard"
    )
    assert(r.shards(key("b")) == RunShard(RunBound.Pending("next-b2"), false))
  }

  test(
    "a throttled probe keeps the iterator, an expired one is taken again at LATEST, a vanished shard is unbounded"
  ) {
    val tips = new Tips({
      case "latest-a-1" => throw new ThroughputExceeded("slow down", null)
      case "latest-b-2" => throw new IteratorExpired("expired", null)
      case "latest-c-3" => throw new ShardNotFound("gone", null)
      case other => fail(s"unexpected probe of $other")
    })
    val r = run(tips, open("a"), open("b"), open("c"))
    r.restrict(offset(1, "a", "b", "c"), offset(0, "a", "b", "c"), Map.empty)
    assert(r.shards(key("a")) == RunShard(RunBound.Pending("latest-a-1"), false))
    assert(r.shards(key("b")) == RunShard(RunBound.Pending("latest-b-4"), false))
    assert(r.shards(key("c")) == RunShard(RunBound.Unbounded, false))
  }

  test(
    "the first batch takes only what the offset tracks; later ones fold in the ends, and reached shards wait"
  ) {
    val tips = new Tips(_ => nothing("still"))
    val r = run(tips, closed("a"))
    val ends = Map(key("a") -> finished)
    // Planned before the run: its ends are about another run's bounds.
    val first = r.restrict(offset(5, "a", "gone"), offset(4, "a", "gone"), ends)
    assert(first.readShards.map(_._1).toSet == Set(key("a"), key("gone")))
    assert(r.shards(key("gone")) == RunShard(RunBound.Unbounded, false), "tracked by the offset: in the run")
    val second = r.restrict(offset(6, "a", "gone"), offset(5, "a", "gone"), ends)
    assert(second.readShards.map(_._1) == Seq(key("gone")))
    assert(second.shards(key("a")).status == ShardStatus.Waiting)
    assert(r.shards(key("a")).reached)
  }
}
