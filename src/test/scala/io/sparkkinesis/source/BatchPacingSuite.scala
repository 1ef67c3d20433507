package io.sparkkinesis.source

import io.sparkkinesis.reader.{ShardEnd, ShardPosition}
import io.sparkkinesis.source.BatchPacing.{Outcome, Settings, Streak}
import org.scalatest.funsuite.AnyFunSuite

class BatchPacingSuite extends AnyFunSuite {

  private val Polling =
    Settings(spacesFoundBatches = true, fetchIntervalMs = 200L, idleProbeIntervalMs = 1000L)

  private def end(records: Long, atTip: Boolean) =
    ShardEnd(ShardPosition.After("1", ShardPosition.WholeRecord), false, Nil, records, Some(0L), atTip, false)

  /** The waits after `outcomes`, one batch each, from batch 0 on. */
  private def waits(settings: Settings, outcomes: Outcome*): Seq[Long] =
    outcomes.zipWithIndex
      .scanLeft((BatchPacing.NoBatch, 0L)) { case ((streak, _), (outcome, id)) =>
        val next = streak.after(id.toLong, outcome)
        (next, BatchPacing.waitMs(settings, outcome, next.idleInARow))
      }
      .drop(1)
      .map(_._2)

  test("a batch's outcome: behind when any shard stopped before its tip, else found or idle") {
    assert(BatchPacing.outcome(Seq(end(5, atTip = true), end(0, atTip = false))) == Outcome.Behind)
    assert(BatchPacing.outcome(Seq(end(0, atTip = true), end(3, atTip = true))) == Outcome.Found)
    assert(BatchPacing.outcome(Seq(end(0, atTip = true), end(0, atTip = true))) == Outcome.Idle)
  }

  test("polling: no idle wait after a batch that found records, only the shard's fetch interval") {
    assert(waits(Polling, Outcome.Behind, Outcome.Found, Outcome.Found) == Seq(0L, 200L, 200L))
    // The old rule waited idleProbeIntervalMs after every batch that ended at the tips, records or not.
    assert(BatchPacing.waitMs(Polling, Outcome.Found, 0) < Polling.idleProbeIntervalMs)
  }

  test("polling: the wait doubles with each idle batch in a row, up to idleProbeIntervalMs") {
    val idle = Seq.fill(6)(Outcome.Idle)
    assert(waits(Polling, Outcome.Found +: idle: _*) == Seq(200L, 400L, 800L, 1000L, 1000L, 1000L, 1000L))
    // A batch that finds records ends the streak; the next idle run starts short again.
    val resumed = waits(Polling, Outcome.Idle, Outcome.Idle, Outcome.Idle, Outcome.Found, Outcome.Idle)
    assert(resumed == Seq(400L, 800L, 1000L, 200L, 400L))
    assert(
      waits(Polling, Outcome.Idle, Outcome.Idle, Outcome.Behind, Outcome.Idle) == Seq(400L, 800L, 0L, 400L)
    )
  }

  test("an idle stream settles at one batch (one GetRecords per shard) per idleProbeIntervalMs") {
    for (interval <- Seq(300L, 1000L, 5000L, 60000L)) {
      val settings = Polling.copy(idleProbeIntervalMs = interval)
      val w = waits(settings, Seq.fill(40)(Outcome.Idle): _*)
      assert(w.forall(_ <= interval))
      assert(w.drop(20).forall(_ == interval), s"interval $interval: $w")
      // However the wait grows, the batches before it settles are few: log2(interval / step) + 1.
      assert(w.count(_ < interval) <= 1 + (math.log(interval / 200.0) / math.log(2)).ceil.toInt)
    }
  }

  test("the doubling starts from fetchIntervalMs, and from 100 ms when that is shorter") {
    val slow = Polling.copy(fetchIntervalMs = 300L, idleProbeIntervalMs = 10000L)
    assert(
      waits(slow, Outcome.Found, Outcome.Idle, Outcome.Idle, Outcome.Idle) == Seq(300L, 600L, 1200L, 2400L)
    )
    val fast = Polling.copy(fetchIntervalMs = 0L)
    assert(waits(fast, Outcome.Found, Outcome.Idle, Outcome.Idle, Outcome.Idle) == Seq(0L, 200L, 400L, 800L))
  }

  test("idleProbeIntervalMs caps every wait; 0 never waits") {
    val capped = Polling.copy(idleProbeIntervalMs = 150L)
    assert(waits(capped, Outcome.Found, Outcome.Idle, Outcome.Idle) == Seq(150L, 150L, 150L))
    val never = Polling.copy(idleProbeIntervalMs = 0L)
    assert(waits(never, Outcome.Found, Outcome.Idle, Outcome.Idle, Outcome.Behind).forall(_ == 0L))
  }

  test("a long idle run does not overflow") {
    val huge = Polling.copy(fetchIntervalMs = Long.MaxValue / 4, idleProbeIntervalMs = Long.MaxValue)
    assert(BatchPacing.waitMs(huge, Outcome.Idle, 1000) == Long.MaxValue)
    assert(BatchPacing.waitMs(Polling, Outcome.Idle, Int.MaxValue) == 1000L)
  }

  test("enhanced fan-out: no wait after records or behind the tip; idle batches back off as polling's do") {
    val efo = Polling.copy(spacesFoundBatches = false)
    val outcomes = Seq(Outcome.Found, Outcome.Idle, Outcome.Idle, Outcome.Idle, Outcome.Found, Outcome.Behind)
    assert(waits(efo, outcomes: _*) == Seq(0L, 400L, 800L, 1000L, 0L, 0L))
    // An idle fan-out query costs no more batches than an idle polling query: the same waits once idle.
    val idle = Seq.fill(10)(Outcome.Idle)
    assert(waits(efo, idle: _*) == waits(Polling, idle: _*))
  }

  test("the streak counts a batch once, however often the driver plans from it") {
    val s1 = BatchPacing.NoBatch.after(0L, Outcome.Idle)
    assert(s1 == Streak(0L, 1))
    assert(s1.after(0L, Outcome.Idle) == s1)
    assert(s1.after(1L, Outcome.Idle) == Streak(1L, 2))
    // A gap in batch ids (a restart from an older checkpoint's batch) starts the count afresh.
    assert(s1.after(5L, Outcome.Idle) == Streak(5L, 1))
  }
}
