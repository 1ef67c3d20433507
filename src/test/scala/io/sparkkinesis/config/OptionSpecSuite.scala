package io.sparkkinesis.config

import io.sparkkinesis.config.OptionType.{Millis, Seconds}
import org.scalatest.funsuite.AnyFunSuite

class OptionSpecSuite extends AnyFunSuite {

  test("a duration reads a bare number in its bare unit, and every suffix in its own unit") {
    assert(Millis.parse("750") == Right(750L))
    assert(Seconds.parse("750") == Right(750000L))
    for (d <- Seq(Millis, Seconds)) {
      assert(d.parse("500ms") == Right(500L))
      assert(d.parse("30s") == Right(30000L))
      assert(d.parse(" 3 SEC ") == Right(3000L))
      assert(d.parse("2m") == Right(120000L))
      assert(d.parse("2min") == Right(120000L))
      assert(d.parse("1h") == Right(3600000L))
      assert(d.parse("1d") == Right(86400000L))
      assert(d.parse("0") == Right(0L))
      assert(d.parse("1_000ms") == Right(1000L))
    }
  }

  test("a negative, overflowing or malformed duration is refused, saying what is allowed") {
    val allowedMs =
      "a duration such as 500ms, 30s, 2m, 1h or 1d, or a bare number of milliseconds, below 2^63 ms"
    val allowedS = allowedMs.replace("milliseconds", "seconds")
    for (bad <- Seq("-1", "-1s", "1x", "1.5s", "", "s", "1 2s", "9223372036854775808"))
      assert(Millis.parse(bad) == Left(allowedMs), bad)
    assert(Millis.parse(Long.MaxValue.toString) == Right(Long.MaxValue))
    assert(Seconds.parse((Long.MaxValue / 1000).toString) == Right(Long.MaxValue / 1000 * 1000))
    assert(Seconds.parse((Long.MaxValue / 1000 + 1).toString) == Left(allowedS))
    assert(Millis.parse("106751991167d") == Right(106751991167L * 86400000L))
    assert(Millis.parse("106751991168d") == Left(allowedMs))
  }

  test("a duration renders in the largest unit that counts it whole") {
    assert(
      Seq(0L, 1500L, 30000L, 60000L, 5400000L, 7200000L, 86400000L).map(Millis.render) ==
        Seq("0ms", "1500ms", "30s", "1m", "90m", "2h", "1d")
    )
  }

  test("bounds of a duration are milliseconds, shown as durations") {
    import scala.concurrent.duration.DurationInt
    val bounds = OptionSpec.between(1.second, 1.hour)
    assert(bounds == OptionSpec.Bounds(1000L, Some(3600000L), duration = true))
    assert(
      bounds(999L).contains("a value from 1s to 1h") && bounds(1000L).isEmpty && bounds(3600001L).nonEmpty
    )
    assert(OptionSpec.atLeast(100.millis)(99L).contains("a value of at least 100ms"))
    assert(OptionSpec.atLeast(5)(4L).contains("a value of at least 5"))
  }
}
