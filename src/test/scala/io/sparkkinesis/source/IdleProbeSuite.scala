package io.sparkkinesis.source

import io.sparkkinesis.client._
import io.sparkkinesis.config.SourceConfig
import io.sparkkinesis.reader.ShardPosition
import io.sparkkinesis.source.BatchPacing.Outcome
import org.scalatest.funsuite.AnyFunSuite

class IdleProbeSuite extends AnyFunSuite {
  private val Full = HashKeyRange(0, BigInt(2).pow(128) - 1)
  private val A = ShardKey("orders", "shardId-000000000000")
  private val B = ShardKey("orders", "shardId-000000000001")

  /** A shard records client whose answers the test sets per shard; it logs every request. */
  private final class Shards extends ShardRecordsClient {
    val calls = scala.collection.mutable.Buffer.empty[String]
    // What GetRecords answers on the shard: (records, open, millisBehindLatest), or a failure.
    val answers = scala.collection.mutable.Map.empty[String, Either[Exception, (Int, Boolean, Long)]]
    private var issued = 0

    def getShardIterator(streamName: String, shardId: String, start: IteratorStart): String = {
      calls += s"GetShardIterator $streamName $shardId $start"
      issued += 1
      s"$shardId|$issued"
    }

    def getRecords(iterator: String, limit: Int): RecordsResponse = {
      val shard = iterator.takeWhile(_ != '|')
      calls += s"GetRecords $iterator $limit"
      answers.getOrElse(shard, Right((0, true, 0L))) match {
        case Left(e) => throw e
        case Right((n, open, behind)) =>
          issued += 1
          val records = (1 to n).map(i => KinesisRecord(Array[Byte](1), "k", s"9$i", 0L))
          RecordsResponse(records, if (open) Some(s"$shard|$issued") else None, Some(behind), Nil)
      }
    }
    def close(): Unit = ()
  }

  private def next(positions: (ShardKey, ShardPosition)*): KinesisOffset =
    KinesisOffset(
      3L,
      "run",
      positions.map { case (k, p) => k -> ShardEntry(p, ShardStatus.Read, Nil, Full) }.toMap
    )

  private val ended = ShardPosition.After("100", ShardPosition.WholeRecord)
  private val idle = next(A -> ended, B -> ShardPosition.TrimHorizon)

  private def probe(shards: Shards, intervalMs: Long = 1000L)(now: => Long) =
    new IdleProbe(shards, s => s"arn:$s", intervalMs, () => now)

  test("after a batch that was not idle it never holds the next one back, and makes no call") {
    val shards = new Shards
    val p = probe(shards)(0L)
    for (outcome <- Seq(Outcome.Behind, Outcome.Found)) assert(!p.holdsBack(outcome, idle))
    assert(shards.calls.isEmpty)
  }

  test("an idle stream: one GetRecords (Limit 1) per shard per interval, on iterators kept between probes") {
    val shards = new Shards
    var now = 0L
    val p = probe(shards)(now)
    assert(p.holdsBack(Outcome.Idle, idle))
    // From the recorded end, or from the shard's start position when the shard has no record read yet.
    assert(
      shards.calls == Seq(
        "GetShardIterator arn:orders shardId-000000000000 AfterSequence(100)",
        "GetRecords shardId-000000000000|1 1",
        "GetShardIterator arn:orders shardId-000000000001 TrimHorizon",
        "GetRecords shardId-000000000001|3 1"
      )
    )
    shards.calls.clear()
    now = 999L
    assert(p.holdsBack(Outcome.Idle, idle) && shards.calls.isEmpty, "no probe before the interval")
    now = 1000L
    assert(p.holdsBack(Outcome.Idle, idle))
    assert(shards.calls == Seq("GetRecords shardId-000000000000|2 1", "GetRecords shardId-000000000001|4 1"))
  }

  test("a record on any shard releases the batch; the next idle spell takes fresh iterators") {
    val shards = new Shards
    var now = 0L
    val p = probe(shards)(now)
    assert(p.holdsBack(Outcome.Idle, idle))
    shards.answers(B.shardId) = Right((1, true, 0L))
    now = 1000L
    assert(!p.holdsBack(Outcome.Idle, idle))
    // The batch reads from the recorded positions: the probe's record is not consumed, only announced.
    shards.answers.clear()
    shards.calls.clear()
    val after = next(A -> ended, B -> ShardPosition.After("91", ShardPosition.WholeRecord))
    now = 1001L
    assert(p.holdsBack(Outcome.Idle, after))
    assert(shards.calls.count(_.startsWith("GetShardIterator")) == 2)
    assert(shards.calls.contains("GetShardIterator arn:orders shardId-000000000001 AfterSequence(91)"))
  }

  test("a closed shard, a shard behind its tip or a failed probe releases the batch") {
    val cases: Seq[Either[Exception, (Int, Boolean, Long)]] =
      Seq(Right((0, false, 0L)), Right((0, true, 5000L)), Left(new RuntimeException("throttled")))
    for (answer <- cases) {
      val shards = new Shards
      shards.answers(A.shardId) = answer
      assert(!probe(shards)(0L).holdsBack(Outcome.Idle, idle), answer)
    }
  }

  test("a shard whose position moved is probed from its new position") {
    val shards = new Shards
    var now = 0L
    val p = probe(shards)(now)
    assert(p.holdsBack(Outcome.Idle, idle))
    shards.calls.clear()
    now = 2000L
    assert(p.holdsBack(Outcome.Idle, next(A -> ShardPosition.After("200", ShardPosition.WholeRecord))))
    assert(
      shards.calls == Seq(
        "GetShardIterator arn:orders shardId-000000000000 AfterSequence(200)",
        "GetRecords shardId-000000000000|5 1"
      )
    )
  }

  test(
    "kinesis.avoidEmptyBatches is off by default; the awslabs key sets it too, and both at once are refused"
  ) {
    val base = Map("kinesis.streamName" -> "orders", "kinesis.region" -> "us-east-1")
    def avoid(options: (String, String)*) = SourceConfig.parse(base ++ options, () => None).avoidEmptyBatches
    assert(!avoid())
    assert(avoid("kinesis.avoidEmptyBatches" -> "true"))
    assert(avoid("kinesis.internal.avoidEmptyBatches" -> "true"))
    assert(!avoid("kinesis.internal.avoidEmptyBatches" -> "false"))
    val both = intercept[Exception](
      avoid("kinesis.avoidEmptyBatches" -> "true", "kinesis.internal.avoidEmptyBatches" -> "false")
    )
    assert(both.getMessage.contains("kinesis.internal.avoidEmptyBatches (its awslabs name) are both set"))
  }

  test("an interval of 0 probes at most every 100 ms") {
    val shards = new Shards
    var now = 0L
    val p = probe(shards, intervalMs = 0L)(now)
    assert(p.holdsBack(Outcome.Idle, idle))
    val calls = shards.calls.size
    now = 99L
    assert(p.holdsBack(Outcome.Idle, idle) && shards.calls.size == calls)
    now = 100L
    assert(p.holdsBack(Outcome.Idle, idle) && shards.calls.size == calls + 2)
  }
}
