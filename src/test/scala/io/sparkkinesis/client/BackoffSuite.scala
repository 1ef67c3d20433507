package io.sparkkinesis.client

import org.scalatest.funsuite.AnyFunSuite

class BackoffSuite extends AnyFunSuite {

  test(
    "the wait doubles from the base up to the cap, and is drawn between half its ceiling and the ceiling"
  ) {
    val b = Backoff(400L, 10000L)
    assert((1 to 7).map(b.ceilingMs) == Seq(400L, 800L, 1600L, 3200L, 6400L, 10000L, 10000L))
    assert(b.ceilingMs(1000) == 10000L, "no overflow after many failures")
    (1 to 2000).foreach { i =>
      val n = 1 + i % 8
      val d = b.delayMs(n)
      assert(d >= b.ceilingMs(n) / 2 && d <= b.ceilingMs(n), s"$d after $n failures")
    }
    assert((1 to 2000).map(_ => b.delayMs(3)).distinct.size > 1, "jittered")
  }
}
