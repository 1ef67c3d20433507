package io.sparkkinesis.source

import java.util.concurrent.{CountDownLatch, TimeUnit}

import io.sparkkinesis.client._
import io.sparkkinesis.config.SourceConfig
import io.sparkkinesis.reader.ShardPosition
import io.sparkkinesis.source.BatchPacing.Outcome
import org.scalatest.funsuite.AnyFunSuite
import software.amazon.awssdk.awscore.exception.AwsErrorDetails
import software.amazon.awssdk.services.kinesis.model.KinesisException

class IdleProbeSuite extends AnyFunSuite {
  private val Full = HashKeyRange(0, BigInt(2).pow(128) - 1)
  private val A = ShardKey("orders", "shardId-000000000000")
  private val B = ShardKey("orders", "shardId-000000000001")

  /**
   * A shard records client whose answers the test sets per shard; it logs every request. Thread-safe, since the
   * probe asks the shards in parallel: iterators are numbered per shard, so their names do not depend on the order.
   * With `together` above 0, each GetRecords waits (up to 10 s, then fails) until that many are in flight.
   */
  private final class Shards(together: Int = 0) extends ShardRecordsClient {
    private val calls = scala.collection.mutable.Buffer.empty[String]
    // What GetRecords answers on the shard: (records, open, millisBehindLatest), or a failure.
    val answers = scala.collection.concurrent.TrieMap.empty[String, Either[Exception, (Int, Boolean, Long)]]
    private val issued = scala.collection.mutable.Map.empty[String, Int].withDefaultValue(0)
    private val inFlight = new CountDownLatch(together)

    private def issue(shard: String): String = { issued(shard) += 1; s"$shard|${issued(shard)}" }

    /** The requests since the last call, sorted: the order of the shards' requests is not fixed. */
    def drain(): Seq[String] = synchronized { val out = calls.sorted.toList; calls.clear(); out }

    def getShardIterator(streamName: String, shardId: String, start: IteratorStart): String = synchronized {
      calls += s"GetShardIterator $streamName $shardId $start"
      issue(shardId)
    }

    def getRecords(iterator: String, limit: Int): RecordsResponse = {
      inFlight.countDown()
      if (!inFlight.await(10, TimeUnit.SECONDS)) throw new IllegalStateException("alone for 10 s")
      synchronized {
        val shard = iterator.takeWhile(_ != '|')
        calls += s"GetRecords $iterator $limit"
        answers.getOrElse(shard, Right((0, true, 0L))) match {
          case Left(e) => throw e
          case Right((n, open, behind)) =>
            val records = (1 to n).map(i => KinesisRecord(Array[Byte](1), "k", s"9$i", 0L))
            RecordsResponse(records, if (open) Some(issue(shard)) else None, Some(behind), Nil)
        }
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
    assert(shards.drain().isEmpty)
  }

  test("an idle stream: one GetRecords (Limit 1) per shard per interval, on iterators kept between probes") {
    val shards = new Shards
    var now = 0L
    val p = probe(shards)(now)
    assert(p.holdsBack(Outcome.Idle, idle))
    // From the recorded end, or from the shard's start position when the shard has no record read yet.
    assert(
      shards.drain() == Seq(
        "GetRecords shardId-000000000000|1 1",
        "GetRecords shardId-000000000001|1 1",
        "GetShardIterator arn:orders shardId-000000000000 AfterSequence(100)",
        "GetShardIterator arn:orders shardId-000000000001 TrimHorizon"
      )
    )
    now = 999L
    assert(p.holdsBack(Outcome.Idle, idle) && shards.drain().isEmpty, "no probe before the interval")
    now = 1000L
    assert(p.holdsBack(Outcome.Idle, idle))
    assert(
      shards.drain() == Seq("GetRecords shardId-000000000000|2 1", "GetRecords shardId-000000000001|2 1")
    )
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
    shards.drain()
    val after = next(A -> ended, B -> ShardPosition.After("91", ShardPosition.WholeRecord))
    now = 1001L
    assert(p.holdsBack(Outcome.Idle, after))
    val calls = shards.drain()
    assert(calls.count(_.startsWith("GetShardIterator")) == 2)
    assert(calls.contains("GetShardIterator arn:orders shardId-000000000001 AfterSequence(91)"))
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

  test(
    "a probe denied for want of permission turns the probe off: paced idle batches, and no further probe"
  ) {
    // An enhanced fan-out reader's role need not grant GetShardIterator and GetRecords.
    val refusal = KinesisException
      .builder()
      .statusCode(400)
      .awsErrorDetails(
        AwsErrorDetails.builder().errorCode("AccessDeniedException").errorMessage("no").build()
      )
      .build()
    val shards = new Shards
    shards.answers(B.shardId) = Left(refusal)
    var now = 0L
    val p = probe(shards)(now)
    assert(!p.holdsBack(Outcome.Idle, idle), "the denied probe releases the batch")
    shards.drain()
    for (later <- Seq(1000L, 5000L, 60000L)) {
      now = later
      assert(!p.holdsBack(Outcome.Idle, idle))
    }
    assert(shards.drain().isEmpty, "no probe after the refusal")
    // Another failure (a throttle) only releases that batch: the next idle one is probed again.
    val throttled = new Shards
    throttled.answers(B.shardId) = Left(new RuntimeException("throttled"))
    now = 0L
    val q = probe(throttled)(now)
    assert(!q.holdsBack(Outcome.Idle, idle))
    throttled.answers.clear()
    throttled.drain()
    now = 1000L
    assert(q.holdsBack(Outcome.Idle, idle) && throttled.drain().nonEmpty)
  }

  test("a shard whose position moved is probed from its new position") {
    val shards = new Shards
    var now = 0L
    val p = probe(shards)(now)
    assert(p.holdsBack(Outcome.Idle, idle))
    shards.drain()
    now = 2000L
    assert(p.holdsBack(Outcome.Idle, next(A -> ShardPosition.After("200", ShardPosition.WholeRecord))))
    assert(
      shards.drain() == Seq(
        "GetRecords shardId-000000000000|3 1",
        "GetShardIterator arn:orders shardId-000000000000 AfterSequence(200)"
      )
    )
  }

  test(
    "kinesis.avoidEmptyBatches is on by default, as in the awslabs connector, whose key sets it too; both at once " +
      "are refused"
  ) {
    val base = Map("kinesis.streamName" -> "orders", "kinesis.region" -> "us-east-1")
    def avoid(options: (String, String)*) = SourceConfig.parse(base ++ options, () => None).avoidEmptyBatches
    assert(avoid())
    assert(avoid("kinesis.avoidEmptyBatches" -> "true"))
    assert(!avoid("kinesis.avoidEmptyBatches" -> "false"))
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
    assert(p.holdsBack(Outcome.Idle, idle) && shards.drain().size == 4)
    now = 99L
    assert(p.holdsBack(Outcome.Idle, idle) && shards.drain().isEmpty)
    now = 100L
    assert(p.holdsBack(Outcome.Idle, idle) && shards.drain().size == 2)
  }

  test("the shards are probed in parallel, up to DriverThreads.Max at once, and all of them") {
    // Each GetRecords waits until DriverThreads.Max are in flight: probed one by one, the first waits alone and fails.
    val keys = (0 until DriverThreads.Max + 4).map(i => ShardKey("orders", f"shardId-$i%012d"))
    val shards = new Shards(together = DriverThreads.Max)
    var now = 0L
    val p = probe(shards)(now)
    val offset = next(keys.map(_ -> ended): _*)
    assert(p.holdsBack(Outcome.Idle, offset), "a probe failed: the shards were not probed in parallel")
    assert(shards.drain().count(_.startsWith("GetRecords")) == keys.size)
    now = 1000L
    assert(p.holdsBack(Outcome.Idle, offset))
    assert(
      shards.drain() == keys.map(k => s"GetRecords ${k.shardId}|2 1").sorted,
      "each shard's kept iterator"
    )
  }
}
