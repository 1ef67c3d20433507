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
      assert(OffsetJson.readRecordedEnd(OffsetJson.writeEnd(recorded)) == recorded)
    }
    val plain = RecordedEnd(end, ReadStats(1, 0, 1, 0), None)
    assert(OffsetJson.readRecordedEnd(OffsetJson.writeEnd(plain)) == plain)
  }

  test("a version-1 end without the optional fields reads as empty statistics and no run bound") {
    val recorded = OffsetJson.readRecordedEnd(resource("v1-shard-end.json"))
    assert(recorded.stats == ReadStats())
    assert(recorded.run.isEmpty)
  }

  test("the stored version-1 end with statistics and a run bound keeps parsing to the same values") {
    val recorded = OffsetJson.readRecordedEnd(resource("v1-shard-end-with-stats-and-run-bound.json"))
    assert(recorded.end == OffsetJson.readEnd(resource("v1-shard-end.json")))
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

  test("an unknown run bound type fails and names it") {
    val json = OffsetJson.writeEnd(RecordedEnd(end, ReadStats(), Some(RunOutcome(RunBound.Unbounded, false))))
    val error = intercept[IllegalArgumentException] {
      OffsetJson.readRecordedEnd(json.replace("UNBOUNDED", "SOMEWHERE"))
    }
    assert(error.getMessage.contains("SOMEWHERE"))
  }
}
