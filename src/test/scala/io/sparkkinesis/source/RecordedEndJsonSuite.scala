package io.sparkkinesis.source

import scala.io.Source

import io.sparkkinesis.reader.{ReadStats, RunBound, RunOutcome, ShardEnd, ShardPosition}
import org.scalatest.funsuite.AnyFunSuite

class RecordedEndJsonSuite extends AnyFunSuite {

  private def resource(name: String): String = {
    val source = Source.fromInputStream(getClass.getResourceAsStream(s"/offsets/$name"), "UTF-8")
    try source.mkString
    finally source.close()
  }

  private val end =
    ShardEnd(
      ShardPosition.After("123", -1),
      finished = false,
      Nil,
      7L,
      Some(42L),
      reachedTip = false,
      lost = false
    )

  test("statistics and every kind of run bound round-trip") {
    val bounds = Seq(RunBound.Unbounded, RunBound.Before("4567"), RunBound.Pending("AAAA/iterator+=="))
    for (bound <- bounds; reached <- Seq(true, false)) {
      val recorded = RecordedEnd(end, ReadStats(10, 1, 3, 1), Some(RunOutcome(bound, reached)))
      assert(RecordedEndJson.readRecordedEnd(RecordedEndJson.writeEnd(recorded)) == recorded)
    }
    val plain = RecordedEnd(end, ReadStats(1, 0, 1, 0), None)
    assert(RecordedEndJson.readRecordedEnd(RecordedEndJson.writeEnd(plain)) == plain)
  }

  test("a version-1 end without the optional fields reads as empty statistics and no run bound") {
    val recorded = RecordedEndJson.readRecordedEnd(resource("v1-shard-end.json"))
    assert(recorded.stats == ReadStats())
    assert(recorded.run.isEmpty)
  }

  test("the stored version-1 end with statistics and a run bound keeps parsing to the same values") {
    val recorded = RecordedEndJson.readRecordedEnd(resource("v1-shard-end-with-stats-and-run-bound.json"))
    assert(recorded.end == RecordedEndJson.readEnd(resource("v1-shard-end.json")))
    assert(recorded.stats == ReadStats(56789L, 2L, 17L, 1L))
    assert(
      recorded.run.contains(
        RunOutcome(
          RunBound.Before("49590338271490256608559692540925702759324208523137516000"),
          reached = true
        )
      )
    )
  }

  test(
    "entries are written byte for byte as the stored fixtures: version 1 for a shard, 2 for a grouped task"
  ) {
    val compact = (json: String) => new com.fasterxml.jackson.databind.ObjectMapper().readTree(json).toString
    val task = resource("v2-task-ends.json").trim
    assert(RecordedEndJson.writeTaskEnds(RecordedEndJson.readTaskEnds(task)) == task)
    assert(task.startsWith("{\"version\":2,"))
    // The stored end predates the count of SubscribeToShard calls, which is written since (0 here).
    val shard = compact(resource("v1-shard-end-with-stats-and-run-bound.json"))
      .replace("\"getShardIteratorCalls\":1", "\"getShardIteratorCalls\":1,\"subscribeToShardCalls\":0")
    assert(RecordedEndJson.writeEnd(RecordedEndJson.readRecordedEnd(shard)) == shard)
    assert(shard.startsWith("{\"version\":1,"))
  }

  test("an unknown run bound type fails and names it") {
    val json =
      RecordedEndJson.writeEnd(RecordedEnd(end, ReadStats(), Some(RunOutcome(RunBound.Unbounded, false))))
    val error = intercept[IllegalArgumentException] {
      RecordedEndJson.readRecordedEnd(json.replace("UNBOUNDED", "SOMEWHERE"))
    }
    assert(error.getMessage.contains("SOMEWHERE"))
  }
}
